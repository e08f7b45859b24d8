package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// maxDepth is how many levels objects and arrays may nest in a record, the
// record's own object counting as one: the contract's limit, which is
// serde_json's (RisingWave's JSON parser).
const maxDepth = 127

// readObject reads value as the contract's "UTF-8 text holding one JSON
// object", strict JSON as the contract defines it, and calls each with every
// member, in order (duplicates included: the caller keeps the last, as
// encoding/json does). name is the member's name, unquoted, valid only
// during the call; raw is its value's JSON text, a slice of value (jsontext
// reads a bytes.Buffer in place), which the caller may keep. When value is
// not such a text it returns why, and each may have seen some of its
// members.
//
// It reads the text once, with jsontext (the tokenizer behind Go's
// encoding/json/v2), instead of decoding it into a map with encoding/json:
// three times faster, and a fraction of the allocations, on the packer's
// hottest path. jsontext already refuses what is not RFC 8259 (NaN and other
// literals, anything after the value), invalid UTF-8 and escaped lone
// surrogates; checkValue adds the two limits it lacks, numbers finite as
// doubles and maxDepth. FuzzObject checks all of it against strictObject, a
// decoder written from the contract's rules alone.
func readObject(value []byte, each func(name, raw []byte)) (why string) {
	rd := readers.Get().(*objectReader)
	defer rd.release()
	rd.buf = *bytes.NewBuffer(value)
	d := &rd.dec
	d.Reset(&rd.buf, jsontext.AllowDuplicateNames(true))
	// Refusals are rare: only then is it worth saying which rule failed.
	notObject := func(err error) string {
		switch {
		case !utf8.Valid(value):
			return "value is not valid UTF-8"
		case err != nil:
			return "value is not one JSON object: " + err.Error()
		}
		return "value is not one JSON object"
	}
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return notObject(err)
	}
	var scratch []byte
	for d.PeekKind() == '"' {
		quoted, err := d.ReadValue()
		if err != nil {
			return notObject(err)
		}
		name, ok := plainName(quoted)
		if !ok {
			// Escapes in a name: decode it as encoding/json does.
			s, ok := JSONString(json.RawMessage(quoted))
			if !ok {
				return notObject(nil)
			}
			scratch = append(scratch[:0], s...)
			name = scratch
		}
		raw, err := d.ReadValue()
		if err != nil {
			return notObject(err)
		}
		if why := checkValue(raw); why != "" {
			return why
		}
		each(name, raw)
	}
	if t, err := d.ReadToken(); err != nil || t.Kind() != '}' {
		return notObject(err)
	}
	// Exactly one value: nothing but white space may follow.
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return notObject(err)
	}
	return ""
}

// objectReader is a decoder and the buffer it reads, reused together: a
// Decoder keeps buffers and state worth keeping, and the buffer is what
// lets it read value in place.
type objectReader struct {
	dec jsontext.Decoder
	buf bytes.Buffer
}

var readers = sync.Pool{New: func() any { return new(objectReader) }}

// release returns rd to the pool without value: a value can be a slice of
// the consumer's whole fetched batch.
func (rd *objectReader) release() {
	rd.buf = bytes.Buffer{}
	rd.dec.Reset(&rd.buf)
	readers.Put(rd)
}

// plainName is a quoted name's text when it has no escapes.
func plainName(quoted []byte) ([]byte, bool) {
	if len(quoted) < 2 {
		return nil, false
	}
	body := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		return nil, false
	}
	return body, true
}

// checkValue applies the limits jsontext does not to raw, a member's value
// that jsontext has read (so valid JSON): every number finite as a double,
// and nesting within maxDepth. Strings and literals, nearly every value the
// elves write, cost one comparison.
func checkValue(raw []byte) (why string) {
	switch raw[0] {
	case '"', 't', 'f', 'n':
		return ""
	case '{', '[':
		return checkComposite(raw)
	}
	if !finiteNumber(raw) {
		return "a number is not finite as a double: " + rawOrMissing(raw)
	}
	return ""
}

// checkComposite walks a valid object or array, a member of the record's
// object, for its depth and its numbers. Its text is valid JSON, so a string
// ends at the first quote not escaped, and a number at the first byte that
// cannot be part of one.
func checkComposite(raw []byte) (why string) {
	depth := 1 // the record's own object
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '{' || c == '[':
			if depth++; depth > maxDepth {
				return "objects and arrays nest deeper than " + strconv.Itoa(maxDepth) + " levels"
			}
		case c == '}' || c == ']':
			depth--
		case c == '"':
			for i++; raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(raw) && isNumberByte(raw[j]) {
				j++
			}
			if !finiteNumber(raw[i:j]) {
				return "a number is not finite as a double: " + rawOrMissing(raw[i:j])
			}
			i = j - 1
		}
	}
	return ""
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// finiteNumber reports whether a JSON number (valid grammar) rounds to a
// finite IEEE-754 double. strconv.ParseFloat alone is not enough: it stops
// reading an exponent past 10,000, so "0.<100,000 zeros>1e99999999999",
// which is 10^99999899998, would come out as 0.01. Instead the magnitude
// decides: with the number written 0.d1d2... × 10^e (d1 not zero), it is
// below 10^308 when e <= 308, at least 10^309 when e >= 310, and the largest
// finite double is about 1.8 × 10^308; only e = 309 needs rounding, which
// strconv does on the significant digits alone.
func finiteNumber(num []byte) bool {
	end := len(num)
	if k := bytes.IndexAny(num, "eE"); k >= 0 {
		end = k
	}
	mant := bytes.TrimPrefix(num[:end], []byte("-"))
	first, e, point := -1, 0, false // first: where d1 is in mant
	for k, c := range mant {
		switch {
		case c == '.':
			point = true
		case first < 0 && c == '0':
			if point {
				e--
			}
		default:
			if first < 0 {
				first = k
			}
			if !point {
				e++
			}
		}
	}
	if first < 0 {
		return true // zero, whatever its exponent
	}
	switch e += exponent(num[end:]); {
	case e <= 308:
		return true
	case e >= 310:
		return false
	}
	sig := bytes.ReplaceAll(mant[first:], []byte("."), nil)
	f, err := strconv.ParseFloat("0."+string(sig)+"e309", 64)
	return err == nil || !math.IsInf(f, 0)
}

// exponent is the value of a JSON number's exponent part ("", or "e" or "E",
// an optional sign and digits), saturated far beyond any record's length so
// that adding a digit count to it cannot overflow.
func exponent(part []byte) int {
	if len(part) == 0 {
		return 0
	}
	part = part[1:]
	neg := part[0] == '-'
	if part[0] == '-' || part[0] == '+' {
		part = part[1:]
	}
	const saturated = 1 << 40
	n := 0
	for _, c := range part {
		if n < saturated {
			n = n*10 + int(c-'0')
		}
	}
	if neg {
		return -n
	}
	return n
}
