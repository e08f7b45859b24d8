package packer

import (
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
)

// goka commits a message's offset as soon as that message's own emits are
// acknowledged, and sarama keeps the greatest offset marked. Emits of
// different messages go to different partitions and can be acknowledged out of
// order, so goka may commit message m+1 while m's emits are still in flight: a
// crash then loses m's outputs (seen with SIGKILL on Apache Kafka: dead letters
// and packed rows missing). The sequencer restores at-least-once: every emit of
// a group is released to goka in the order it was issued, and every callback
// holds a commit barrier registered before its first emit, so a message
// commits only after every earlier message's emits are acknowledged.
type sequencer struct {
	mu    sync.Mutex
	next  uint64 // sequence number of the next item
	head  uint64 // lowest sequence number not yet released
	items map[uint64]*seqItem
}

type seqItem struct {
	done   bool
	msg    *sarama.ProducerMessage
	err    error
	finish func(*sarama.ProducerMessage, error)
}

func newSequencer() *sequencer { return &sequencer{items: map[uint64]*seqItem{}} }

func (s *sequencer) add(finish func(*sarama.ProducerMessage, error)) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	s.next++
	s.items[seq] = &seqItem{finish: finish}
	return seq
}

// complete records that item seq is acknowledged and releases, in order, every
// item up to the first one still pending. Releasing under the lock keeps the
// order; goka's promise callbacks never emit, so they cannot re-enter.
func (s *sequencer) complete(seq uint64, msg *sarama.ProducerMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.items[seq]
	it.done, it.msg, it.err = true, msg, err
	for {
		head, ok := s.items[s.head]
		if !ok || !head.done {
			return
		}
		delete(s.items, s.head)
		s.head++
		head.finish(head.msg, head.err)
	}
}

// barrier defers the current message's commit until every item issued before
// it (earlier messages' emits) is released.
func (s *sequencer) barrier(ctx goka.Context) goka.Context {
	done := ctx.DeferCommit()
	seq := s.add(func(_ *sarama.ProducerMessage, err error) { done(err) })
	s.complete(seq, nil, nil)
	return ctx
}

// producer wraps goka's producer so that promises finish in emit order.
func (s *sequencer) producer(inner goka.Producer) goka.Producer {
	return &orderedProducer{inner: inner, seq: s}
}

type orderedProducer struct {
	inner goka.Producer
	seq   *sequencer
}

func (p *orderedProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *orderedProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	out, finish := goka.NewPromiseWithFinisher()
	seq := p.seq.add(func(msg *sarama.ProducerMessage, err error) { finish(msg, err) })
	p.inner.EmitWithHeaders(topic, key, value, headers).ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
		p.seq.complete(seq, msg, err)
	})
	return out
}

func (p *orderedProducer) Close() error { return p.inner.Close() }
