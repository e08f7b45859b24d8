package packer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Every record the packer writes must fit in one Kafka record, or its write
// fails and the packer stops on the input that caused it, again after every
// restart. The input is bounded only by the input topic's limit, and what the
// packer writes carries parts of it: ids in loops, tables and result rows, the
// raw value in a dead letter, JSON-escaped (a '<' becomes six bytes) or base64
// (four bytes for three). So every such part is bounded here, deterministically
// (a replay writes the same bytes): a part that does not fit keeps its start,
// and a results.Cut beside it gives its whole length and SHA-256.
const (
	// recordOverhead is a record batch's header (61 bytes in format v2) and
	// one record's framing, rounded up.
	recordOverhead = 128
	// headerReserve is kept for the record headers the trace middleware
	// writes: traceparent, a tracestate of at most 32 members (OTel Go's
	// limit, each key and value at most 256 bytes) and baggage of at most
	// 8,192 bytes, both copied from the input's headers.
	headerReserve = 32 << 10
	// minRecordBytes is the smallest record limit the packer runs with.
	minRecordBytes = 64 << 10
	// keyIDMax: ids longer than this are keyed by their digest, so that keys
	// stay short whatever the id.
	keyIDMax = 128
	// detailMax bounds a dead letter's explanation, which may quote input.
	detailMax = 1 << 10
	// cutFieldMax is what one "…_cut" member adds to a JSON row.
	cutFieldMax = len(`,"value_base64_cut":{"bytes":,"sha256":""}`) + 20 + 64
)

// limits are the record sizes the packer's writes must fit in.
type limits struct {
	// record is the largest record: the producer's limit, or the smallest
	// max.message.bytes of the topics the packer writes, if lower.
	record int
}

func defaultLimits() limits { return limits{record: kafkaconf.ProducerMaxBytes} }

// room is what a record's key and value may take together.
func (l limits) room() int { return l.record - recordOverhead - headerReserve }

// idMax is the longest id the pipeline carries whole: a slot holds two ids,
// and a few small fields beside them.
func (l limits) idMax() int { return (l.room() - 4<<10) / 2 }

// readLimits asks the brokers for the limits of every topic the packer writes.
// A broker that will not say (no DescribeConfigs permission) leaves the
// producer's limit, with a warning: a record then too large for its topic
// stops the packer, but is not lost.
func (p *Packer) readLimits(ctx context.Context) (limits, error) {
	c := p.cfg
	topics := []string{c.Topics.Packed, c.Topics.Unpacked, c.Topics.Spare, c.Topics.Late, c.Topics.Dead}
	for _, it := range c.internalTopics() {
		topics = append(topics, it.name)
	}
	l := defaultLimits()
	maxes, err := kafkaadmin.MaxMessageBytes(ctx, c.Kafka, topics...)
	if err != nil {
		if ctx.Err() != nil {
			return limits{}, err
		}
		p.log.Warn("cannot read the record size limits of the topics the packer writes; assuming the producer's",
			"bytes", l.record, "err", err)
		return l, nil
	}
	smallest := ""
	for _, t := range topics {
		if n := maxes[t]; n < l.record {
			l.record, smallest = n, t
		}
	}
	if l.record < minRecordBytes {
		return limits{}, fmt.Errorf("topic %q accepts records of at most %d bytes (max.message.bytes); the packer needs at least %d",
			smallest, l.record, minRecordBytes)
	}
	return l, nil
}

// Ids longer than idMax travel through the pipeline as a carried cut: a
// string that starts with 0xff, which no valid id can (ids are decoded from
// UTF-8 JSON), then the whole id's digest and length and its start. Carrying
// it in the id string keeps every internal message and its encoding as it is.
const carriedMark = "\xff"

// carryID returns id, or its carried cut when it is longer than max.
func carryID(id string, max int) string {
	if len(id) <= max {
		return id
	}
	c := results.CutOf([]byte(id))
	head := carriedMark + c.SHA256 + " " + strconv.Itoa(c.Bytes) + " "
	return head + prefixUTF8(id, max-len(head))
}

// splitID returns the id's text and, for a carried cut, its Cut.
func splitID(id string) (string, results.Cut) {
	if !strings.HasPrefix(id, carriedMark) {
		return id, results.Cut{}
	}
	sum, rest, _ := strings.Cut(id[len(carriedMark):], " ")
	n, text, _ := strings.Cut(rest, " ")
	bytes, _ := strconv.Atoi(n)
	return text, results.Cut{Bytes: bytes, SHA256: sum}
}

// keyID is the id as it appears in keys: itself when short, else the
// digest of the whole id. ok is false for a digest, which callers mark with
// a different separator, so that no id can pose as another's digest.
func keyID(id string) (k string, ok bool) {
	text, c := splitID(id)
	if c.IsZero() && len(text) <= keyIDMax {
		return text, true
	}
	if c.IsZero() {
		sum := sha256.Sum256([]byte(text))
		return hex.EncodeToString(sum[:]), false
	}
	return c.SHA256, false
}

// prefixUTF8 is the longest start of s of at most n bytes that does not end
// inside a UTF-8 sequence.
func prefixUTF8[T string | []byte](s T, n int) T {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// jsonLen is the length of s as encoding/json writes it inside quotes
// (HTML-safe escaping, as json.Marshal does): the dead letters' length, and
// a bound on the rows' (results.Packed.AppendJSON quotes with jsontext,
// which escapes no more).
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		n += jsonRuneLen(r, w)
		i += w
	}
	return n
}

// jsonRuneLen is what encoding/json writes for the rune r that took w bytes.
func jsonRuneLen(r rune, w int) int {
	switch {
	case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6 // \u00XX, \u2028
	case r == utf8.RuneError && w == 1:
		return 6 // \ufffd for a byte that is not UTF-8
	default:
		return w
	}
}

// prefixJSON is the longest start of s whose JSON text takes at most n bytes.
func prefixJSON(s string, n int) string {
	used := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if used += jsonRuneLen(r, w); used > n {
			return s[:i]
		}
		i += w
	}
	return s
}

// shares splits room among fields that need need[i] bytes each: all of it
// when they fit, otherwise max-min fair shares (a short field keeps what it
// needs, the long ones share the rest equally).
func shares(room int, need []int) []int {
	out := make([]int, len(need))
	left, open := max(room, 0), len(need)
	done := make([]bool, len(need))
	for open > 0 {
		share := left / open
		progress := false
		for i, n := range need {
			if !done[i] && n <= share {
				out[i], done[i] = n, true
				left -= n
				open--
				progress = true
			}
		}
		if !progress {
			for i := range need {
				if !done[i] {
					out[i], done[i] = share, true
				}
			}
			break
		}
	}
	return out
}

// mayNotFit is false when texts fit in room whatever they hold: encoding/json
// writes at most six bytes for one. It spares the rows of ordinary ids (all
// of them, in practice) the measuring and the slices of fitText.
func mayNotFit(room int, texts ...string) bool {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return 6*n > room
}

// fitText cuts the text fields *f[i] so that their JSON text takes at most
// room bytes together. A field it cuts gets, in *cut[i], the Cut of its whole
// value, unless it has one already (an id the pipeline carried cut).
func fitText(room int, f []*string, cut []*results.Cut) {
	need := make([]int, len(f))
	total := 0
	for i, s := range f {
		need[i] = jsonLen(*s)
		total += need[i]
	}
	if total <= room {
		return
	}
	for i, n := range shares(room, need) {
		if need[i] <= n {
			continue
		}
		if cut[i].IsZero() {
			*cut[i] = results.CutOf([]byte(*f[i]))
		}
		*f[i] = prefixJSON(*f[i], n)
	}
}

// rowRoom is what the text fields of a result row may take: the room less
// the key, the row's other members (a size, a time, names: fixedRow) and a
// "_cut" member for each field.
func (l limits) rowRoom(key string, fields int) int {
	const fixedRow = 256
	return l.room() - len(key) - fixedRow - fields*cutFieldMax
}

// fitDead bounds a dead letter: its detail to detailMax, and its key and
// value together to what is left of the room. A value that is not UTF-8 is
// written in base64, four bytes for every three.
func (p *Packer) fitDead(dl *DeadLetter, key string) {
	dl.Detail = prefixJSON(dl.Detail, detailMax)
	const fixedDead = 512 // the other members, the topic name among them
	room := p.lim.room() - len(key) - fixedDead - len(dl.Topic) - detailMax - 2*cutFieldMax
	keyNeed := jsonLen(dl.Key) + base64Len(len(dl.KeyBase64))
	valueNeed := base64Len(len(dl.ValueBase64))
	if dl.Value != nil {
		valueNeed = jsonLen(*dl.Value)
	}
	if keyNeed+valueNeed > room {
		p.cutDead(dl, room, keyNeed, valueNeed)
	}
	if !dl.KeyCut.IsZero() || !dl.ValueCut.IsZero() {
		dl.Detail += "; cut to fit in one Kafka record (see key_cut, value_cut)"
	}
}

func (p *Packer) cutDead(dl *DeadLetter, room, keyNeed, valueNeed int) {
	sh := shares(room, []int{keyNeed, valueNeed})
	if keyNeed > sh[0] {
		dl.KeyCut = results.CutOf(dl.rawKey())
		if dl.KeyBase64 != nil {
			dl.KeyBase64 = dl.KeyBase64[:sh[0]/4*3]
		} else {
			dl.Key = prefixJSON(dl.Key, sh[0])
		}
	}
	if valueNeed > sh[1] {
		if dl.ValueCut.IsZero() {
			dl.ValueCut = results.CutOf(dl.rawValue())
		}
		if dl.Value != nil {
			v := prefixJSON(*dl.Value, sh[1])
			dl.Value = &v
		} else {
			dl.ValueBase64 = dl.ValueBase64[:sh[1]/4*3]
		}
	}
}

func base64Len(n int) int { return (n + 2) / 3 * 4 }

// fitRaw cuts the raw value that a toy or box carries, for its dead letter
// should it be a duplicate, so that the record carrying it (a stray's loop
// record, the clock's decision) fits in one Kafka record beside the id and
// reserve bytes of other fields (the windows a decision closes).
func (p *Packer) fitRaw(obs *validRecord, reserve int) {
	if room := p.lim.room() - 2*len(obs.ID) - len(obs.Key) - reserve - 512; len(obs.Raw) > room {
		if obs.RawCut.IsZero() {
			obs.RawCut = results.CutOf(obs.Raw)
		}
		obs.Raw = prefixUTF8(obs.Raw, max(room, 0))
	}
}
