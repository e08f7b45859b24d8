package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummarize: per round a variant's runs are averaged and divided by the
// mean of the round's baseline runs; failed and live runs count for nothing;
// a single round has no summary.
func TestSummarize(t *testing.T) {
	base := Variant{Name: "baseline", ID: "base", Partitions: 4}
	t10 := Variant{Name: "tracing 10%", ID: "trace10", Partitions: 4}
	live := Variant{Name: "live 2000/s", ID: "live", Partitions: 4, Live: true}
	run := func(round int, v Variant, cpu float64) Result {
		return Result{Variant: v, Round: round, CPUPerEventUS: cpu}
	}
	rs := []Result{
		// round 1: base 10 and 12 (mean 11), trace10 13 and 15 (14): 14/11
		run(1, base, 10), run(1, t10, 13), run(1, t10, 15), run(1, base, 12), run(1, live, 99),
		// round 2: base 20, trace10 30 (one run failed): 1.5
		run(2, base, 20), run(2, t10, 30), {Variant: t10, Round: 2, Error: "boom"}, run(2, base, 20), run(2, live, 99),
		// round 3: base 10 and 10, trace10 12 and 12: 1.2
		run(3, base, 10), run(3, t10, 12), run(3, t10, 12), run(3, base, 10), run(3, live, 99),
	}
	got := Summarize(rs)
	if len(got) != 2 || got[0].ID != "base" || got[1].ID != "trace10" {
		t.Fatalf("Summarize = %+v, want base and trace10", got)
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	b, tr := got[0], got[1]
	if b.Rounds != 3 || !near(b.CPURatio.Median, 1) || !near(b.CPURatio.Min, 1) || !near(b.CPURatio.Max, 1) ||
		!near(b.CPUPerEventUS.Median, 11) || !near(b.CPUPerEventUS.Min, 10) || !near(b.CPUPerEventUS.Max, 20) {
		t.Errorf("baseline: %+v", b)
	}
	if tr.Rounds != 3 || !near(tr.CPURatio.Median, 14.0/11) || !near(tr.CPURatio.Min, 1.2) || !near(tr.CPURatio.Max, 1.5) ||
		!near(tr.CPUPerEventUS.Median, 14) {
		t.Errorf("tracing 10%%: %+v", tr)
	}
	if s := Summarize(rs[:5]); s != nil {
		t.Errorf("one round: Summarize = %+v, want nil", s)
	}
}

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want Spread
	}{
		{[]float64{3}, Spread{3, 3, 3}},
		{[]float64{4, 1, 3}, Spread{3, 1, 4}},
		{[]float64{4, 1, 3, 2}, Spread{2.5, 1, 4}},
	} {
		if got := spreadOf(c.xs); got != c.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", c.xs, got, c.want)
		}
	}
}

// TestWriteTextRounds: with several rounds each row names its round, the
// broker notes are the first round's, and the summary closes the output.
func TestWriteTextRounds(t *testing.T) {
	base := Variant{Name: "baseline", ID: "base", Partitions: 4}
	t100 := Variant{Name: "tracing 100%", ID: "trace100", Partitions: 4}
	var rs []Result
	for round := 1; round <= 2; round++ {
		rs = append(rs, Result{Variant: base, Round: round, CPUPerEventUS: 10, BrokerCPU: "kfake: measured"},
			Result{Variant: t100, Round: round, CPUPerEventUS: 20 + float64(round), BrokerCPU: "not measured"})
	}
	var b bytes.Buffer
	WriteText(&b, rs)
	out := b.String()
	lines := strings.Split(out, "\n")
	if f := strings.Fields(lines[0]); len(f) < 2 || f[0] != "round" || f[1] != "variant" {
		t.Errorf("head %q, want round then variant", lines[0])
	}
	if f := strings.Fields(lines[3]); len(f) < 2 || f[0] != "2" || f[1] != "baseline" {
		t.Errorf("row %q, want round 2's baseline", lines[3])
	}
	if n := strings.Count(out, "broker CPU of baseline"); n != 1 {
		t.Errorf("%d broker notes of the baseline, want the first round's only:\n%s", n, out)
	}
	for _, want := range []string{"over the rounds", "21.5 [21.0-22.0]", "2.15 [2.10-2.20]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
