package packer

import (
	"fmt"
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/gokakit"
)

// goka commits a message's offset as soon as that message's own writes are
// acknowledged, and sarama keeps the greatest offset marked. Writes of
// different messages go to different partitions and can be acknowledged out
// of order, so goka may commit message m+1 while m's writes are still in
// flight: a crash then loses m's outputs (seen with SIGKILL on Apache Kafka:
// dead letters and packed rows missing). The sequencer restores
// at-least-once: every write of the group (its producer, producer) is
// released to goka in the order it was issued. A message that writes
// commits only once its writes are released, so after every earlier
// message's; one that writes nothing (a record applied already, with no row
// to send again) gets a commit barrier instead, at the end of its callback
// (commitInOrder), released once every earlier write is.
//
// Order alone is not enough when a write fails: goka fails the message whose
// write failed, but later messages, released after it, would still commit,
// and their offsets cover the failed one (sarama commits the greatest offset
// marked). So the first failure poisons the sequencer: every item released
// after it fails too, nothing commits any more, and the processor stops with
// the failed record still uncommitted. It is processed again after a
// restart.
type sequencer struct {
	mu     sync.Mutex
	head   uint64    // sequence number of buf[start], the lowest not yet released
	start  int       // buf[start:] are the items not yet released
	buf    []seqItem // buf[start+i] has sequence number head+i
	failed error     // the first write that failed; nil while all succeed
}

// seqItem is one write or one commit barrier. Exactly one of finish and commit
// is set: storing goka's own callbacks, rather than closures over them, saves
// an allocation per item on the packer's hottest path.
type seqItem struct {
	done   bool
	msg    *sarama.ProducerMessage
	err    error
	finish goka.PromiseFinisher
	commit func(error)
}

func newSequencer() *sequencer { return &sequencer{} }

// firstFailure is the write that poisoned the sequencer, if any.
func (s *sequencer) firstFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *sequencer) add(it seqItem) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.push(it)
}

// push appends it under the lock and returns its sequence number.
func (s *sequencer) push(it seqItem) uint64 {
	if len(s.buf) == cap(s.buf) && s.start > 0 {
		// Full, with released items at the front: slide the live ones down
		// instead of growing. Amortized O(1) per item.
		n := copy(s.buf, s.buf[s.start:])
		clear(s.buf[n:])
		s.buf, s.start = s.buf[:n], 0
	}
	seq := s.head + uint64(len(s.buf)-s.start)
	s.buf = append(s.buf, it)
	return seq
}

// complete records that item seq is acknowledged and releases, in order, every
// item up to the first one still pending. Releasing under the lock keeps the
// order; goka's promise callbacks never emit, so they cannot re-enter.
func (s *sequencer) complete(seq uint64, msg *sarama.ProducerMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := &s.buf[s.start+int(seq-s.head)]
	it.done, it.msg, it.err = true, msg, err
	s.release()
}

// release releases, under the lock and in order, every item up to the first
// one still pending.
func (s *sequencer) release() {
	for s.start < len(s.buf) && s.buf[s.start].done {
		head := s.buf[s.start]
		s.buf[s.start] = seqItem{} // drop references for the GC
		s.start++
		s.head++
		switch {
		case head.err != nil && s.failed == nil:
			s.failed = head.err
		case head.err == nil && s.failed != nil:
			head.err = fmt.Errorf("not committed, an earlier write failed: %w", s.failed)
		}
		if head.commit != nil {
			head.commit(head.err)
		} else {
			head.finish(head.msg, head.err)
		}
	}
	if s.start == len(s.buf) {
		s.buf, s.start = s.buf[:0], 0
	}
}

// wrap is the group's context wrapper: a message's context notes whether
// its callback wrote.
func (s *sequencer) wrap(ctx goka.Context) goka.Context {
	return &orderedContext{gokaContext: ctx, seq: s}
}

// gokaContext names the goka.Context that orderedContext embeds, whose
// Context method it keeps.
type gokaContext = goka.Context

// orderedContext is the goka.Context of a message of the group. Every
// method of goka.Context that writes a record (Emit, Loopback, SetValue,
// Delete) goes through it and notes that the callback wrote: goka hands
// such a record to the group's producer, the sequencer's, before the
// method returns.
type orderedContext struct {
	gokaContext
	seq   *sequencer
	wrote bool
}

func (c *orderedContext) Emit(topic goka.Stream, key string, value any, options ...goka.ContextOption) {
	c.wrote = true
	c.gokaContext.Emit(topic, key, value, options...)
}

func (c *orderedContext) Loopback(key string, value any, options ...goka.ContextOption) {
	c.wrote = true
	c.gokaContext.Loopback(key, value, options...)
}

func (c *orderedContext) SetValue(value any, options ...goka.ContextOption) {
	c.wrote = true
	c.gokaContext.SetValue(value, options...)
}

func (c *orderedContext) Delete(options ...goka.ContextOption) {
	c.wrote = true
	c.gokaContext.Delete(options...)
}

// commitInOrder is the outermost middleware of the group's callbacks: when
// the callback wrote nothing, it defers the message's commit until every
// write issued before it is released. goka would otherwise commit the
// message as soon as the callback returns. A message that wrote needs no
// barrier: its first write is released after every earlier one, and goka
// commits the message only after its own writes. (Outside the group's
// context wrapper, in goka's tester, there is nothing to order.)
func commitInOrder(next goka.ProcessCallback) goka.ProcessCallback {
	return func(ctx goka.Context, msg any) {
		next(ctx, msg)
		if oc, ok := ctx.(*orderedContext); ok && !oc.wrote {
			oc.seq.addDone(seqItem{commit: oc.DeferCommit()})
		}
	}
}

// addDone adds an item that waits for no answer (a barrier) and releases
// what it can, under one lock: add and complete in one.
func (s *sequencer) addDone(it seqItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it.done = true
	s.push(it)
	s.release()
}

// producer is the group's goka.Producer: it writes with w and finishes the
// promises in write order. It sees Kafka's answer to every write of the
// group, which m (nil: none) counts.
func (s *sequencer) producer(w *gokakit.Writer, m *metrics) goka.Producer {
	p := &orderedProducer{w: w, seq: s, m: m}
	p.answer = p.answered
	return p
}

type orderedProducer struct {
	w      *gokakit.Writer
	seq    *sequencer
	m      *metrics
	answer gokakit.Answer // answered, bound once
}

func (p *orderedProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *orderedProducer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	out, finish := goka.NewPromiseWithFinisher()
	seq := p.seq.add(seqItem{finish: finish})
	p.w.Write(topic, key, value, headers, p.answer, seq)
	return out
}

// answered is Kafka's answer to the write with sequence number seq.
func (p *orderedProducer) answered(seq uint64, msg *sarama.ProducerMessage, err error) {
	if p.m != nil {
		p.m.answered(msg.Topic, msg.Partition, err)
	}
	p.seq.complete(seq, msg, err)
}

func (p *orderedProducer) Close() error { return p.w.Close() }
