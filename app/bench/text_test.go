package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteText: the table has a column per kind of topic and the broker's
// figures, "-" where the broker was not measured; the notes say how it was
// measured, point a broker on another host to --broker-pid and print a
// failed variant's error.
func TestWriteText(t *testing.T) {
	rs := []Result{
		{Variant: Variant{Name: "baseline", Partitions: 4}, InputEvents: 100, EventsPerSec: 50, CPUPerEventUS: 30,
			BrokerCPU: "kfake: measured", BrokerSeconds: 2, BrokerCPUPerEventUS: 4.3, BrokerNetCPUPerEventUS: 4, TotalCPUPerEventUS: 34,
			Records: []KindRecords{{Kind: KindInputs, WrittenPerEvent: 1, ReadPerEvent: 1}}},
		{Variant: Variant{Name: "real broker", Partitions: 4}, InputEvents: 100, BrokerCPU: NotLocal + ")"},
		{Variant: Variant{Name: "disk", Partitions: 4}, Error: "boom"},
	}
	rs[0].InternalRecordsWritten, rs[0].InternalRecordsKept, rs[0].InternalBytes = 2000, 500, 10240
	rs[0].RestartReadySeconds, rs[0].RestartMaxRSSMiB = 1.234, 42
	rs[1].InternalRecordsWritten, rs[1].InternalRecordsKept, rs[1].InternalBytes, rs[1].InternalBytesError = 10, 10, -1, "no log dirs"
	rs[1].RestartReadySeconds = 0.5
	var b bytes.Buffer
	WriteText(&b, rs)
	out := b.String()
	for _, want := range []string{
		"broker µs/ev", "net µs/ev", "sum µs/ev", "RSS B/rec", "inputs w/r", "loops w/r", "events w/r", "tables w/r", "outputs w/r",
		"4.3", "34.0", "1.00/1.00",
		"broker CPU of baseline: kfake: measured",
		"broker CPU of real broker: not measured (broker not on this host; use --broker-pid)",
		"disk failed: boom",
		"kept %", "restart s", "restart RSS MiB", "25.0", "1.23", "internal bytes of real broker: not measured (no log dirs)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[2], "real broker") || strings.Count(lines[2], " - ") < 3 {
		t.Errorf("the unmeasured broker's row should show - for broker, net and sum:\n%s", lines[2])
	}
	// The state table: a row per measured variant, the baseline's 10 KiB,
	// "-" for the real broker's unmeasured bytes, none for the failed one.
	var state []string
	for i, l := range lines {
		if strings.HasPrefix(l, "state after the run") {
			state = lines[i+2:]
		}
	}
	if len(state) < 2 || !strings.Contains(state[0], "baseline") || !strings.Contains(state[0], " 10 ") ||
		!strings.Contains(state[1], "real broker") || !strings.Contains(state[1], " - ") || strings.Contains(strings.Join(state, "\n"), "disk") {
		t.Errorf("state table rows %q in:\n%s", state, out)
	}
}

// TestVariantsHelpNamesEveryVariant: the help says what each variant
// Config.Variants may name measures.
func TestVariantsHelpNamesEveryVariant(t *testing.T) {
	for _, v := range VariantNames {
		if !strings.Contains(VariantsHelp, "\n  "+v+" ") {
			t.Errorf("VariantsHelp does not describe %q", v)
		}
	}
}
