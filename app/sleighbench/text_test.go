package sleighbench

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteText: a row per run, and the first failure of a run
// that had one.
func TestWriteText(t *testing.T) {
	rs := []Result{
		{Storage: "memory", Pairs: 1000, IdleRSSMiB: 20, PagingPeakMiB: 30, Seconds: 2, Requests: 10, Pages: 8, Busy: 2, Clients: 5, ClientsDone: 5},
		{Storage: "disk", Pairs: 1000, IdleRSSMiB: 10, PagingPeakMiB: 15, Seconds: 2, Requests: 4, Pages: 4, Failed: 1, Clients: 5, ClientsDone: 4, FirstFailure: "EOF"},
	}
	var b bytes.Buffer
	WriteText(&b, rs)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "paging peak MiB") || !strings.Contains(lines[1], "memory") || !strings.Contains(lines[1], "1.50") ||
		!strings.Contains(lines[1], "5/5") || !strings.Contains(lines[2], "4/5") || lines[3] != "disk run: first failure: EOF" {
		t.Errorf("table:\n%s", b.String())
	}
}
