package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
)

type servicemapOptions struct {
	grpc, http   string
	file         string
	duration     time.Duration
	every        time.Duration
	sameBatch    bool
	mermaid, svg string
	names        bool
	topics       bool
}

func newServicemapCmd() *cobra.Command {
	o := servicemapOptions{grpc: "127.0.0.1:4317", http: "127.0.0.1:4318"}
	cmd := &cobra.Command{
		Use:   "servicemap",
		Short: "Draw the service map from OTLP spans, as SigNoz would or with a node per topic (text, Mermaid, SVG)",
		Long: `servicemap builds the service map the way SigNoz draws it: an edge A -> B for
every span of service B whose parent is a span of service A, with the number of
calls, of errors, and the p50/p99 latency of B's spans; and an edge A -> kafka
(or postgresql, ...) for every non-server span of A that names a messaging or
database system. --topics draws what SigNoz cannot: each Kafka topic a node of
its own between the services that write to it and those that read from it
(toy-elves -> toys -> packer -> packed -> sleigh), with the records on the edges.

It receives OTLP on loopback, over gRPC and HTTP (protobuf or JSON), until
--for has passed or it is interrupted, then prints the map:

  northpole servicemap --for 60s --svg map.svg &
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 northpole process packer ...

or reads an OTLP JSON file (one request per line, as the collector's file
exporter writes, or one document):

  northpole servicemap --file spans.json --mermaid map.mmd

By default a child is joined with its parent whenever both were received.
SigNoz joins them only within one batch as its collector inserts it;
--same-batch joins that way and counts the spans whose edge is lost: over
OTLP the requests are regrouped as the workshop collector's batch processor
groups them (10,000 spans or 10 s), and from a file each line is one batch.
How, and where it can differ from SigNoz: otel/README.md, "The service map".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServicemap(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.grpc, "grpc", o.grpc, "receive OTLP/gRPC on this address (empty: off)")
	f.StringVar(&o.http, "http", o.http, "receive OTLP/HTTP on this address, POST /v1/traces (empty: off)")
	f.StringVar(&o.file, "file", "", "read spans from this OTLP JSON file instead of listening")
	f.DurationVar(&o.duration, "for", 0, "stop listening after this long (default: until interrupted)")
	f.DurationVar(&o.every, "print-every", 0, "while listening, print the map this often (default: only at the end)")
	f.BoolVar(&o.sameBatch, "same-batch", false, "join a child with its parent only within one collector batch, as SigNoz does (OTLP: the batch processor's 10,000 spans or 10 s across requests; --file: one line)")
	f.StringVar(&o.mermaid, "mermaid", "", "write the map as a Mermaid flowchart to this file")
	f.StringVar(&o.svg, "svg", "", "write the map as SVG to this file")
	f.BoolVar(&o.names, "spans", false, "also print the span counts per service and span name")
	f.BoolVar(&o.topics, "topics", false, "draw each topic as a node between its producers and consumers, with the records on the edges, instead of SigNoz's one node per messaging system")
	return cmd
}

func runServicemap(ctx context.Context, o servicemapOptions, stdout, stderr io.Writer) error {
	if o.duration < 0 {
		return usageErr("--for must be >= 0 (0: until interrupted), got %v", o.duration)
	}
	if o.every < 0 {
		return usageErr("--print-every must be >= 0 (0: only at the end), got %v", o.every)
	}
	if o.file == "" {
		for _, l := range []struct{ flag, addr string }{{"--grpc", o.grpc}, {"--http", o.http}} {
			if l.addr == "" {
				continue
			}
			if err := validListen(l.flag, l.addr); err != nil {
				return err
			}
		}
	}
	opts := servicemap.Options{SameBatch: o.sameBatch}
	if o.file == "" {
		opts.Batch = servicemap.SigNozBatch
	}
	b := servicemap.NewBuilder(opts)
	if o.file != "" {
		if err := servicemap.ReadJSONFile(o.file, b); err != nil {
			return err
		}
	} else {
		rcv, err := servicemap.Receive(ctx, b, servicemap.ReceiveConfig{
			GRPC: o.grpc, HTTP: o.http, For: o.duration,
			Listening: func(rcv *servicemap.Receiver) {
				fmt.Fprintf(stderr, "servicemap: receiving OTLP on grpc=%q http=%q; stop with Ctrl-C", rcv.GRPCAddr(), rcv.HTTPAddr())
				if o.duration > 0 {
					fmt.Fprintf(stderr, " or after %v", o.duration)
				}
				fmt.Fprintln(stderr)
			},
			Every: o.every, Tick: func() { _ = graphOf(b, o.topics).WriteText(stdout) },
		}, slog.Default())
		if err != nil {
			return usageErr("%w", err)
		}
		batches, spans := rcv.Received()
		fmt.Fprintf(stderr, "servicemap: %d spans in %d requests\n", spans, batches)
	}
	g := graphOf(b, o.topics)
	if err := g.WriteText(stdout); err != nil {
		return err
	}
	if o.names {
		if err := g.WriteNames(stdout); err != nil {
			return err
		}
	}
	if err := g.WriteFiles(o.mermaid, o.svg); err != nil {
		return err
	}
	for _, path := range []string{o.mermaid, o.svg} {
		if path != "" {
			fmt.Fprintf(stdout, "wrote %s\n", path)
		}
	}
	return nil
}

// graphOf is b's map, with a node per topic when topics is set.
func graphOf(b *servicemap.Builder, topics bool) servicemap.Graph {
	if topics {
		return b.TopicGraph()
	}
	return b.Graph()
}
