package servicemap

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/northpole-workshop/northpole/otel/backend/metricsink"
	"github.com/northpole-workshop/northpole/otel/backend/otlpserve"
)

// Receiver accepts OTLP traces over gRPC and HTTP (protobuf or JSON) and
// feeds them to a Builder, one batch per request. It is meant for loopback:
// point OTEL_EXPORTER_OTLP_ENDPOINT at it. It takes OTLP metrics too (into
// Metrics), so that a process exporting both is not refused half of them.
type Receiver struct {
	*otlpserve.Servers
	b        *Builder
	batches  atomic.Int64
	received atomic.Int64
	log      *slog.Logger
	metrics  *metricsink.Store

	mu        sync.Mutex
	resources map[string]map[string]string // distinct resources, by their printed form
}

// Listen starts a receiver; an empty address leaves that protocol off.
// ":0"-style addresses pick a free port (see GRPCAddr, HTTPAddr). A nil log
// discards the receiver's log.
func Listen(b *Builder, grpcAddr, httpAddr string, log *slog.Logger) (*Receiver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Receiver{b: b, log: log, resources: map[string]map[string]string{}, metrics: metricsink.NewStore()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.serveHTTP)
	mux.Handle("POST /v1/metrics", r.metrics)
	srv, err := otlpserve.Start("servicemap", grpcAddr, httpAddr, func(g *grpc.Server) {
		coltracepb.RegisterTraceServiceServer(g, traceServer{r: r})
		colmetricspb.RegisterMetricsServiceServer(g, r.metrics.GRPC())
	}, mux, log)
	if err != nil {
		return nil, err
	}
	r.Servers = srv
	return r, nil
}

// Metrics are the OTLP metrics received so far.
func (r *Receiver) Metrics() *metricsink.Store { return r.metrics }

// Received is the number of export requests and spans taken so far.
func (r *Receiver) Received() (batches, spans int64) { return r.batches.Load(), r.received.Load() }

func (r *Receiver) take(spans []Span) {
	r.b.Add(spans)
	r.batches.Add(1)
	r.received.Add(int64(len(spans)))
}

type traceServer struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceServer) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.r.noteResources(req)
	s.r.take(FromProto(req.GetResourceSpans()))
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	data, ok := otlpserve.ReadBody(w, req)
	if !ok {
		return
	}
	ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	switch ct {
	case "application/x-protobuf":
		var m coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &m); err != nil {
			http.Error(w, "bad protobuf: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.noteResources(&m)
		r.take(FromProto(m.GetResourceSpans()))
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	case "application/json":
		spans, err := FromJSON(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.take(spans)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	default:
		http.Error(w, "content type must be application/x-protobuf or application/json", http.StatusUnsupportedMediaType)
	}
}

// noteResources remembers the string attributes of each distinct resource
// that sent spans (protobuf requests only).
func (r *Receiver) noteResources(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		attrs := map[string]string{}
		for _, a := range rs.GetResource().GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().GetStringValue()
		}
		k := fmt.Sprint(attrs) // fmt prints maps with sorted keys
		if _, ok := r.resources[k]; !ok {
			r.resources[k] = attrs
		}
	}
}

// Resources are the distinct resources (string attributes) that sent spans
// over protobuf (gRPC or HTTP).
func (r *Receiver) Resources() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]map[string]string, 0, len(r.resources))
	for _, a := range r.resources {
		out = append(out, a)
	}
	return out
}

// ReceiveConfig says where Receive listens, for how long, and what it does
// meanwhile.
type ReceiveConfig struct {
	// GRPC and HTTP are the listen addresses; an empty one leaves that
	// protocol off.
	GRPC, HTTP string
	// For stops receiving after this long; 0: when the context ends.
	For time.Duration
	// Listening, when set, is called once the receiver listens (its
	// addresses: GRPCAddr, HTTPAddr).
	Listening func(*Receiver)
	// Tick, when set, is called every Every while the receiver runs (a
	// command prints the map so far).
	Every time.Duration
	Tick  func()
}

// Receive listens for OTLP (Listen) and feeds b until ctx ends or cfg.For
// has passed, calling cfg.Tick every cfg.Every, then closes the receiver
// and returns it, for its counts (Received). Its only errors are Listen's.
func Receive(ctx context.Context, b *Builder, cfg ReceiveConfig, log *slog.Logger) (*Receiver, error) {
	rcv, err := Listen(b, cfg.GRPC, cfg.HTTP, log)
	if err != nil {
		return nil, err
	}
	if cfg.Listening != nil {
		cfg.Listening(rcv)
	}
	if cfg.For > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.For)
		defer cancel()
	}
	var tick <-chan time.Time
	if cfg.Every > 0 && cfg.Tick != nil {
		t := time.NewTicker(cfg.Every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			rcv.Close()
			return rcv, nil
		case <-tick:
			cfg.Tick()
		}
	}
}
