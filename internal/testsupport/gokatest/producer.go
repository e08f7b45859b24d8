package gokatest

import (
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Producer is a goka.Producer that turns a record's headers into kgo's, as
// gokakit's producer does, and answers at once with partition 0 and the
// record's offset (how many came before it). With Keep, it keeps the
// records; Before, when set, runs first (a test can hold a record there).
type Producer struct {
	Keep   bool
	Before func(topic, key string)

	mu      sync.Mutex
	next    int64
	records []Produced
}

// Produced is a record handed to a Producer.
type Produced struct {
	Topic, Key string
	Offset     int64
	Headers    []kgo.RecordHeader
}

func (p *Producer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p *Producer) EmitWithHeaders(topic, key string, _ []byte, headers goka.Headers) *goka.Promise {
	if p.Before != nil {
		p.Before(topic, key)
	}
	var hs []kgo.RecordHeader
	if len(headers) > 0 {
		hs = make([]kgo.RecordHeader, 0, len(headers))
		for k, v := range headers {
			hs = append(hs, kgo.RecordHeader{Key: k, Value: v})
		}
	}
	p.mu.Lock()
	offset := p.next
	p.next++
	if p.Keep {
		p.records = append(p.records, Produced{Topic: topic, Key: key, Offset: offset, Headers: hs})
	}
	p.mu.Unlock()
	promise, finish := goka.NewPromiseWithFinisher()
	finish(&sarama.ProducerMessage{Topic: topic, Offset: offset}, nil)
	return promise
}

func (p *Producer) Close() error { return nil }

// Records are the records kept so far.
func (p *Producer) Records() []Produced {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Produced(nil), p.records...)
}

// Header is the value of header key of r; nil when it has none.
func (r Produced) Header(key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}
