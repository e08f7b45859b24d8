package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otlpSpan is one OTLP/JSON line: a span of service svc in trace 01..., with
// id and parent the last byte of its span ids (parent 0: a root).
func otlpSpan(svc, name string, kind, id, parent int, topic string) string {
	parentID := ""
	if parent != 0 {
		parentID = fmt.Sprintf(`"parentSpanId":"00000000000000%02x",`, parent)
	}
	return fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":%q}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000000","spanId":"00000000000000%02x",%s"name":%q,"kind":%d,`+
		`"startTimeUnixNano":"1000","endTimeUnixNano":"2000","attributes":[`+
		`{"key":"messaging.system","value":{"stringValue":"kafka"}},{"key":"messaging.destination.name","value":{"stringValue":%q}}]}]}]}]}`,
		svc, id, parentID, name, kind, topic)
}

// TestServicemapTopics runs `northpole servicemap --file` on one record's
// trip through the workshop, with and without --topics: SigNoz's map by
// default, the topics between the services with --topics.
func TestServicemapTopics(t *testing.T) {
	dir := t.TempDir()
	spans := filepath.Join(dir, "spans.json")
	lines := []string{
		otlpSpan("toy-elves", "send toys", 4, 1, 0, "toys"),
		otlpSpan("packer", "process toys", 5, 2, 1, "toys"),
		otlpSpan("packer", "send packed", 4, 3, 2, "packed"),
		otlpSpan("sleigh", "process packed", 5, 4, 3, "packed"),
	}
	if err := os.WriteFile(spans, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		flags         []string
		text, mermaid []string // lines each must hold
	}{
		{
			name:    "SigNoz's map",
			text:    []string{"service map: 3 services, 1 system, 5 edges from 4 spans", "toy-elves  ->  packer  service", "packer     ->  kafka   messaging  2"},
			mermaid: []string{`n3[("kafka")]`, `n2 -->|"1 call, p50 1µs, p99 1µs"| n0`},
		},
		{
			name:  "with topics",
			flags: []string{"--topics"},
			text: []string{"service map: 3 services, 2 topics, 0 systems, 4 edges from 4 spans",
				"toy-elves     ->  kafka/toys    produce  1", "kafka/packed  ->  sleigh        consume  1"},
			mermaid: []string{`n4(["toys"])`, `n2 -->|"1 record, p50 1µs, p99 1µs"| n4`, `n4 -->|"1 record, p50 1µs, p99 1µs"| n0`, `n0 -->|"1 record, p50 1µs, p99 1µs"| n3`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			mmd := filepath.Join(dir, c.name+".mmd")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, code := runCLI(t, ctx, append([]string{"servicemap", "--file", spans, "--mermaid", mmd}, c.flags...)...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			for _, want := range c.text {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			m, err := os.ReadFile(mmd)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range c.mermaid {
				if !strings.Contains(string(m), want) {
					t.Errorf("mermaid lacks %q:\n%s", want, m)
				}
			}
		})
	}
}
