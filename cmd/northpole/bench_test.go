package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/bench"
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
	cmd := exec.Command(exe, "bench", "--records", "2000", "--variants", "base,hop", "--verify", "--json", "--timeout", "3m")
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
			len(r.InternalTopics) == 2 && r.InternalBytes > 0 && r.CleanWaitSeconds > 0
		if i == 0 && !measured || i == 1 && (r.RestartReadySeconds != 0 || r.InternalTopics != nil || r.CleanWaitSeconds != 0) {
			t.Errorf("variant %s: state written %d, kept %d, %d bytes (%s), restart ready in %v s, topics %+v",
				r.Name, r.InternalRecordsWritten, r.InternalRecordsKept, r.InternalBytes, r.InternalBytesError, r.RestartReadySeconds, r.InternalTopics)
		}
		// --verify checks the packer's results, not the hop's (it has none).
		if c := r.Check; i == 0 && (c == nil || !c.Equal || c.Rows == 0) || i == 1 && c != nil {
			t.Errorf("variant %s: check against the reference %+v", r.Name, c)
		}
	}
	if base := got.Results[0]; base.Error == "" && base.OutputRecords == 0 {
		t.Errorf("the packer wrote no output: %+v", base)
	}
	t.Logf("stderr:\n%s", stderr.String())
}
