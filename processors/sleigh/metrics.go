package sleigh

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// MeterName is the instrumentation scope of the sleigh's metrics.
const MeterName = "github.com/northpole-workshop/northpole/processors/sleigh"

// MetricPairs counts the packed records the sleigh applied, by outcome
// (OutcomeKey) and size class.
const MetricPairs = "northpole.sleigh.pairs"

// OutcomeKey says what became of a packed record: loaded (a new pair on
// the sleigh), repeat (a key already there, the same pair), conflict (a
// key already there with another pair: a packer bug) or malformed (not a
// pair; no size then).
const OutcomeKey = attribute.Key("northpole.outcome")

// Outcomes, the values of OutcomeKey.
const (
	OutcomeLoaded    = "loaded"
	OutcomeRepeat    = "repeat"
	OutcomeConflict  = "conflict"
	OutcomeMalformed = "malformed"
)

// sizeKey is the pair's size class, as on the sleigh's spans.
const sizeKey = attribute.Key("northpole.size")

// metrics are the sleigh's instruments, no-ops without a meter provider.
// The attribute sets a record can have are made once: counting a record
// allocates nothing.
type metrics struct {
	consumed metric.Int64Counter
	consSets *kafkatrace.PartitionSets
	pairs    metric.Int64Counter
	pairOpts map[[2]string]metric.AddOption // outcome, size
	requests httpconv.ServerRequestDuration
}

func newMetrics(mp metric.MeterProvider, brokers []string, topic, group string) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(MeterName)
	consumed, err := messagingconv.NewClientConsumedMessages(m)
	if err != nil {
		return nil, err
	}
	pairs, err := m.Int64Counter(MetricPairs, metric.WithUnit("{record}"),
		metric.WithDescription("Packed records the sleigh applied, by outcome and size class."))
	if err != nil {
		return nil, err
	}
	requests, err := httpconv.NewServerRequestDuration(m)
	if err != nil {
		return nil, err
	}
	out := &metrics{consumed: consumed.Inst(), pairs: pairs, requests: requests, pairOpts: map[[2]string]metric.AddOption{},
		consSets: kafkatrace.NewPartitionSets(append(kafkatrace.ServerAttrs(brokers), semconv.MessagingSystemKafka,
			semconv.MessagingOperationName(kafkatrace.OpProcess), semconv.MessagingDestinationName(topic),
			semconv.MessagingConsumerGroupName(group))...)}
	out.pairOpts[[2]string{OutcomeMalformed, ""}] = metric.WithAttributeSet(attribute.NewSet(OutcomeKey.String(OutcomeMalformed)))
	for _, o := range []string{OutcomeLoaded, OutcomeRepeat, OutcomeConflict} {
		for _, s := range record.Sizes {
			out.pairOpts[[2]string{o, s}] = metric.WithAttributeSet(attribute.NewSet(OutcomeKey.String(o), sizeKey.String(s)))
		}
	}
	return out, nil
}

// record counts one packed record of partition delivered to the sleigh and
// its outcome.
func (m *metrics) record(partition int32, outcome, size string) {
	ctx := context.Background()
	m.consumed.Add(ctx, 1, m.consSets.Of(partition))
	if opt, ok := m.pairOpts[[2]string{outcome, size}]; ok {
		m.pairs.Add(ctx, 1, opt)
	}
}

// measure records each request h answers in http.server.request.duration,
// with its status (and error.type for a 5xx, as the HTTP conventions ask)
// and the route the mux matched: the requests, the 503s and the latency of
// the manifest's pages. A request no route matched (404, 405) is counted
// too, without http.route, as the conventions say.
func (m *metrics) measure(h http.Handler) http.Handler {
	if !m.requests.Enabled(context.Background()) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		attrs := []attribute.KeyValue{semconv.HTTPResponseStatusCode(sw.status)}
		// The mux sets the pattern it matched ("GET /manifest") on r.
		if _, route, ok := strings.Cut(r.Pattern, " "); ok {
			attrs = append(attrs, semconv.HTTPRoute(route))
		}
		if sw.status >= 500 {
			attrs = append(attrs, semconv.ErrorTypeKey.String(strconv.Itoa(sw.status)))
		}
		m.requests.Record(r.Context(), time.Since(start).Seconds(), httpconv.RequestMethodAttr(r.Method), "http", attrs...)
	})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true // net/http answers 200 now, whatever comes later
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
