package kafkaconf_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// records is a slog.Handler that keeps what it is given, from level on.
type records struct {
	level slog.Level
	mu    sync.Mutex
	got   []slog.Record
}

func (h *records) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// levelOf is the level of the record with message msg, if one came.
func (h *records) levelOf(msg string) (slog.Level, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.got {
		if r.Message == msg {
			return r.Level, true
		}
	}
	return 0, false
}

// TestKgoLoggerLevels: a client built with KgoLogger asks kgo for what the
// slog logger has enabled (at debug, kgo's debug output; at warn, only
// warnings and errors), and logs each kgo level at slog's.
func TestKgoLoggerLevels(t *testing.T) {
	levels := []struct {
		slog slog.Level
		kgo  kgo.LogLevel
	}{
		{slog.LevelDebug, kgo.LogLevelDebug},
		{slog.LevelInfo, kgo.LogLevelInfo},
		{slog.LevelWarn, kgo.LogLevelWarn},
		{slog.LevelError, kgo.LogLevelError},
	}
	for _, want := range levels {
		t.Run(want.slog.String(), func(t *testing.T) {
			h := &records{level: want.slog}
			// No seed brokers: the client connects only when asked to.
			cl, err := kgo.NewClient(kafkaconf.KgoLogger(slog.New(h)))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			l, ok := cl.OptValue(kgo.WithLogger).(kgo.Logger)
			if !ok {
				t.Fatalf("the client's logger is %T", cl.OptValue(kgo.WithLogger))
			}
			if got := l.Level(); got != want.kgo {
				t.Errorf("slog at %v: kgo logs at %v, want %v", want.slog, got, want.kgo)
			}
			for _, from := range levels {
				msg := "from kgo at " + from.kgo.String()
				l.Log(from.kgo, msg)
				got, logged := h.levelOf(msg)
				if logged != (from.slog >= want.slog) || logged && got != from.slog {
					t.Errorf("kgo %v with slog at %v: logged %v at %v, want logged %v at %v",
						from.kgo, want.slog, logged, got, from.slog >= want.slog, from.slog)
				}
			}
		})
	}
}
