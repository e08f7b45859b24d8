package report_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/app/report"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/producers"
)

// chromium returns the path of Debian's Chromium, or skips t (fails it when
// CI=true: CI installs it, and must not pass by skipping the browser).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: the page is not tested in a browser (apt-get install chromium)"
	if strings.EqualFold(os.Getenv("CI"), "true") {
		t.Fatal("CI=true and " + msg)
	}
	t.Skip(msg)
	return ""
}

// loaded is a page as headless Chromium loaded it: the DOM after loading,
// and every message the page wrote to its console (errors, and blocked
// loads, which the page's Content-Security-Policy turns into console
// messages).
type loaded struct {
	dom     string
	console []string
}

func load(t *testing.T, browser, path string) loaded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--disable-gpu", "--no-sandbox",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var l loaded
	l.dom = stdout.String()
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			l.console = append(l.console, line)
		}
	}
	if !strings.Contains(l.dom, "</html>") {
		t.Fatalf("chromium dumped no page:\n%s\n%s", l.dom, stderr.String())
	}
	return l
}

// cell is the number the counts table shows for a size class and a set.
func cell(t *testing.T, dom, size, set string) string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-size="` + regexp.QuoteMeta(size) + `"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
	if row == nil {
		t.Fatalf("the page has no row for size %q", size)
	}
	c := regexp.MustCompile(`<td class="n" data-set="` + set + `">([^<]*)</td>`).FindStringSubmatch(row[1])
	if c == nil {
		t.Fatalf("size %q has no %s cell", size, set)
	}
	return c[1]
}

// TestPageInBrowser runs a small demo with tracing into a service map and
// its own metric readers, writes its report.html, loads it in headless
// Chromium and checks that the page loads without a console message, and
// that the DOM shows the counts the demo's summary holds, the verdicts (the
// map's and the metrics' checks too) and the service map with topics, whose
// edge into the packed topic counts the pairs packed.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	browser := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := harness.DefaultConfig()
	c.Toys.Count, c.Boxes.Count = 300, 250
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Disorder, e.LateRate, e.DupRate, e.BadRate = 2*time.Second, 0.03, 0.03, 0.03
	}
	b := servicemap.NewBuilder(servicemap.Options{})
	var mu sync.Mutex
	var providers []*sdktrace.TracerProvider
	tracing := func(service string) trace.TracerProvider {
		mu.Lock()
		defer mu.Unlock()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(servicemap.Exporter{B: b}),
			sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))))
		providers = append(providers, tp)
		return tp
	}
	c.Tracing = tracing
	// The demo's own metric readers, nothing exported.
	dt, err := demo.NewTracing(ctx, false, nil, func(ctx context.Context, opts telemetry.Options) (*telemetry.Telemetry, func(), error) {
		opts.Getenv = func(string) string { return "" }
		tel, err := telemetry.New(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return tel, tel.Close, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dt.Close()
	c.Metrics = dt.Meters
	d, err := demo.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := d.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.FinishSleigh(ctx, len(r.Run.Goka.Packed)); err != nil {
		t.Fatal(err)
	}
	traces := dt.Finish(ctx)
	if traces.Metrics == nil {
		t.Fatal("the demo read no metrics")
	}
	if mc := r.CheckMetrics(*traces.Metrics); !mc.Equal() {
		t.Errorf("metrics check: %s: %s", mc, mc.Verdict())
	}
	for _, tp := range providers {
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The demo's report draws the map with topics.
	g := b.TopicGraph()
	packed, ok := g.Edge("packer", "kafka/packed")
	if !ok || packed.Calls != len(r.Run.Goka.Packed) {
		t.Fatalf("the map's packer -> packed edge %+v (%v), the run packed %d pairs", packed, ok, len(r.Run.Goka.Packed))
	}
	if edges := r.CheckMap(b.Graph()); !edges.Equal() {
		t.Errorf("map check: %v", edges)
	}
	dir := t.TempDir()
	if err := demo.WriteReport(dir, r, d.Where(), &g); err != nil {
		t.Fatal(err)
	}
	page := load(t, browser, filepath.Join(dir, report.FileName))
	if len(page.console) > 0 {
		t.Errorf("the page wrote to the console:\n%s", strings.Join(page.console, "\n"))
	}
	s := r.Summary
	for _, size := range record.Sizes {
		want := s.BySize[size]
		for set, n := range map[string]int{"packed": want.Packed, "unpacked": want.Unpacked, "spare": want.Spare, "late": want.Late, "dead": want.Dead} {
			if got := cell(t, page.dom, size, set); got != fmt.Sprint(n) {
				t.Errorf("size %s %s: the page shows %s, the summary holds %d", size, set, got, n)
			}
		}
	}
	if got := cell(t, page.dom, report.NoSize, "dead"); got != fmt.Sprint(s.DeadWithoutSize) {
		t.Errorf("dead letters without a size: the page shows %s, the summary holds %d", got, s.DeadWithoutSize)
	}
	total := s.Results
	for set, n := range map[string]int{"packed": total.Packed, "unpacked": total.Unpacked, "spare": total.Spare, "late": total.Late, "dead": total.Dead} {
		if got := cell(t, page.dom, "all", set); got != fmt.Sprint(n) {
			t.Errorf("all %s: the page shows %s, the summary holds %d", set, got, n)
		}
	}
	for _, want := range []string{
		"<b>equal</b>: Goka vs the batch reference", "<b>equal</b>: Goka vs the embedded SQLite",
		"<b>equal</b>: the service map vs the records read back",
		"<b>equal</b>: the OpenTelemetry metrics vs the records read back<br>toy-elves sent toys " + fmt.Sprint(len(r.Run.Toys)),
		fmt.Sprintf("sleigh loaded pairs %d: equal to the records read back", len(r.Run.Goka.Packed)),
		">toy-elves</text>", ">packed</text>", "kafka topic", fmt.Sprintf(">%d records, ", packed.Calls),
		"Each Kafka topic is a node", " dead letters, p50 ",
		`<g class="strip" data-size="S">`, "windows along event time",
	} {
		if !strings.Contains(page.dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Dead letters are counted on the arrows, not drawn as errors: a run
	// where nothing failed has no red arrow, nor its legend.
	if strings.Contains(page.dom, "red: some of its spans have status ERROR") {
		t.Error("the map of a run where nothing failed has red arrows")
	}
}

// TestLoadSeesConsoleMessages: the harness above would see a page that
// loads anything from outside, or has a failing script.
func TestLoadSeesConsoleMessages(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	var b bytes.Buffer
	if err := report.Write(&b, report.Input{Title: "probe"}); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(b.String(), "</main>", `<img src="http://example.invalid/x.png"><img src="x.png"></main>`, 1)
	path := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if page := load(t, browser, path); len(page.console) < 2 {
		t.Errorf("two blocked loads, %d console messages: %q", len(page.console), page.console)
	}
}

// TestHostilePageInBrowser: ids that are markup and script stay text in the
// browser: no console message, no element made of them.
func TestHostilePageInBrowser(t *testing.T) {
	browser := chromium(t)
	p := contract.DefaultParams()
	var goka results.Set
	var inputs []record.Input
	for i, id := range []string{`<script>console.error("from an id")</script>`, `"><img src=x onerror="console.error(1)">`, `</svg></table><b id="injected">x</b>`} {
		goka.Packed = append(goka.Packed, results.Packed{ToyID: id, BoxID: id, Size: "S", WindowStart: "2026-12-01T00:00:00Z"})
		inputs = append(inputs, record.Input{Stream: record.Toys, Offset: int64(i), Key: []byte("S"),
			Value: []byte(`{"toy_id":` + strconv.Quote(id) + `,"size":"S","made_at":"2026-12-01T00:00:01Z"}`)})
	}
	c := compare.Build(goka, results.Set{}, inputs, p)
	c.SQL = `<script>console.error("engine")</script>`
	path := filepath.Join(t.TempDir(), report.FileName)
	var b bytes.Buffer
	if err := report.Write(&b, report.Input{Title: "hostile", Params: p, Set: goka, Inputs: inputs, SQL: c}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	page := load(t, browser, path)
	if len(page.console) > 0 {
		t.Errorf("the page wrote to the console:\n%s", strings.Join(page.console, "\n"))
	}
	for _, bad := range []string{"<script", "<img", `<b id="injected">`} {
		if strings.Contains(page.dom, bad) {
			t.Errorf("the DOM holds an element from an id: %q", bad)
		}
	}
	if !strings.Contains(page.dom, "&lt;script&gt;console.error(") {
		t.Error("the DOM does not show the ids as text")
	}
}
