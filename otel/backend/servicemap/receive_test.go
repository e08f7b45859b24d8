package servicemap

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// oneSpan is one OTLP/JSON request: a span of service toy-elves.
const oneSpan = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"toy-elves"}}]},` +
	`"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000000","spanId":"0000000000000001","name":"send toys","kind":4,` +
	`"startTimeUnixNano":"1000","endTimeUnixNano":"2000","attributes":[` +
	`{"key":"messaging.system","value":{"stringValue":"kafka"}},{"key":"messaging.destination.name","value":{"stringValue":"toys"}}]}]}]}]}`

// TestReceive: Receive says where it listens, takes what is posted to it,
// ticks while it runs, and returns once its context ends, closed, with its
// counts.
func TestReceive(t *testing.T) {
	b := NewBuilder(Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ticks atomic.Int32
	rcv, err := Receive(ctx, b, ReceiveConfig{
		HTTP: "127.0.0.1:0",
		Listening: func(r *Receiver) {
			resp, err := http.Post("http://"+r.HTTPAddr()+"/v1/traces", "application/json", strings.NewReader(oneSpan))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("POST /v1/traces: %s", resp.Status)
			}
		},
		Every: 10 * time.Millisecond,
		Tick: func() {
			if ticks.Add(1) == 2 {
				cancel()
			}
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if batches, spans := rcv.Received(); batches != 1 || spans != 1 || b.Graph().Spans != 1 {
		t.Errorf("received %d spans in %d requests, the map has %d; want 1 in 1", spans, batches, b.Graph().Spans)
	}
	if ticks.Load() < 2 {
		t.Errorf("%d ticks, want 2", ticks.Load())
	}
	if _, err := http.Post("http://"+rcv.HTTPAddr()+"/v1/traces", "application/json", strings.NewReader(oneSpan)); err == nil {
		t.Error("the receiver still answers after Receive returned")
	}
}

// TestReceiveFor: with For, Receive stops by itself; an address it cannot
// listen on is its error.
func TestReceiveFor(t *testing.T) {
	began := time.Now()
	if _, err := Receive(context.Background(), NewBuilder(Options{}), ReceiveConfig{HTTP: "127.0.0.1:0", For: 50 * time.Millisecond}, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %v to stop after 50ms", took)
	}
	if _, err := Receive(context.Background(), NewBuilder(Options{}), ReceiveConfig{HTTP: "nonsense"}, nil); err == nil {
		t.Error("listening on nonsense: no error")
	}
}

// TestWriteFiles: the Mermaid and SVG files are written where asked, and a
// path left empty is skipped.
func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	mmd, svg := filepath.Join(dir, "m.mmd"), filepath.Join(dir, "m.svg")
	g := demoGraph()
	if err := g.WriteFiles(mmd, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(mmd); err != nil || !strings.HasPrefix(string(b), "graph LR") {
		t.Errorf("%s: %v\n%s", mmd, err, b)
	}
	if _, err := os.Stat(svg); !os.IsNotExist(err) {
		t.Errorf("an empty SVG path wrote %s: %v", svg, err)
	}
	if err := g.WriteFiles("", svg); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("%s: %v", svg, err)
	}
	if err := g.WriteFiles(filepath.Join(dir, "no", "such", "dir.mmd"), ""); err == nil {
		t.Error("writing under a missing directory: no error")
	}
}
