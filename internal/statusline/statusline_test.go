package statusline

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestLog: written to something that is not a terminal, every line stays,
// each on its own, nothing is erased, and lines come every LogEvery.
func TestLog(t *testing.T) {
	var b strings.Builder
	l := New(&b, time.Millisecond)
	if l.Every() != LogEvery {
		t.Errorf("Every = %v, want %v", l.Every(), LogEvery)
	}
	l.Show("one")
	l.Show("two")
	l.Clear()
	if got := b.String(); got != "one\ntwo\n" {
		t.Errorf("wrote %q, want each line on its own and nothing erased", got)
	}
}

// TestTerminal: on a terminal each line replaces the last, Clear erases the
// one shown, and a second Clear writes nothing.
func TestTerminal(t *testing.T) {
	var b strings.Builder
	l := &Line{w: &b, tty: true, every: 250 * time.Millisecond}
	l.Clear()
	l.Show("one")
	l.Show("two")
	l.Clear()
	l.Clear()
	if got, want := b.String(), clearLine+"one"+clearLine+"two"+clearLine; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// TestIsTerminal: a file and a buffer are not terminals.
func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&strings.Builder{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
}
