// Package hostile is what a careless or malicious producer can send to the
// workshop's input topics, each record with the outcome the packing contract
// gives it. The packer's tests send these records to the Goka packer; the
// gated RisingWave comparison (app/compare/risingwave_test.go) sends them to both
// engines.
package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
)

// BrokerMaxMessageBytes is Apache Kafka's default message.max.bytes, which
// kfake shares: the largest record batch a topic takes unless configured.
const BrokerMaxMessageBytes = 1048588

// Record is one record exactly as a careless or hostile producer sends it.
type Record struct {
	Name    string
	Stream  record.Stream
	Key     []byte // nil: no key
	Value   []byte // nil: a tombstone
	Headers []kgo.RecordHeader
	// Want is the contract's outcome: "dead: <reason>", "item" (packed,
	// unpacked or spare), "packed", "late", "heartbeat" (no row); empty
	// when only the agreement with the reference is checked.
	Want string
	// Refused: the broker must refuse it (larger than its limit).
	Refused bool

	// Partition and Offset are where Produce wrote it.
	Partition int32
	Offset    int64
}

// NewProducer is a client that writes records as they are: no compression
// (so that a batch's size is the records' size), a limit above the broker's
// (so that the broker, not the client, decides what is too large), keys
// partitioned with FNV-1a like sarama and goka. The caller closes it.
func NewProducer(kc kafkaconf.Config) (*kgo.Client, error) {
	fnv1a := func(k []byte) uint32 { h := fnv.New32a(); h.Write(k); return h.Sum32() }
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...), kgo.ProducerBatchMaxBytes(4<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(3),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv1a))))
	if err != nil {
		return nil, fmt.Errorf("hostile producer: %w", err)
	}
	return cl, nil
}

// Produce writes recs one by one, in order, toys to toysTopic and boxes to
// boxesTopic, and notes where each landed. A record marked Refused must be
// refused by the broker as too large; one that is not must be written.
func Produce(ctx context.Context, cl *kgo.Client, toysTopic, boxesTopic string, recs []*Record) error {
	for _, r := range recs {
		topic := toysTopic
		if r.Stream == record.Boxes {
			topic = boxesTopic
		}
		kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Headers: r.Headers}
		err := cl.ProduceSync(ctx, kr).FirstErr()
		switch {
		case r.Refused && errors.Is(err, kerr.MessageTooLarge):
			continue
		case r.Refused:
			return fmt.Errorf("%s: the broker should refuse a %d-byte value on %s, got %w", r.Name, len(r.Value), topic, err)
		case err != nil:
			return fmt.Errorf("%s: produce to %s: %w", r.Name, topic, err)
		}
		r.Partition, r.Offset = kr.Partition, kr.Offset
	}
	return nil
}

// T0 is the event time the records are made around.
var T0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// At is T0 plus sec seconds, as made_at text.
func At(sec float64) string {
	return record.FormatTime(T0.Add(time.Duration(sec * float64(time.Second))))
}

// ToyJSON is the value of a toy.
func ToyJSON(id, size, madeAt string) []byte {
	return fmt.Appendf(nil, `{"toy_id":%s,"kind":"doll","size":%s,"elf":"e","made_at":%s}`, jsonText(id), jsonText(size), jsonText(madeAt))
}

// BoxJSON is the value of a box.
func BoxJSON(id, size, madeAt string) []byte {
	return fmt.Appendf(nil, `{"box_id":%s,"size":%s,"elf":"e","made_at":%s}`, jsonText(id), jsonText(size), jsonText(madeAt))
}

// jsonText is s as a JSON string, '<' and friends as they are (a producer
// need not escape them; json.Marshal does).
func jsonText(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// batchBytes is the size of a record batch holding one record with a key of
// keyLen bytes (-1: no key), a value of valueLen bytes and no Headers: what a
// broker compares with max.message.bytes. The 61-byte batch header, then the
// record: its length, attributes, timestamp and offset deltas (0), the key
// and the value with their lengths, and the header count, varints zigzagged.
func batchBytes(keyLen, valueLen int) int {
	vl := func(n int) int { return len(binary.AppendVarint(nil, int64(n))) }
	body := 1 + 1 + 1 + vl(keyLen) + max(keyLen, 0) + vl(valueLen) + valueLen + 1
	return 61 + vl(body) + body
}

// valueFor is the longest value that fits a batch of at most batch bytes
// beside key.
func valueFor(batch int, key []byte) int {
	keyLen := len(key)
	if key == nil {
		keyLen = -1
	}
	v := batch - 61
	for batchBytes(keyLen, v) > batch {
		v--
	}
	return v
}

// fill is prefix, then c repeated, then suffix: n bytes in all.
func fill(n int, prefix string, c byte, suffix string) []byte {
	return []byte(prefix + strings.Repeat(string([]byte{c}), n-len(prefix)-len(suffix)) + suffix)
}

// Records is what a careless or malicious producer can send, each
// with the outcome the contract gives it. Sizes: M holds most of them, S a
// record from far in the future, L valid records at the broker's limit and
// their duplicates, XL ids too long to be written whole.
func Records() []*Record {
	M := []byte("M")
	toy := func(name, id, madeAt, want string) *Record {
		return &Record{Name: name, Stream: record.Toys, Key: M, Value: ToyJSON(id, "M", madeAt), Want: want}
	}
	raw := func(name string, x record.Stream, key []byte, value string, want string) *Record {
		return &Record{Name: name, Stream: x, Key: key, Value: []byte(value), Want: want}
	}
	// A toy of size M with extra members, made at 2s.
	with := func(extra string) string {
		return `{"toy_id":"x-` + strconv.Itoa(len(extra)) + `","size":"M","made_at":"` + At(2) + `",` + extra + `}`
	}
	deep := func(levels int) string { // levels of nesting in all, the record's object counting as one
		return `{"toy_id":"deep-` + strconv.Itoa(levels) + `","size":"M","made_at":"` + At(2) + `","n":` +
			strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`
	}
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var tracestate []string
	for i := range 32 {
		tracestate = append(tracestate, fmt.Sprintf("v%d=%s", i, strings.Repeat("s", 240)))
	}
	var baggage []string
	for i := range 8 {
		baggage = append(baggage, fmt.Sprintf("k%d=%s", i, strings.Repeat("b", 1000)))
	}
	many := make([]kgo.RecordHeader, 1000)
	for i := range many {
		many[i] = kgo.RecordHeader{Key: "h" + strconv.Itoa(i), Value: []byte("v")}
	}

	recs := []*Record{
		toy("filler toy 1", "m-t1", At(1), "item"),
		{Name: "filler box 1", Stream: record.Boxes, Key: M, Value: BoxJSON("m-b1", "M", At(1)), Want: "item"},
		toy("filler toy 2", "m-t2", At(2), "item"),
		{Name: "filler box 2", Stream: record.Boxes, Key: M, Value: BoxJSON("m-b2", "M", At(2)), Want: "item"},

		// Keys.
		{Name: "tombstone", Stream: record.Toys, Key: M, Value: nil, Want: "dead: malformed json"},
		{Name: "no key", Stream: record.Toys, Key: nil, Value: ToyJSON("k-1", "M", At(2)), Want: "dead: size not key"},
		{Name: "empty key", Stream: record.Boxes, Key: []byte{}, Value: BoxJSON("k-2", "M", At(2)), Want: "dead: size not key"},
		{Name: "key with a separator", Stream: record.Toys, Key: []byte("M|x"), Value: ToyJSON("k-3", "M", At(2)), Want: "dead: size not key"},
		{Name: "100 KB key", Stream: record.Toys, Key: []byte(strings.Repeat("M", 100_000)), Value: ToyJSON("k-4", "M", At(2)), Want: "dead: size not key"},
		{Name: "key not UTF-8", Stream: record.Boxes, Key: []byte("M\xff"), Value: BoxJSON("k-5", "M", At(2)), Want: "dead: size not key"},
		{Name: "lower-case size and key", Stream: record.Toys, Key: []byte("m"), Value: ToyJSON("k-6", "m", At(2)), Want: "dead: bad size"},

		// Encodings and JSON texts.
		raw("empty value", record.Toys, M, "", "dead: malformed json"),
		raw("not UTF-8", record.Boxes, M, "\xff\xfe{}", "dead: malformed json"),
		raw("UTF-8 inside a string broken", record.Toys, M, `{"toy_id":"a\xc3","size":"M","made_at":"`+At(2)+`"}`, "dead: malformed json"),
		raw("array", record.Toys, M, `[`+string(ToyJSON("a-1", "M", At(2)))+`]`, "dead: malformed json"),
		raw("string", record.Toys, M, `"toy"`, "dead: malformed json"),
		raw("null", record.Boxes, M, `null`, "dead: malformed json"),
		raw("trailing garbage", record.Toys, M, string(ToyJSON("a-2", "M", At(2)))+` x`, "dead: malformed json"),
		raw("two objects", record.Toys, M, string(ToyJSON("a-3", "M", At(2)))+`{}`, "dead: malformed json"),
		raw("trailing whitespace", record.Toys, M, string(ToyJSON("a-4", "M", At(2)))+" \r\n\t", "item"),
		raw("NaN", record.Toys, M, with(`"n":NaN`), "dead: malformed json"),
		raw("Infinity", record.Toys, M, with(`"n":-Infinity`), "dead: malformed json"),
		raw("1e400", record.Toys, M, with(`"n":1e400`), "dead: malformed json"),
		raw("-1e400", record.Toys, M, with(`"nn":-1e400`), "dead: malformed json"),
		raw("400 digits", record.Toys, M, with(`"n":`+strings.Repeat("9", 400)), "dead: malformed json"),
		raw("largest double", record.Toys, M, with(`"n":1.7976931348623157e308`), "item"),
		raw("past the largest double", record.Toys, M, with(`"nnn":1.8e308`), "dead: malformed json"),
		raw("1e-400", record.Toys, M, with(`"nnnn":1e-400`), "item"),
		raw("lone high surrogate", record.Toys, M, with(`"s":"\ud800"`), "dead: malformed json"),
		raw("lone low surrogate", record.Toys, M, with(`"ss":"\udc00x"`), "dead: malformed json"),
		raw("surrogate pair", record.Toys, M, with(`"sss":"\ud83d\ude00"`), "item"),
		raw("127 levels", record.Toys, M, deep(127), "item"),
		raw("128 levels", record.Toys, M, deep(128), "dead: malformed json"),
		raw("100,000 levels", record.Toys, M, deep(100_000), "dead: malformed json"),
		raw("the last of duplicate members wins", record.Toys, M, `{"toy_id":"d-1","size":"XL","size":"M","made_at":"`+At(2)+`"}`, "item"),
		raw("an id emptied by a later member", record.Toys, M, `{"toy_id":"d-2","toy_id":"","size":"M","made_at":"`+At(2)+`"}`, "dead: no id"),

		// Times.
		toy("year 10000", "t-1", "10000-01-01T00:00:00Z", "dead: bad made_at"),
		toy("no time zone", "t-2", "2026-12-01T00:00:01", "dead: bad made_at"),
		toy("leap second", "t-3", "2026-12-31T23:59:60Z", ""),
		toy("lower-case t and z", "t-4", "2026-12-01t00:00:03z", "item"),
		toy("offset +14:00", "t-5", "2026-12-01T14:00:03+14:00", "item"),
		toy("twelve fraction digits", "t-6", "2026-12-01T00:00:03.123456789012Z", "item"),
		toy("before 1970", "t-7", "1969-12-31T23:59:59.5Z", "late"),
		toy("year 0", "t-8", "0000-01-01T00:00:00Z", "late"),
		raw("made_at a number", record.Toys, M, `{"toy_id":"t-9","size":"M","made_at":1}`, "dead: bad made_at"),

		// Ids and heartbeats.
		toy("empty id", "", At(2), "dead: no id"),
		raw("numeric id", record.Toys, M, `{"toy_id":5,"size":"M","made_at":"`+At(2)+`"}`, "dead: no id"),
		raw("null id", record.Boxes, M, `{"box_id":null,"size":"M","made_at":"`+At(2)+`"}`, "dead: no id"),
		raw("heartbeat as a string", record.Toys, M, `{"heartbeat":"true","size":"M","made_at":"`+At(2)+`"}`, "dead: no id"),
		raw("heartbeat with an id", record.Toys, M, `{"heartbeat":true,"toy_id":"h-1","size":"M","made_at":"`+At(3)+`"}`, "heartbeat"),
		toy("id of escapes", "<>&\u2028\u2029\x01\"\\/é😀", At(3), "item"),
		toy("a duplicate", "m-t1", At(3), "dead: duplicate"),
		{Name: "size XXL", Stream: record.Boxes, Key: []byte("XXL"), Value: BoxJSON("b-x", "XXL", At(3)), Want: "dead: bad size"},

		// Headers: only trace context is read, and then copied onto every
		// record the packer writes for it.
		{Name: "garbage traceparent", Stream: record.Toys, Key: M, Value: ToyJSON("h-2", "M", At(4)), Want: "item",
			Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("zz-not-a-trace")}}},
		{Name: "largest tracestate and baggage", Stream: record.Boxes, Key: M, Value: BoxJSON("h-3", "M", At(4)), Want: "item",
			Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(tp)}, {Key: "tracestate", Value: []byte(strings.Join(tracestate, ","))},
				{Key: "baggage", Value: []byte(strings.Join(baggage, ","))}}},
		{Name: "1000 headers", Stream: record.Toys, Key: M, Value: ToyJSON("h-4", "M", At(4)), Want: "item", Headers: many},
		{Name: "a 200 KB header", Stream: record.Boxes, Key: M, Value: BoxJSON("h-5", "M", At(4)), Want: "item",
			Headers: []kgo.RecordHeader{{Key: "x", Value: []byte(strings.Repeat("h", 200_000))}}},

		// Late, and a record from far in the future that makes every later
		// toy of its size late.
		toy("on time at 30s", "m-t30", At(30), "item"),
		toy("late", "m-late", At(1), "late"),
		// Contract version 2: an id is unique within its window only, and
		// late is decided first.
		toy("re-sent after its window closed", "m-t1", At(1), "late"),
		toy("an id again in a later window", "m-t1", At(31), "item"),
		{Name: "a box id again in a later window", Stream: record.Boxes, Key: M, Value: BoxJSON("m-b1", "M", At(31)), Want: "item"},
		{Name: "from the year 9000", Stream: record.Toys, Key: []byte("S"), Value: ToyJSON("s-future", "S", "9000-01-01T00:00:00Z"), Want: "item"},
		{Name: "late behind it", Stream: record.Toys, Key: []byte("S"), Value: ToyJSON("s-1", "S", At(3)), Want: "late"},
		{Name: "a box of the same size", Stream: record.Boxes, Key: []byte("S"), Value: BoxJSON("s-b1", "S", At(3)), Want: "item"},

		// Packing lines (contract version 3): keys on the edge of well-formed,
		// and a hall's toy that meets only the box of its own line.
		{Name: "a hall's toy", Stream: record.Toys, Key: []byte("M/hall-1"), Value: ToyJSON("m-t1", "M", At(41)), Want: "packed"},
		{Name: "the same id's box in another hall", Stream: record.Boxes, Key: []byte("M/hall-2"), Value: BoxJSON("h2-b", "M", At(41)), Want: "item"},
		{Name: "a box of the hall's line", Stream: record.Boxes, Key: []byte("M/hall-1"), Value: BoxJSON("h1-b", "M", At(42)), Want: "packed"},
		{Name: "a hall of 32 characters", Stream: record.Toys, Key: []byte("XL/" + strings.Repeat("9", 32)), Value: ToyJSON("h32", "XL", At(41)), Want: "item"},
		{Name: "a hall of 33 characters", Stream: record.Toys, Key: []byte("XL/" + strings.Repeat("9", 33)), Value: ToyJSON("h33", "XL", At(41)), Want: "dead: bad line"},
		{Name: "an empty hall", Stream: record.Boxes, Key: []byte("M/"), Value: BoxJSON("h-empty", "M", At(41)), Want: "dead: bad line"},
		{Name: "two slashes", Stream: record.Toys, Key: []byte("M/a/b"), Value: ToyJSON("h-2slash", "M", At(41)), Want: "dead: bad line"},
		{Name: "an upper-case hall", Stream: record.Boxes, Key: []byte("M/Hall"), Value: BoxJSON("h-upper", "M", At(41)), Want: "dead: bad line"},
		{Name: "a hall with the packer's separator", Stream: record.Toys, Key: []byte("M/a|b"), Value: ToyJSON("h-pipe", "M", At(41)), Want: "dead: bad line"},
		{Name: "a hall starting with '-'", Stream: record.Toys, Key: []byte("M/-a"), Value: ToyJSON("h-dash", "M", At(41)), Want: "dead: bad line"},
		{Name: "a line of another size", Stream: record.Toys, Key: []byte("L/hall-1"), Value: ToyJSON("h-other", "M", At(41)), Want: "dead: size not key"},
		{Name: "a slash first", Stream: record.Boxes, Key: []byte("/hall-1"), Value: BoxJSON("h-slash", "M", At(41)), Want: "dead: size not key"},

		// Ids too long to be written whole: a packed pair of them, and one
		// alone whose JSON escapes make it six times longer.
		toyXL("a 600 KB id of '<'", strings.Repeat("<", 600_000), "packed"),
		{Name: "a 900 KB id of U+2028", Stream: record.Boxes, Key: []byte("XL"), Value: []byte(`{"box_id":"` + strings.Repeat("\u2028", 300_000) + `","size":"XL","made_at":"` + At(21) + `"}`), Want: "packed"},
		{Name: "a 100 KB id of control characters", Stream: record.Toys, Key: []byte("XL"),
			Value: []byte(`{"toy_id":"` + strings.Repeat(`\u0001`, 100_000) + `","size":"XL","made_at":"` + At(22) + `"}`), Want: "item"},
	}

	// Records at, just under and just over the broker's limit, of each kind
	// that grows when a dead letter carries it.
	L := []byte("L")
	for _, d := range []struct {
		name string
		n    int
	}{{"at the limit", valueFor(BrokerMaxMessageBytes, L)}, {"just under the limit", valueFor(BrokerMaxMessageBytes, L) - 1},
		{"just over the limit", valueFor(BrokerMaxMessageBytes+1, L)}} {
		refused := strings.Contains(d.name, "over")
		if refused && d.n == valueFor(BrokerMaxMessageBytes, L) {
			panic("no value length is just over the limit")
		}
		valid := func(id string) []byte {
			return fill(d.n, `{"toy_id":"`+id+`","size":"L","made_at":"`+At(31)+`","kind":"`, '<', `"}`)
		}
		id := "l-" + strings.ReplaceAll(d.name, " ", "-")
		recs = append(recs,
			&Record{Name: "bytes 0xff " + d.name, Stream: record.Boxes, Key: L, Value: fill(d.n, "", 0xff, ""), Want: "dead: malformed json", Refused: refused},
			&Record{Name: "'<' " + d.name, Stream: record.Toys, Key: L, Value: fill(d.n, "", '<', ""), Want: "dead: malformed json", Refused: refused},
			&Record{Name: "a valid toy of '<' " + d.name, Stream: record.Toys, Key: L, Value: valid(id), Want: "item", Refused: refused},
			&Record{Name: "its duplicate " + d.name, Stream: record.Toys, Key: L, Value: valid(id), Want: "dead: duplicate", Refused: refused},
		)
	}
	return recs
}

func toyXL(name, id, want string) *Record {
	return &Record{Name: name, Stream: record.Toys, Key: []byte("XL"), Value: ToyJSON(id, "XL", At(21)), Want: want}
}

// FinalHeartbeats close every window the hostile records opened, on every
// line they used: at an hour past them, and for S past the year 9000.
func FinalHeartbeats() []*Record {
	var out []*Record
	for _, x := range []record.Stream{record.Toys, record.Boxes} {
		for _, size := range record.Sizes {
			madeAt := At(3600)
			if size == "S" {
				madeAt = "9000-01-01T01:00:00Z"
			}
			out = append(out, &Record{Name: "final heartbeat", Stream: x, Key: []byte(size),
				Value: fmt.Appendf(nil, `{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, madeAt), Want: "heartbeat"})
		}
		for _, line := range []string{"M/hall-1", "M/hall-2", "XL/" + strings.Repeat("9", 32)} {
			size, _, _ := record.SplitLine(line)
			out = append(out, &Record{Name: "final heartbeat of a hall", Stream: x, Key: []byte(line),
				Value: fmt.Appendf(nil, `{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, At(3600)), Want: "heartbeat"})
		}
	}
	return out
}
