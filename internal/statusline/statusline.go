// Package statusline shows how a long command is getting on in one line on
// stderr: rewritten in place on a terminal, a line of its own every few
// seconds elsewhere (CI logs, a file), and cleared from a terminal at the
// end, so that the results printed after it start on a clean line.
package statusline

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// LogEvery is how often a line is written where it cannot be rewritten: a
// log needs a line every few seconds, not four a second.
const LogEvery = 3 * time.Second

// clearLine returns to the start of the line and erases it (ANSI).
const clearLine = "\r\033[K"

// Line is one status line on w. Its methods may be called from several
// goroutines.
type Line struct {
	w     io.Writer
	tty   bool
	every time.Duration

	mu    sync.Mutex
	shown bool // a line is on the terminal, not yet cleared
}

// New is a status line on w, shown every ttyEvery on a terminal and every
// LogEvery otherwise (Every).
func New(w io.Writer, ttyEvery time.Duration) *Line {
	l := &Line{w: w, tty: IsTerminal(w), every: LogEvery}
	if l.tty {
		l.every = ttyEvery
	}
	return l
}

// Every is how often the caller should Show a new line.
func (l *Line) Every() time.Duration { return l.every }

// Show shows text as the status line: in place of the last one on a
// terminal, as a line of its own otherwise.
func (l *Line) Show(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.tty {
		fmt.Fprintln(l.w, text)
		return
	}
	fmt.Fprint(l.w, clearLine+text)
	l.shown = true
}

// Clear erases the line from a terminal, if one is shown; elsewhere the
// lines stay, as a log's do.
func (l *Line) Clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, clearLine)
		l.shown = false
	}
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
