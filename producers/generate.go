package producers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// Message kinds. Kind says what the generator meant a record to be; the
// contract (record.Parse plus the stream's history) decides what it is.
const (
	KindToy       = "toy"
	KindBox       = "box"
	KindHeartbeat = "heartbeat"
	KindDup       = "dup"
	KindLate      = "late"
	// KindBadPrefix starts the kind of every dead letter; see BadKinds.
	KindBadPrefix = "bad:"
)

// BadKinds are the kinds of dead letters the elves make, in the order they
// cycle through, and the contract reason each must be classified with.
var BadKinds = []string{
	"bad:truncated-json", // a JSON object cut short
	"bad:not-object",     // a JSON array
	"bad:invalid-utf8",   // an object with bytes that are not UTF-8
	"bad:made-at",        // made_at "2026-12-24 10:00:00", "yesterday" or a number
	"bad:size",           // size "XXL" (keyed XXL or by a valid size) or "m"
	"bad:size-not-key",   // a valid size keyed by another valid size
	"bad:missing-id",     // no toy_id / box_id field
	"bad:empty-id",       // toy_id / box_id ""
}

// KindBadLine is the dead letter of a key that is no well-formed line: a
// valid record keyed "M/Hall-3", "M/", "M/hall-3/b", a hall of 33
// characters, "M/-hall-3" or "M/hall_3". The elves make it only with halls
// (Config.Halls > 0), after BadKinds in the cycle, so that runs without
// halls make the records of contract version 2.
const KindBadLine = "bad:line"

// badKinds are the dead letters the elves of cfg cycle through.
func badKinds(cfg Config) []string {
	if cfg.Halls == 0 {
		return BadKinds
	}
	return append(slices.Clip(BadKinds), KindBadLine)
}

var badReasons = map[string]record.Reason{
	"bad:truncated-json": record.ReasonMalformedJSON,
	"bad:not-object":     record.ReasonMalformedJSON,
	"bad:invalid-utf8":   record.ReasonMalformedJSON,
	"bad:made-at":        record.ReasonBadMadeAt,
	"bad:size":           record.ReasonBadSize,
	"bad:size-not-key":   record.ReasonSizeNotKey,
	"bad:missing-id":     record.ReasonNoID,
	"bad:empty-id":       record.ReasonNoID,
	KindBadLine:          record.ReasonBadLine,
}

// BadReason is the reason record.Parse must give for a dead letter of the
// given kind, or "" when kind is not one of BadKinds.
func BadReason(kind string) record.Reason { return badReasons[kind] }

// IsBad reports whether kind is a dead-letter kind.
func IsBad(kind string) bool { return strings.HasPrefix(kind, KindBadPrefix) }

// ToyKinds are the kinds of toys the elves make.
var ToyKinds = []string{"teddy-bear", "train", "doll", "kite", "puzzle", "yo-yo", "robot", "drum", "rocking-horse", "spinning-top"}

// Message is one Kafka record the elves write.
type Message struct {
	Key   []byte
	Value []byte
	// Kind is toy, box, heartbeat, dup, late or one of BadKinds.
	Kind string
	// Elf is the index of the elf that sends it (see ElfName); -1 for the final
	// heartbeats, which are sent once all elves have finished.
	Elf int
	// MadeAt is the record's made_at when it is valid by the contract; zero for
	// dead letters.
	MadeAt time.Time
}

// Plan is every message of a Count-mode run, in the order the generator makes
// them, the final heartbeats last. Run sends exactly these (spread over the
// elves, so their interleaving in Kafka varies).
func Plan(cfg Config) ([]Message, error) {
	if err := cfg.validRecords(); err != nil {
		return nil, err
	}
	if cfg.Count <= 0 {
		return nil, errors.New("plan: needs count > 0 (a duration run is generated lazily, use NewGenerator)")
	}
	g := NewGenerator(cfg)
	out := make([]Message, 0, cfg.Count+cfg.Count/50+8)
	for range cfg.Count {
		out = append(out, g.Next()...)
	}
	return append(out, g.Final()...), nil
}

// FinalTime is when the final heartbeats are: the end of the window of
// maxMadeAt plus Lateness, or cfg.FinalHeartbeatAt when that is later. A zero
// maxMadeAt (nothing valid written) counts as cfg.Start.
func FinalTime(cfg Config, maxMadeAt time.Time) time.Time {
	if maxMadeAt.IsZero() {
		maxMadeAt = cfg.Start
	}
	t := floorTime(maxMadeAt, cfg.Window).Add(cfg.Window + cfg.Lateness)
	if cfg.FinalHeartbeatAt.After(t) {
		t = cfg.FinalHeartbeatAt
	}
	return t.UTC()
}

// Horizon is a made_at for the final heartbeats of runs that together must
// close every window any of them writes: past the end of the last window of
// every config, plus Lateness. Give it to each config as FinalHeartbeatAt, so
// that toys and boxes close the same windows whichever stream ends first. The
// n-th record of a config is made at Start + n*Spacing or earlier (Disorder
// and late records only move made_at back), so a config of Count records
// reaches Start + (Count+1)*Spacing + Window + Lateness; a Duration config has
// no end known in advance and adds nothing.
func Horizon(cfgs ...Config) time.Time {
	var h time.Time
	for _, c := range cfgs {
		if c.Count <= 0 {
			continue
		}
		if t := c.Start.Add(time.Duration(c.Count+1)*c.Spacing + c.Window + c.Lateness); t.After(h) {
			h = t
		}
	}
	return h
}

// FinalHeartbeats are the heartbeats, one per line of cfg (Config.Lines),
// that close every window written: see FinalTime. Every line gets one, used
// or not, so that a line only the other stream wrote closes too.
func FinalHeartbeats(cfg Config, maxMadeAt time.Time) []Message {
	at := FinalTime(cfg, maxMadeAt)
	halls := cfg.halls()
	out := make([]Message, 0, len(record.Sizes)*len(halls))
	for _, s := range record.Sizes {
		for _, h := range halls {
			out = append(out, heartbeat(record.JoinLine(s, h), s, FinalElfName(cfg.Stream), at, -1))
		}
	}
	return out
}

func heartbeat(key, size, elf string, at time.Time, elfIdx int) Message {
	v := mustJSON(record.Heartbeat{Heartbeat: true, Size: size, Elf: elf, MadeAt: record.FormatTime(at)})
	return Message{Key: []byte(key), Value: v, Kind: KindHeartbeat, Elf: elfIdx, MadeAt: at}
}

// Generator makes the messages of a run one record at a time. It is
// deterministic: the same Config gives the same sequence. Not safe for
// concurrent use.
type Generator struct {
	cfg       Config
	rng       *rand.Rand
	prefix    string
	seedTag   string
	sizeCum   []int // cumulative weights over record.Sizes
	sizeTotal int
	halls     []string // Config.halls
	// nextHall is, per size, the hall of its next record: halls are taken
	// in turn, so each line of a size gets an even share of it, and runs
	// without halls draw nothing more from rng than before lines existed.
	nextHall [4]int
	badKinds []string
	n        int // records generated so far (heartbeats not counted)
	ids      int
	bad      int
	hbOn     bool
	nextHB   time.Time
	// pending are the lines (size index × halls + hall) with items whose
	// windows this stream's heartbeats have not yet closed, and due, per
	// line, the made_at that closes them (the end of the window of its
	// newest item, plus Lateness; zero when the line is not pending); fresh,
	// per line, says it had an item since the last tick. A tick beats a
	// pending line that is fresh or due: heartbeats grow with the items
	// (at most two for each), not with the lines times the ticks.
	pending []int
	due     []time.Time
	fresh   []bool
	// beatTurn, per size, picks which line a tick reached gets late records.
	beatTurn  [4]int
	elves     []elfState
	maxMadeAt time.Time
}

const poolSize = 32

// everyHall is elfState.maxHall when the elf's newest record of a size is on
// every line of that size: late records then go to the halls in turn, not all
// to the first.
const everyHall = -1

type pooled struct {
	key    []byte
	value  []byte
	madeAt time.Time
	hall   int
}

// elfState is what one elf remembers of what it wrote: lateness and
// duplicates are made relative to the elf's own earlier records, because only
// those are guaranteed to precede the new one in the partition (each elf
// hands its records to the producer in order), whatever the other elves do.
// It is kept per size, not per line, so that it does not grow with the
// halls: a late record goes to the line of the elf's newest record of its
// size (maxHall), which is late there because that line's prior_max is at
// least that record's made_at; a duplicate repeats a pooled record's key
// with its value.
type elfState struct {
	name     string
	priorMax [4]time.Time // per size index; zero = nothing written yet
	// maxHall is the hall (index into Generator.halls) of priorMax, or
	// everyHall when priorMax is a heartbeat tick, which reached every hall.
	maxHall  [4]int
	pool     [4][]pooled
	poolNext [4]int
}

// NewGenerator starts a generator; cfg must be valid (see Config.Validate).
func NewGenerator(cfg Config) *Generator {
	h := fnv.New64a()
	h.Write([]byte(cfg.Stream))
	streamHash := h.Sum64()
	g := &Generator{
		cfg:      cfg,
		rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), streamHash)),
		prefix:   streamPrefix(cfg.Stream),
		seedTag:  fmt.Sprintf("%08x", uint32(splitmix64(uint64(cfg.Seed))>>32)),
		elves:    make([]elfState, cfg.Elves),
		halls:    cfg.halls(),
		badKinds: badKinds(cfg),
	}
	for _, s := range record.Sizes {
		g.sizeTotal += cfg.SizeMix[s]
		g.sizeCum = append(g.sizeCum, g.sizeTotal)
	}
	for i := range g.elves {
		g.elves[i].name = ElfName(cfg.Stream, i)
	}
	if cfg.HeartbeatEvery > 0 {
		g.hbOn = true
		g.nextHB = floorTime(cfg.Start, cfg.HeartbeatEvery).Add(cfg.HeartbeatEvery)
		g.due = make([]time.Time, len(record.Sizes)*len(g.halls))
		g.fresh = make([]bool, len(g.due))
	}
	return g
}

// Generated is the number of records made so far, heartbeats not counted.
func (g *Generator) Generated() int { return g.n }

// Final is FinalHeartbeats for everything generated so far.
func (g *Generator) Final() []Message { return FinalHeartbeats(g.cfg, g.maxMadeAt) }

// Next makes the next record, preceded by the heartbeats that are due when
// event time reaches it. All of them belong to one elf (Message.Elf).
func (g *Generator) Next() []Message {
	cfg := g.cfg
	i := g.n
	g.n++
	elf := i % cfg.Elves
	nominal := cfg.Start.Add(time.Duration(i) * cfg.Spacing)

	var out []Message
	if g.hbOn && !nominal.Before(g.nextHB) {
		at := floorTime(nominal, cfg.HeartbeatEvery)
		out = g.beat(elf, at)
		g.nextHB = at.Add(cfg.HeartbeatEvery)
	}

	si := g.pickSize()
	r := g.rng.Float64()
	switch {
	case r < cfg.BadRate:
		out = append(out, g.badRecord(elf, si, g.takeHall(si), nominal))
		return out
	case r < cfg.BadRate+cfg.DupRate:
		if m, h, ok := g.dup(elf, si); ok {
			return append(out, g.note(elf, si, h, m))
		}
	case r < cfg.BadRate+cfg.DupRate+cfg.LateRate:
		e := &g.elves[elf]
		if prior := e.priorMax[si]; !prior.IsZero() {
			base := nominal
			if prior.Before(base) {
				base = prior
			}
			// window_end(made_at) + L <= made_at + W + L < prior: late by the
			// contract whatever came before it on its line from other elves.
			madeAt := base.Add(-(cfg.Lateness + 2*cfg.Window + g.randDur(cfg.Window)))
			h := e.maxHall[si]
			if h == everyHall {
				h = g.takeHall(si)
			}
			m := g.item(elf, si, h, madeAt)
			m.Kind = KindLate
			return append(out, g.note(elf, si, h, m))
		}
	}
	madeAt := nominal.Add(-g.randDur(cfg.Disorder))
	h := g.takeHall(si)
	return append(out, g.note(elf, si, h, g.item(elf, si, h, madeAt)))
}

// beat is the heartbeats of the tick at, from elf, in line order: one on
// each pending line that had an item since the last tick (so that event
// time moves with the busy lines, as it always did with sizes alone) or
// whose windows the tick closes (so that a line that went quiet has its
// windows closed by one heartbeat, and is pending no more).
func (g *Generator) beat(elf int, at time.Time) []Message {
	slices.Sort(g.pending)
	var out []Message
	var beaten [4][]int // halls
	still := g.pending[:0]
	for _, l := range g.pending {
		due := !at.Before(g.due[l])
		if due || g.fresh[l] {
			si, h := l/len(g.halls), l%len(g.halls)
			s := record.Sizes[si]
			out = append(out, g.note(elf, si, h, heartbeat(record.JoinLine(s, g.halls[h]), s, g.elves[elf].name, at, elf)))
			beaten[si] = append(beaten[si], h)
		}
		g.fresh[l] = false
		if due {
			g.due[l] = time.Time{}
		} else {
			still = append(still, l)
		}
	}
	g.pending = still
	e := &g.elves[elf]
	for si := range record.Sizes {
		switch {
		case !e.priorMax[si].Equal(at):
		case len(beaten[si]) == len(g.halls):
			e.maxHall[si] = everyHall
		default:
			// A late record goes to a line this tick reached; to each in
			// turn, tick after tick, not always to the first.
			g.beatTurn[si]++
			e.maxHall[si] = beaten[si][g.beatTurn[si]%len(beaten[si])]
		}
	}
	return out
}

// takeHall is the hall of the next record of size index si.
func (g *Generator) takeHall(si int) int {
	h := g.nextHall[si]
	g.nextHall[si] = (h + 1) % len(g.halls)
	return h
}

// note records a valid message of size index si in hall h in the elf's
// memory and returns it.
func (g *Generator) note(elf, si, h int, m Message) Message {
	e := &g.elves[elf]
	if m.MadeAt.After(e.priorMax[si]) || e.priorMax[si].IsZero() {
		e.priorMax[si] = m.MadeAt
		e.maxHall[si] = h
	}
	if m.MadeAt.After(g.maxMadeAt) || g.maxMadeAt.IsZero() {
		g.maxMadeAt = m.MadeAt
	}
	if g.hbOn && (m.Kind == KindToy || m.Kind == KindBox) {
		l := si*len(g.halls) + h
		closing := floorTime(m.MadeAt, g.cfg.Window).Add(g.cfg.Window + g.cfg.Lateness)
		if g.due[l].IsZero() {
			g.pending = append(g.pending, l)
		}
		g.fresh[l] = true
		if closing.After(g.due[l]) {
			g.due[l] = closing
		}
	}
	if m.Kind == KindToy || m.Kind == KindBox || m.Kind == KindLate {
		p := pooled{key: m.Key, value: m.Value, madeAt: m.MadeAt, hall: h}
		if len(e.pool[si]) < poolSize {
			e.pool[si] = append(e.pool[si], p)
		} else {
			e.pool[si][e.poolNext[si]] = p
			e.poolNext[si] = (e.poolNext[si] + 1) % poolSize
		}
	}
	return m
}

// dup repeats, key and value, a record of size index si the elf wrote not
// long ago; it returns the hall of its line too.
func (g *Generator) dup(elf, si int) (Message, int, bool) {
	pool := g.elves[elf].pool[si]
	if len(pool) == 0 {
		return Message{}, 0, false
	}
	p := pool[g.rng.IntN(len(pool))]
	return Message{Key: p.key, Value: p.value, Kind: KindDup, Elf: elf, MadeAt: p.madeAt}, p.hall, true
}

func (g *Generator) newID() string {
	g.ids++
	return fmt.Sprintf("%s-%s-%06d", g.prefix, g.seedTag, g.ids)
}

func (g *Generator) item(elf, si, h int, madeAt time.Time) Message {
	size := record.Sizes[si]
	name := g.elves[elf].name
	var v []byte
	kind := KindToy
	if g.cfg.Stream == record.Boxes {
		kind = KindBox
		v = mustJSON(record.Box{BoxID: g.newID(), Size: size, Elf: name, MadeAt: record.FormatTime(madeAt)})
	} else {
		v = mustJSON(record.Toy{ToyID: g.newID(), Kind: g.toyKind(), Size: size, Elf: name, MadeAt: record.FormatTime(madeAt)})
	}
	return Message{Key: []byte(record.JoinLine(size, g.halls[h])), Value: v, Kind: kind, Elf: elf, MadeAt: madeAt}
}

func (g *Generator) toyKind() string { return ToyKinds[g.rng.IntN(len(ToyKinds))] }

// badRecord makes the next dead letter in the cycle of badKinds, keyed by a
// line in hall h (or one that is not a line, when that is what is bad).
func (g *Generator) badRecord(elf, si, h int, nominal time.Time) Message {
	kind := g.badKinds[g.bad%len(g.badKinds)]
	variant := g.bad / len(g.badKinds)
	g.bad++

	stream := g.cfg.Stream
	size := record.Sizes[si]
	hall := g.halls[h]
	key := record.JoinLine(size, hall)
	name := g.elves[elf].name
	madeAt := any(record.FormatTime(nominal))
	var toyKind string
	if stream == record.Toys {
		toyKind = g.toyKind()
	}
	// fields builds the record's object with the usual field order; id nil
	// leaves the id field out.
	fields := func(id any, sizeV any, madeAtV any) []byte {
		var kv []any
		if id != nil {
			kv = append(kv, stream.IDField(), id)
		}
		if stream == record.Toys {
			kv = append(kv, "kind", toyKind)
		}
		kv = append(kv, "size", sizeV, "elf", name, "made_at", madeAtV)
		return object(kv...)
	}

	var v []byte
	switch kind {
	case "bad:truncated-json":
		full := fields(g.newID(), size, madeAt)
		v = full[:len(full)*2/3]
	case "bad:not-object":
		v = append(append([]byte("["), fields(g.newID(), size, madeAt)...), ']')
	case "bad:invalid-utf8":
		v = fields(g.newID(), size, madeAt)
		quoted := mustJSON(name)
		broken := append(append([]byte(`"`+name), 0xff, 0xfe), '"')
		v = bytes.Replace(v, quoted, broken, 1)
	case "bad:made-at":
		switch variant % 3 {
		case 0:
			madeAt = nominal.UTC().Format("2006-01-02 15:04:05")
		case 1:
			madeAt = "yesterday"
		default:
			madeAt = nominal.Unix()
		}
		v = fields(g.newID(), size, madeAt)
	case "bad:size":
		switch variant % 3 {
		case 0:
			v, key = fields(g.newID(), "XXL", madeAt), record.JoinLine("XXL", hall)
		case 1:
			v = fields(g.newID(), "XXL", madeAt)
		default:
			v = fields(g.newID(), strings.ToLower(size), madeAt)
		}
	case "bad:size-not-key":
		key = record.JoinLine(record.Sizes[(si+1+g.rng.IntN(len(record.Sizes)-1))%len(record.Sizes)], hall)
		v = fields(g.newID(), size, madeAt)
	case "bad:missing-id":
		v = fields(nil, size, madeAt)
	case "bad:empty-id":
		v = fields("", size, madeAt)
	case KindBadLine:
		key = size + "/" + badHall(hall, variant)
		v = fields(g.newID(), size, madeAt)
	}
	return Message{Key: []byte(key), Value: v, Kind: kind, Elf: elf}
}

// badHall is what follows the slash in the key of a bad:line record: a
// variant of hall that is not a well-formed hall, or not a hall alone.
func badHall(hall string, variant int) string {
	switch variant % 6 {
	case 0:
		return strings.ToUpper(hall[:1]) + hall[1:] // upper case
	case 1:
		return "" // nothing after the slash
	case 2:
		return hall + "/b" // a second slash
	case 3:
		return hall + "-" + strings.Repeat("x", 32-len(hall)) // 33 characters
	case 4:
		return "-" + hall // starts with '-'
	default:
		return strings.ReplaceAll(hall, "-", "_") // '_' is no hall character
	}
}

func (g *Generator) pickSize() int {
	n := g.rng.IntN(g.sizeTotal)
	for i, c := range g.sizeCum {
		if n < c {
			return i
		}
	}
	return len(g.sizeCum) - 1
}

// randDur is uniform in [0, d), or 0 when d <= 0.
func (g *Generator) randDur(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(g.rng.Int64N(int64(d)))
}

// floorTime is floor(t / d) * d over Unix time, as the contract's
// window_start. (time.Truncate counts from year 1, not from the epoch.)
func floorTime(t time.Time, d time.Duration) time.Time {
	ns := t.UnixNano()
	q := ns / int64(d)
	if ns%int64(d) != 0 && ns < 0 {
		q--
	}
	return time.Unix(0, q*int64(d)).UTC()
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// object encodes key/value pairs as one JSON object, keeping their order.
func object(kv ...any) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(kv[i]))
		b.WriteByte(':')
		b.Write(mustJSON(kv[i+1]))
	}
	b.WriteByte('}')
	return b.Bytes()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("producers: encode %T: %v", v, err)) // only plain strings and structs of strings
	}
	return b
}
