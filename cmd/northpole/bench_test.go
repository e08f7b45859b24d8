package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/app/bench"
)

// TestBenchRunsItsVariants builds the binary (bench starts the packer from its
// own executable) and runs a tiny bench with the baseline and the hop floor:
// each must consume every pre-loaded event and report CPU and memory.
func TestBenchRunsItsVariants(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two packers; -short skips it")
	}
	exe := filepath.Join(t.TempDir(), "northpole")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, "bench", "--records", "2000", "--variants", "base,hop", "--json", "--timeout", "3m")
	cmd.Env = append(os.Environ(), "NORTHPOLE_BROKERS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var got struct {
		Records int            `json:"records"`
		Results []bench.Result `json:"results"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("bench --json output: %v\n%s", err, stdout.String())
	}
	if got.Records != 2000 || len(got.Results) != 2 {
		t.Fatalf("got %d records and %d results, want 2000 and 2:\n%s", got.Records, len(got.Results), stdout.String())
	}
	for i, r := range got.Results {
		if r.Error != "" {
			t.Errorf("variant %s failed: %s", r.Name, r.Error)
			continue
		}
		// 1000 toys + 1000 boxes plus heartbeats and final heartbeats.
		if r.InputEvents < 2000 || r.CPUPerEventUS <= 0 || r.MaxRSSMiB <= 0 || r.EventsPerSec <= 0 {
			t.Errorf("variant %s: implausible measurement %+v", r.Name, r)
		}
		// kfake's CPU is the bench process's; the records per kind come
		// from the end offsets: every input read once, the hop writes its
		// table and nothing else, the packer its tables and outputs, and no
		// loop record (only a record in a partition other than its size's
		// takes the loop) and no events (it has no such hop).
		if r.BrokerCPUPerEventUS <= 0 || r.BrokerSeconds <= 0 || r.TotalCPUPerEventUS != r.CPUPerEventUS+r.BrokerNetCPUPerEventUS || !strings.HasPrefix(r.BrokerCPU, "kfake") {
			t.Errorf("variant %s: broker CPU %q, %v µs/event (net %v) over %v s, total %v", r.Name, r.BrokerCPU, r.BrokerCPUPerEventUS, r.BrokerNetCPUPerEventUS, r.BrokerSeconds, r.TotalCPUPerEventUS)
		}
		perEvent := map[string][2]float64{}
		for _, k := range r.Records {
			perEvent[k.Kind] = [2]float64{k.WrittenPerEvent, k.ReadPerEvent}
		}
		if in := perEvent[bench.KindInputs]; in != [2]float64{1, 1} {
			t.Errorf("variant %s: inputs written/read per event %v, want 1/1", r.Name, in)
		}
		for _, kind := range []string{bench.KindLoops, bench.KindEvents, bench.KindTables, bench.KindOutputs} {
			w := perEvent[kind][0]
			packerWrites := kind == bench.KindTables || kind == bench.KindOutputs
			if i == 1 && (kind == bench.KindTables) != (w == 1) || i == 0 && packerWrites != (w > 0) {
				t.Errorf("variant %s: %s written per event %v", r.Name, kind, w)
			}
		}
		if wantHop := i == 1; r.Hop != wantHop {
			t.Errorf("variant %d (%s): hop = %v, want %v", i, r.Name, r.Hop, wantHop)
		}
		// --restart is on by default: the packer's state and restart are
		// measured, the hop's not.
		measured := r.RestartReadySeconds > 0 && r.InternalRecordsWritten > 0 && r.InternalRecordsKept <= r.InternalRecordsWritten &&
			len(r.InternalTopics) == 3 && r.InternalBytes > 0 && r.CleanWaitSeconds > 0
		if i == 0 && !measured || i == 1 && (r.RestartReadySeconds != 0 || r.InternalTopics != nil || r.CleanWaitSeconds != 0) {
			t.Errorf("variant %s: state written %d, kept %d, %d bytes (%s), restart ready in %v s, topics %+v",
				r.Name, r.InternalRecordsWritten, r.InternalRecordsKept, r.InternalBytes, r.InternalBytesError, r.RestartReadySeconds, r.InternalTopics)
		}
	}
	if base := got.Results[0]; base.Error == "" && base.OutputRecords == 0 {
		t.Errorf("the packer wrote no output: %+v", base)
	}
	t.Logf("stderr:\n%s", stderr.String())
}

// TestPrintBench: the table has a column per kind of topic and the broker's
// figures, "-" where the broker was not measured; the notes say how it was
// measured, point a broker on another host to --broker-pid and print a
// failed variant's error.
func TestPrintBench(t *testing.T) {
	rs := []bench.Result{
		{Variant: bench.Variant{Name: "baseline", Partitions: 4}, InputEvents: 100, EventsPerSec: 50, CPUPerEventUS: 30,
			BrokerCPU: "kfake: measured", BrokerSeconds: 2, BrokerCPUPerEventUS: 4.3, BrokerNetCPUPerEventUS: 4, TotalCPUPerEventUS: 34,
			Records: []bench.KindRecords{{Kind: bench.KindInputs, WrittenPerEvent: 1, ReadPerEvent: 1}}},
		{Variant: bench.Variant{Name: "real broker", Partitions: 4}, InputEvents: 100, BrokerCPU: bench.NotLocal + ")"},
		{Variant: bench.Variant{Name: "disk", Partitions: 4}, Error: "boom"},
	}
	rs[0].InternalRecordsWritten, rs[0].InternalRecordsKept, rs[0].InternalBytes = 2000, 500, 10240
	rs[0].RestartReadySeconds, rs[0].RestartMaxRSSMiB = 1.234, 42
	rs[1].InternalRecordsWritten, rs[1].InternalRecordsKept, rs[1].InternalBytes, rs[1].InternalBytesError = 10, 10, -1, "no log dirs"
	rs[1].RestartReadySeconds = 0.5
	var b bytes.Buffer
	printBenchTable(&b, rs)
	printBrokerNotes(&b, rs)
	printStateTable(&b, rs)
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
