package results

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// The rows' JSON, appended without reflection: the packer writes a row for
// every pair, toy and box it reports, and encoding/json's reflection was a
// few per cent of its CPU. Each AppendJSON writes the members encoding/json
// writes for the row, in its order, with the same values once decoded
// (TestAppendJSONAsEncodingJSON); strings are quoted by jsontext, which, as
// encoding/json does, writes invalid UTF-8 as U+FFFD (but leaves <, > and &
// unescaped: the same JSON).

// AppendJSON appends the row's JSON to b.
func (r *Packed) AppendJSON(b []byte) []byte {
	b = appendMember(b, '{', "toy_id", r.ToyID)
	b = appendMember(b, ',', "box_id", r.BoxID)
	b = appendLine(b, r.Line, r.Size, r.WindowStart)
	b = appendCut(b, "toy_id_cut", r.ToyIDCut)
	b = appendCut(b, "box_id_cut", r.BoxIDCut)
	return append(b, '}')
}

// AppendJSON appends the row's JSON to b.
func (r *Unpacked) AppendJSON(b []byte) []byte {
	b = appendMember(b, '{', "toy_id", r.ToyID)
	b = appendLine(b, r.Line, r.Size, r.WindowStart)
	b = appendCut(b, "toy_id_cut", r.ToyIDCut)
	return append(b, '}')
}

// AppendJSON appends the row's JSON to b.
func (r *Spare) AppendJSON(b []byte) []byte {
	b = appendMember(b, '{', "box_id", r.BoxID)
	b = appendLine(b, r.Line, r.Size, r.WindowStart)
	b = appendCut(b, "box_id_cut", r.BoxIDCut)
	return append(b, '}')
}

// AppendJSON appends the row's JSON to b.
func (r *Late) AppendJSON(b []byte) []byte {
	b = appendMember(b, '{', "stream", r.Stream)
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(r.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = appendMember(b, ',', "id", r.ID)
	b = appendMember(b, ',', "line", r.Line)
	b = appendMember(b, ',', "size", r.Size)
	b = appendMember(b, ',', "made_at", r.MadeAt)
	b = appendCut(b, "id_cut", r.IDCut)
	return append(b, '}')
}

// appendLine appends the members that place an item's row: its line, size
// and window.
func appendLine(b []byte, line, size, windowStart string) []byte {
	b = appendMember(b, ',', "line", line)
	b = appendMember(b, ',', "size", size)
	return appendMember(b, ',', "window_start", windowStart)
}

// appendMember appends sep and the member name: value, a string. name is
// one of the rows' own, which need no escaping.
func appendMember(b []byte, sep byte, name, value string) []byte {
	b = append(b, sep, '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	// The error says only that invalid UTF-8 was replaced, as encoding/json
	// replaces it.
	b, _ = jsontext.AppendQuote(b, value)
	return b
}

// appendCut appends the member name: c, unless c is zero (omitzero).
func appendCut(b []byte, name string, c Cut) []byte {
	if c.IsZero() {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, `":{"bytes":`...)
	b = strconv.AppendInt(b, int64(c.Bytes), 10)
	b = appendMember(b, ',', "sha256", c.SHA256)
	return append(b, '}')
}
