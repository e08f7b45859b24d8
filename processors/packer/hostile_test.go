package packer_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	harness "github.com/northpole-workshop/northpole/internal/pipeline"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// brokerMaxMessageBytes is Apache Kafka's default message.max.bytes, which
// kfake shares: the largest record batch a topic takes unless configured.
const brokerMaxMessageBytes = 1048588

// rawRecord is one record exactly as a careless or hostile producer sends it.
type rawRecord struct {
	name    string
	stream  record.Stream
	key     []byte // nil: no key
	value   []byte // nil: a tombstone
	headers []kgo.RecordHeader
	// want is the contract's outcome: "dead: <reason>", "item" (packed,
	// unpacked or spare), "packed", "late", "heartbeat" (no row); empty
	// when only the agreement with the reference is checked.
	want string
	// refused: the broker must refuse it (larger than its limit).
	refused bool

	partition int32 // where it landed
	offset    int64
}

// rawProducer writes records as they are: no compression (so that a batch's
// size is the records' size), a limit above the broker's (so that the broker,
// not the client, decides what is too large), keys partitioned with FNV-1a
// like sarama and goka.
func rawProducer(t *testing.T, kc kafkaconf.Config) *kgo.Client {
	t.Helper()
	fnv1a := func(k []byte) uint32 { h := fnv.New32a(); h.Write(k); return h.Sum32() }
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...), kgo.ProducerBatchMaxBytes(4<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordRetries(3),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv1a))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceRaw writes recs one by one, in order, and notes where each landed.
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, pl pipeline, recs []*rawRecord) {
	t.Helper()
	for _, r := range recs {
		topic := pl.cfg.Topics.Toys
		if r.stream == record.Boxes {
			topic = pl.cfg.Topics.Boxes
		}
		kr := &kgo.Record{Topic: topic, Key: r.key, Value: r.value, Headers: r.headers}
		res := cl.ProduceSync(ctx, kr)
		err := res.FirstErr()
		switch {
		case r.refused && errors.Is(err, kerr.MessageTooLarge):
			continue
		case r.refused:
			t.Fatalf("%s: the broker should refuse a %d-byte value, got %v", r.name, len(r.value), err)
		case err != nil:
			t.Fatalf("%s: produce: %v", r.name, err)
		}
		r.partition, r.offset = kr.Partition, kr.Offset
	}
}

var hostileT0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func at(sec float64) string {
	return record.FormatTime(hostileT0.Add(time.Duration(sec * float64(time.Second))))
}

func toyJSON(id, size, madeAt string) []byte {
	return fmt.Appendf(nil, `{"toy_id":%s,"kind":"doll","size":%s,"elf":"e","made_at":%s}`, jsonText(id), jsonText(size), jsonText(madeAt))
}

func boxJSON(id, size, madeAt string) []byte {
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
// keyLen bytes (-1: no key), a value of valueLen bytes and no headers: what a
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

// hostileRecords is what a careless or malicious producer can send, each
// with the outcome the contract gives it. Sizes: M holds most of them, S a
// record from far in the future, L valid records at the broker's limit and
// their duplicates, XL ids too long to be written whole.
func hostileRecords() []*rawRecord {
	M := []byte("M")
	toy := func(name, id, madeAt, want string) *rawRecord {
		return &rawRecord{name: name, stream: record.Toys, key: M, value: toyJSON(id, "M", madeAt), want: want}
	}
	raw := func(name string, x record.Stream, key []byte, value string, want string) *rawRecord {
		return &rawRecord{name: name, stream: x, key: key, value: []byte(value), want: want}
	}
	// A toy of size M with extra members, made at 2s.
	with := func(extra string) string {
		return `{"toy_id":"x-` + strconv.Itoa(len(extra)) + `","size":"M","made_at":"` + at(2) + `",` + extra + `}`
	}
	deep := func(levels int) string { // levels of nesting in all, the record's object counting as one
		return `{"toy_id":"deep-` + strconv.Itoa(levels) + `","size":"M","made_at":"` + at(2) + `","n":` +
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

	recs := []*rawRecord{
		toy("filler toy 1", "m-t1", at(1), "item"),
		{name: "filler box 1", stream: record.Boxes, key: M, value: boxJSON("m-b1", "M", at(1)), want: "item"},
		toy("filler toy 2", "m-t2", at(2), "item"),
		{name: "filler box 2", stream: record.Boxes, key: M, value: boxJSON("m-b2", "M", at(2)), want: "item"},

		// Keys.
		{name: "tombstone", stream: record.Toys, key: M, value: nil, want: "dead: malformed json"},
		{name: "no key", stream: record.Toys, key: nil, value: toyJSON("k-1", "M", at(2)), want: "dead: size not key"},
		{name: "empty key", stream: record.Boxes, key: []byte{}, value: boxJSON("k-2", "M", at(2)), want: "dead: size not key"},
		{name: "key with a separator", stream: record.Toys, key: []byte("M|x"), value: toyJSON("k-3", "M", at(2)), want: "dead: size not key"},
		{name: "100 KB key", stream: record.Toys, key: []byte(strings.Repeat("M", 100_000)), value: toyJSON("k-4", "M", at(2)), want: "dead: size not key"},
		{name: "key not UTF-8", stream: record.Boxes, key: []byte("M\xff"), value: boxJSON("k-5", "M", at(2)), want: "dead: size not key"},
		{name: "lower-case size and key", stream: record.Toys, key: []byte("m"), value: toyJSON("k-6", "m", at(2)), want: "dead: bad size"},

		// Encodings and JSON texts.
		raw("empty value", record.Toys, M, "", "dead: malformed json"),
		raw("not UTF-8", record.Boxes, M, "\xff\xfe{}", "dead: malformed json"),
		raw("UTF-8 inside a string broken", record.Toys, M, `{"toy_id":"a\xc3","size":"M","made_at":"`+at(2)+`"}`, "dead: malformed json"),
		raw("array", record.Toys, M, `[`+string(toyJSON("a-1", "M", at(2)))+`]`, "dead: malformed json"),
		raw("string", record.Toys, M, `"toy"`, "dead: malformed json"),
		raw("null", record.Boxes, M, `null`, "dead: malformed json"),
		raw("trailing garbage", record.Toys, M, string(toyJSON("a-2", "M", at(2)))+` x`, "dead: malformed json"),
		raw("two objects", record.Toys, M, string(toyJSON("a-3", "M", at(2)))+`{}`, "dead: malformed json"),
		raw("trailing whitespace", record.Toys, M, string(toyJSON("a-4", "M", at(2)))+" \r\n\t", "item"),
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
		raw("the last of duplicate members wins", record.Toys, M, `{"toy_id":"d-1","size":"XL","size":"M","made_at":"`+at(2)+`"}`, "item"),
		raw("an id emptied by a later member", record.Toys, M, `{"toy_id":"d-2","toy_id":"","size":"M","made_at":"`+at(2)+`"}`, "dead: no id"),

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
		toy("empty id", "", at(2), "dead: no id"),
		raw("numeric id", record.Toys, M, `{"toy_id":5,"size":"M","made_at":"`+at(2)+`"}`, "dead: no id"),
		raw("null id", record.Boxes, M, `{"box_id":null,"size":"M","made_at":"`+at(2)+`"}`, "dead: no id"),
		raw("heartbeat as a string", record.Toys, M, `{"heartbeat":"true","size":"M","made_at":"`+at(2)+`"}`, "dead: no id"),
		raw("heartbeat with an id", record.Toys, M, `{"heartbeat":true,"toy_id":"h-1","size":"M","made_at":"`+at(3)+`"}`, "heartbeat"),
		toy("id of escapes", "<>&\u2028\u2029\x01\"\\/é😀", at(3), "item"),
		toy("a duplicate", "m-t1", at(3), "dead: duplicate"),
		{name: "size XXL", stream: record.Boxes, key: []byte("XXL"), value: boxJSON("b-x", "XXL", at(3)), want: "dead: bad size"},

		// Headers: only trace context is read, and then copied onto every
		// record the packer writes for it.
		{name: "garbage traceparent", stream: record.Toys, key: M, value: toyJSON("h-2", "M", at(4)), want: "item",
			headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("zz-not-a-trace")}}},
		{name: "largest tracestate and baggage", stream: record.Boxes, key: M, value: boxJSON("h-3", "M", at(4)), want: "item",
			headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(tp)}, {Key: "tracestate", Value: []byte(strings.Join(tracestate, ","))},
				{Key: "baggage", Value: []byte(strings.Join(baggage, ","))}}},
		{name: "1000 headers", stream: record.Toys, key: M, value: toyJSON("h-4", "M", at(4)), want: "item", headers: many},
		{name: "a 200 KB header", stream: record.Boxes, key: M, value: boxJSON("h-5", "M", at(4)), want: "item",
			headers: []kgo.RecordHeader{{Key: "x", Value: []byte(strings.Repeat("h", 200_000))}}},

		// Late, and a record from far in the future that makes every later
		// toy of its size late.
		toy("on time at 30s", "m-t30", at(30), "item"),
		toy("late", "m-late", at(1), "late"),
		{name: "from the year 9000", stream: record.Toys, key: []byte("S"), value: toyJSON("s-future", "S", "9000-01-01T00:00:00Z"), want: "item"},
		{name: "late behind it", stream: record.Toys, key: []byte("S"), value: toyJSON("s-1", "S", at(3)), want: "late"},
		{name: "a box of the same size", stream: record.Boxes, key: []byte("S"), value: boxJSON("s-b1", "S", at(3)), want: "item"},

		// Ids too long to be written whole: a packed pair of them, and one
		// alone whose JSON escapes make it six times longer.
		toyXL("a 600 KB id of '<'", strings.Repeat("<", 600_000), "packed"),
		{name: "a 900 KB id of U+2028", stream: record.Boxes, key: []byte("XL"), value: []byte(`{"box_id":"` + strings.Repeat("\u2028", 300_000) + `","size":"XL","made_at":"` + at(21) + `"}`), want: "packed"},
		{name: "a 100 KB id of control characters", stream: record.Toys, key: []byte("XL"),
			value: []byte(`{"toy_id":"` + strings.Repeat(`\u0001`, 100_000) + `","size":"XL","made_at":"` + at(22) + `"}`), want: "item"},
	}

	// Records at, just under and just over the broker's limit, of each kind
	// that grows when a dead letter carries it.
	L := []byte("L")
	for _, d := range []struct {
		name string
		n    int
	}{{"at the limit", valueFor(brokerMaxMessageBytes, L)}, {"just under the limit", valueFor(brokerMaxMessageBytes, L) - 1},
		{"just over the limit", valueFor(brokerMaxMessageBytes+1, L)}} {
		refused := strings.Contains(d.name, "over")
		if refused && d.n == valueFor(brokerMaxMessageBytes, L) {
			panic("no value length is just over the limit")
		}
		valid := func(id string) []byte {
			return fill(d.n, `{"toy_id":"`+id+`","size":"L","made_at":"`+at(31)+`","kind":"`, '<', `"}`)
		}
		id := "l-" + strings.ReplaceAll(d.name, " ", "-")
		recs = append(recs,
			&rawRecord{name: "bytes 0xff " + d.name, stream: record.Boxes, key: L, value: fill(d.n, "", 0xff, ""), want: "dead: malformed json", refused: refused},
			&rawRecord{name: "'<' " + d.name, stream: record.Toys, key: L, value: fill(d.n, "", '<', ""), want: "dead: malformed json", refused: refused},
			&rawRecord{name: "a valid toy of '<' " + d.name, stream: record.Toys, key: L, value: valid(id), want: "item", refused: refused},
			&rawRecord{name: "its duplicate " + d.name, stream: record.Toys, key: L, value: valid(id), want: "dead: duplicate", refused: refused},
		)
	}
	return recs
}

func toyXL(name, id, want string) *rawRecord {
	return &rawRecord{name: name, stream: record.Toys, key: []byte("XL"), value: toyJSON(id, "XL", at(21)), want: want}
}

// finalHeartbeats close every window the hostile records opened: at an hour
// past them, and for S past the year 9000.
func finalHeartbeats() []*rawRecord {
	var out []*rawRecord
	for _, x := range []record.Stream{record.Toys, record.Boxes} {
		for _, size := range record.Sizes {
			madeAt := at(3600)
			if size == "S" {
				madeAt = "9000-01-01T01:00:00Z"
			}
			out = append(out, &rawRecord{name: "final heartbeat", stream: x, key: []byte(size),
				value: fmt.Appendf(nil, `{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, madeAt), want: "heartbeat"})
		}
	}
	return out
}

// outcome is what the packer made of the record at (x, partition, offset)
// with id: its dead letter's reason, or the set that holds its id.
func outcome(got results.Set, x record.Stream, partition int32, offset int64, id string) string {
	for _, d := range got.Dead {
		if d.Stream == string(x) && d.Partition == partition && d.Offset == offset {
			return "dead: " + d.Reason
		}
	}
	is := func(shown string, c results.Cut) bool { return shown == id || !c.IsZero() && c.Matches(shown, id) }
	for _, r := range got.Packed {
		if x == record.Toys && is(r.ToyID, r.ToyIDCut) || x == record.Boxes && is(r.BoxID, r.BoxIDCut) {
			return "packed"
		}
	}
	for _, r := range got.Unpacked {
		if x == record.Toys && is(r.ToyID, r.ToyIDCut) {
			return "unpacked"
		}
	}
	for _, r := range got.Spare {
		if x == record.Boxes && is(r.BoxID, r.BoxIDCut) {
			return "spare"
		}
	}
	for _, r := range got.Late {
		if r.Stream == string(x) && is(r.ID, r.IDCut) {
			return "late"
		}
	}
	return "heartbeat"
}

// TestHostileInputs sends every record of hostileRecords, with trace context
// on, and checks that the packer keeps running, that each record has the
// outcome the contract gives it, that the results equal the reference, and
// that every record the packer wrote fits in the broker's limit, cut where it
// had to be, with the whole value's length and digest.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, scenario{partitions: 2, window: 10 * time.Second, lateness: 5 * time.Second})
	pk, err := packer.New(pl.cfg, slog.Default(), packer.WithTracerProvider(sampledProvider(t)))
	if err != nil {
		t.Fatal(err)
	}
	run := startRun(t, ctx, pk)
	recs := slices.Concat(hostileRecords(), finalHeartbeats())
	produceRaw(t, ctx, rawProducer(t, kc), pl, recs)
	if err := pk.WaitQuiet(ctx, 200*time.Millisecond, run.done); err != nil {
		t.Fatal(err)
	}
	if run.stopped() {
		t.Fatal("the packer stopped")
	}

	got := pl.checkAgainstReference(t, ctx)
	for _, r := range recs {
		if r.refused || r.want == "" {
			continue
		}
		id := ""
		if rec, err := record.Parse(r.stream, r.key, r.value); err == nil {
			id = rec.ID
		}
		o := outcome(got, r.stream, r.partition, r.offset, id)
		if o == r.want || r.want == "item" && (o == "packed" || o == "unpacked" || o == "spare") {
			continue
		}
		t.Errorf("%s (%s/%d@%d): %s, want %s", r.name, r.stream, r.partition, r.offset, o, r.want)
	}
	pl.checkWrittenFit(t, ctx, recs)
}

// checkAgainstReference compares the packer's results with the reference on
// the records in the input topics, and returns the packer's.
func (pl pipeline) checkAgainstReference(t *testing.T, ctx context.Context) results.Set {
	t.Helper()
	rb, err := harness.Read(ctx, pl.kc, pl.cfg.Topics)
	if err != nil {
		t.Fatal(err)
	}
	got, raw := rb.Goka, rb.Raw
	want := contract.Compute(rb.Inputs(), pl.cfg.Params, contract.Literal)
	for _, d := range results.Compare(got, want) {
		t.Errorf("%s: only goka %d rows %.3v, only reference %d rows %.3v", d.Set, len(d.OnlyA), d.OnlyA, len(d.OnlyB), d.OnlyB)
	}
	if raw.Conflicts != 0 {
		t.Errorf("%d output keys were written with two different values", raw.Conflicts)
	}
	return got
}

// checkWrittenFit reads every topic the packer wrote and checks that each
// record fits in the broker's limit, and that each cut dead letter describes
// the input record's whole value and key.
func (pl pipeline) checkWrittenFit(t *testing.T, ctx context.Context, recs []*rawRecord) {
	t.Helper()
	byPos := map[string]*rawRecord{}
	for _, r := range recs {
		if !r.refused {
			byPos[fmt.Sprintf("%s/%d/%d", r.stream, r.partition, r.offset)] = r
		}
	}
	c := pl.cfg.Topics
	cuts := 0
	for _, topic := range []string{c.Packed, c.Unpacked, c.Spare, c.Late, c.Dead} {
		msgs, err := topicread.All(ctx, pl.kc, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			size := len(m.Key) + len(m.Value)
			for _, h := range m.Headers {
				size += len(h.Key) + len(h.Value)
			}
			if size > brokerMaxMessageBytes-61 {
				t.Errorf("%s/%d@%d: %d bytes of key, value and headers", topic, m.Partition, m.Offset, size)
			}
			if topic != c.Dead {
				continue
			}
			var dl packer.DeadLetter
			if err := json.Unmarshal(m.Value, &dl); err != nil {
				t.Fatal(err)
			}
			in := byPos[fmt.Sprintf("%s/%d/%d", dl.Stream, dl.Partition, dl.Offset)]
			if in == nil {
				t.Errorf("dead letter of %s/%d@%d, which the test did not write", dl.Stream, dl.Partition, dl.Offset)
				continue
			}
			if !dl.ValueCut.IsZero() {
				cuts++
				if dl.ValueCut != results.CutOf(in.value) {
					t.Errorf("%s: value_cut %v does not describe the input's value", in.name, dl.ValueCut)
				}
			}
			if !dl.KeyCut.IsZero() && dl.KeyCut != results.CutOf(in.key) {
				t.Errorf("%s: key_cut %v does not describe the input's key", in.name, dl.KeyCut)
			}
		}
	}
	if cuts == 0 {
		t.Error("no dead letter was cut: the records at the limit test nothing")
	}
}

// run is a packer running in the background. done delivers Run's error
// once; exited is closed after that, so that stop returns also when done's
// value was taken already (by WaitQuiet, say).
type run struct {
	done   chan error
	exited chan struct{}
	cancel context.CancelFunc
}

func startRun(t *testing.T, ctx context.Context, pk *packer.Packer) *run {
	t.Helper()
	if err := pk.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &run{done: make(chan error, 1), exited: make(chan struct{}), cancel: cancel}
	go func() {
		r.done <- pk.Run(ctx)
		close(r.exited)
	}()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func (r *run) stopped() bool { return len(r.done) > 0 }

// stop ends the run and returns its error (nil for a clean stop, or when
// the error was taken already).
func (r *run) stop() error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-r.exited:
		return nil
	}
}

// alterMaxMessageBytes sets (or, with "", removes) a topic's max.message.bytes.
func alterMaxMessageBytes(t *testing.T, ctx context.Context, kc kafkaconf.Config, topic, value string) {
	t.Helper()
	admin := readerAdmin(t, ctx, kc)
	alter := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}
	if value != "" {
		alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &value}
	}
	resps, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, topic)
	if err == nil {
		var resp kadm.AlterConfigsResponse
		resp, err = resps.On(topic, nil)
		if err == nil {
			err = resp.Err
		}
	}
	if err != nil {
		t.Fatalf("alter max.message.bytes of %s: %v", topic, err)
	}
}

// readerAdmin is an admin client that the test closes at its end.
func readerAdmin(t *testing.T, ctx context.Context, kc kafkaconf.Config) *kadm.Client {
	t.Helper()
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestFailedWriteIsNotCommittedPast makes the write of one record's outcome
// fail (its dead letter is larger than the dead-letter topic takes, once the
// packer runs) while later records' writes succeed. The packer must stop
// without committing past that record, refuse to start while the topic's
// limit is too small to hold a record, and after a restart with the limit
// back write the record's outcome: nothing lost.
func TestFailedWriteIsNotCommittedPast(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, scenario{partitions: 1, window: 10 * time.Second, lateness: 5 * time.Second})
	prod := rawProducer(t, kc)
	start := func() (*packer.Packer, *run) {
		pk, err := packer.New(pl.cfg, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		return pk, startRun(t, ctx, pk)
	}
	M := []byte("M")
	pk, r := start()
	first := []*rawRecord{
		{name: "toy 1", stream: record.Toys, key: M, value: toyJSON("t1", "M", at(1))},
		{name: "box 1", stream: record.Boxes, key: M, value: boxJSON("b1", "M", at(1))},
	}
	produceRaw(t, ctx, prod, pl, first)
	if err := pk.WaitQuiet(ctx, 100*time.Millisecond, r.done); err != nil {
		t.Fatal(err)
	}

	alterMaxMessageBytes(t, ctx, kc, pl.cfg.Topics.Dead, "100")
	bad := &rawRecord{name: "malformed", stream: record.Toys, key: M, value: []byte("not json, and a dead letter of more than 100 bytes")}
	later := []*rawRecord{bad}
	for i := range 50 {
		later = append(later,
			&rawRecord{stream: record.Toys, key: M, value: toyJSON(fmt.Sprintf("t%d", i+2), "M", at(2))},
			&rawRecord{stream: record.Boxes, key: M, value: boxJSON(fmt.Sprintf("b%d", i+2), "M", at(2))})
	}
	produceRaw(t, ctx, prod, pl, later)
	select {
	case err := <-r.done:
		close(r.done)
		if err == nil || !strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") {
			t.Fatalf("the packer stopped with %v, want the failed write's MESSAGE_TOO_LARGE", err)
		}
		t.Logf("the packer stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("the packer went on after a write failed")
	}
	if c := committed(t, ctx, kc, pl.cfg.Group+"-clock", pl.cfg.Topics.Toys); c > bad.offset {
		t.Fatalf("toys committed up to offset %d, past the record at %d whose dead letter failed", c, bad.offset)
	}

	// Restarted with the limit still too small, it says so and stops.
	_, r = start()
	select {
	case err := <-r.done:
		close(r.done)
		if err == nil || !strings.Contains(err.Error(), "max.message.bytes") {
			t.Fatalf("started with a 100-byte topic limit: %v, want an error naming max.message.bytes", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the packer started although a topic it writes takes only 100 bytes")
	}

	alterMaxMessageBytes(t, ctx, kc, pl.cfg.Topics.Dead, "")
	pk, r = start()
	produceRaw(t, ctx, prod, pl, finalHeartbeats())
	if err := pk.WaitQuiet(ctx, 100*time.Millisecond, r.done); err != nil {
		t.Fatal(err)
	}
	got := pl.checkAgainstReference(t, ctx)
	if o := outcome(got, record.Toys, bad.partition, bad.offset, ""); o != "dead: malformed json" {
		t.Fatalf("the record whose write failed: %s after the restart, want its dead letter", o)
	}
}

// committed is the offset group has committed on partition 0 of topic.
func committed(t *testing.T, ctx context.Context, kc kafkaconf.Config, group, topic string) int64 {
	t.Helper()
	resps, err := readerAdmin(t, ctx, kc).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resps.Lookup(topic, 0); ok {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.At
	}
	return -1
}

// sampledProvider samples every span and exports none: the trace middleware
// then propagates context on every hop, as in production.
func sampledProvider(t *testing.T) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}
