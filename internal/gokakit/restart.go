package gokakit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/northpole-workshop/northpole/internal/stopping"
)

// Restart pauses: the first pause before a run starts again doubles up to
// maxRestartPause while the failures go on.
const (
	restartPause    = time.Second
	maxRestartPause = 15 * time.Second
)

// Supervise calls run until ctx ends (nil), or run returns nil or an error
// that is not BrokerTrouble (that error). After BrokerTrouble it logs a
// warning, pauses and calls run again, for as long as the failures since
// run last said it ran (all its processors got to consume) span no more than
// window; then it returns the last error.
//
// A run must build its goka processors afresh and return only once every
// one has returned: then no write of theirs is in flight, the next run's
// processors resume at their groups' committed offsets and rebuild their
// tables from the changelogs, as after a crash and a restart of the process.
//
// Once ctx has ended, Supervise waits at most stopping.Grace for run: goka's
// processors do not return while a callback is blocked on a write the broker
// never answers, nor while sarama tries to commit to a broker that is gone.
// Then it returns an error wrapping stopping.ErrIncomplete and leaves them:
// what they read since their last commit is read again at the next start.
func Supervise(ctx context.Context, log *slog.Logger, window time.Duration, run func(context.Context) (ran bool, err error)) error {
	log = orDiscard(log)
	var (
		since time.Time // the first failure since run last ran
		pause = restartPause
	)
	for {
		var ran bool
		err := stopping.Wait(ctx, stopping.Grace, func(ctx context.Context) error {
			var err error
			ran, err = run(ctx)
			return err
		})
		if errors.Is(err, stopping.ErrIncomplete) {
			return err // run is still going: ran must not be read
		}
		if ctx.Err() != nil {
			return nil //nolint:nilerr // the stop was asked for: whatever the processors said while they shut down
		}
		if err == nil || !BrokerTrouble(err) {
			return err
		}
		if ran || since.IsZero() {
			since, pause = time.Now(), restartPause
		}
		if time.Since(since) > window {
			return fmt.Errorf("failing on broker errors for %v: %w", window, err)
		}
		log.Warn("goka processors stopped on a broker error; they start again from their committed offsets",
			"err", err, "in", pause)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, maxRestartPause)
	}
}

// BrokerTrouble reports whether err is a broker's passing state rather than
// a fault of the processor, its data or its configuration: a leader moved
// (NOT_LEADER_OR_FOLLOWER), a coordinator moved (NOT_COORDINATOR), a broker
// is restarting (connection refused, out of brokers). goka stops a processor
// on any of them, for example when a partition's leader moves while it sets
// up a partition after a rebalance.
//
// goka formats some causes with %v, which loses their type, so an error
// whose chain holds no sarama.KError is also matched by the text of each
// retriable Kafka error code (sarama's text for the code, franz-go's kerr
// for whether the protocol calls it retriable).
func BrokerTrouble(err error) bool {
	if err == nil {
		return false
	}
	var ke sarama.KError
	if errors.As(err, &ke) && retriableCode(ke) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	msg := err.Error()
	for _, e := range retriableTexts {
		if strings.Contains(msg, e) {
			return true
		}
	}
	return false
}

func retriableCode(ke sarama.KError) bool {
	var k *kerr.Error
	return errors.As(kerr.ErrorForCode(int16(ke)), &k) && k.Retriable
}

// retriableTexts name a broker's passing state in an error that lost its
// type: sarama's text of every retriable Kafka error code, its client
// errors for brokers out of reach, and the system's for a connection
// refused or cut.
var retriableTexts = func() []string {
	texts := []string{
		sarama.ErrOutOfBrokers.Error(),
		sarama.ErrNotConnected.Error(),
		syscall.ECONNREFUSED.Error(),
		syscall.ECONNRESET.Error(),
		syscall.EPIPE.Error(),
	}
	for code := int16(1); code < 200; code++ {
		ke := sarama.KError(code)
		if retriableCode(ke) && !strings.HasPrefix(ke.Error(), "Unknown error") {
			texts = append(texts, ke.Error())
		}
	}
	return texts
}()
