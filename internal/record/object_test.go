package record

import (
	"strings"
	"testing"
)

// nest is n levels of arrays around 0: nest(1) is "[0]".
func nest(n int) string { return strings.Repeat("[", n) + "0" + strings.Repeat("]", n) }

// nestObjects is n levels of objects around 0: nestObjects(1) is {"a":0}.
func nestObjects(n int) string { return strings.Repeat(`{"a":`, n) + "0" + strings.Repeat("}", n) }

// strictCase is one value of member "x" in an otherwise valid toy, at a
// boundary of the contract's strict JSON; ok says whether the record is
// valid.
type strictCase struct {
	name  string
	x     string
	ok    bool
	value string // the whole record, filled in by strictCases
}

func strictCases() []strictCase {
	cases := []strictCase{
		// Depth: the record's object is level 1.
		{name: "127 levels of arrays", x: nest(126), ok: true},
		{name: "128 levels of arrays", x: nest(127)},
		{name: "127 levels of objects", x: nestObjects(126), ok: true},
		{name: "128 levels of objects", x: nestObjects(127)},
		{name: "127 levels, mixed", x: strings.Repeat(`[{"a":`, 63) + "0" + strings.Repeat("}]", 63), ok: true},
		{name: "128 levels, mixed", x: strings.Repeat(`[{"a":`, 63) + "[]" + strings.Repeat("}]", 63)},
		{name: "127 levels then back up and 128", x: "[" + nest(125) + "," + nest(126) + "]"},
		{name: "10,001 levels (beyond jsontext's own limit)", x: nest(10_000)},
		// Numbers: finite as a double after rounding to nearest.
		{name: "the largest double", x: "1.7976931348623157e308", ok: true},
		{name: "minus the largest double", x: "-1.7976931348623157e308", ok: true},
		{name: "just below the halfway point rounds to the largest double", x: "1.797693134862315807e308", ok: true},
		{name: "just above the halfway point rounds to infinity", x: "1.797693134862315808e308"},
		{name: "1.8e308", x: "1.8e308"},
		{name: "-1.8e308", x: "-1.8e308"},
		{name: "1e400", x: "1e400"},
		{name: "-1e400", x: "-1e400"},
		{name: "1E+400", x: "1E+400"},
		{name: "an integer of 400 digits", x: "1" + strings.Repeat("0", 399)},
		{name: "an integer of 309 digits", x: "1" + strings.Repeat("0", 308), ok: true},
		{name: "an integer of 310 digits", x: "1" + strings.Repeat("0", 309)},
		{name: "1e-400 underflows to 0", x: "1e-400", ok: true},
		{name: "-1e-400", x: "-1e-400", ok: true},
		{name: "zero with a huge exponent", x: "0e99999999999", ok: true},
		{name: "a huge negative exponent", x: "1e-99999999999", ok: true},
		{name: "a huge exponent", x: "1e99999999999"},
		{name: "a tiny significand times a huge exponent", x: "0." + strings.Repeat("0", 9_700) + "1e10000000"},
		{name: "a large fraction brought back into range", x: "1" + strings.Repeat("0", 400) + "e-300", ok: true},
		{name: "1e400 inside an array", x: "[1, [2.5, 1e400]]"},
		{name: "1e400 inside an object", x: `{"a": {"b": -1e400}}`},
		{name: "numbers inside a string are text", x: `["1e400", {"1e400": "NaN"}]`, ok: true},
		// Strings: valid Unicode.
		{name: "a surrogate pair", x: `"\ud83d\ude00"`, ok: true},
		{name: "the last surrogate pair", x: `"\uDBFF\uDFFF"`, ok: true},
		{name: "a lone high surrogate", x: `"\ud800"`},
		{name: "a lone low surrogate", x: `"\udc00"`},
		{name: "a high surrogate then a letter escape", x: `"\ud800\u0041"`},
		{name: "a high surrogate then a letter", x: `"\ud800A"`},
		{name: "two high surrogates then a low one", x: `"\ud800\ud800\udc00"`},
		{name: "a low surrogate then a high one", x: `"\udc00\ud800"`},
		{name: "a lone surrogate in a nested string", x: `["ok", {"a": "\udfff"}]`},
		{name: "U+0000", x: `"\u0000"`, ok: true},
		{name: "U+FFFF", x: `"\uffff"`, ok: true},
		// Literals.
		{name: "NaN", x: "NaN"},
		{name: "Infinity", x: "Infinity"},
		{name: "-Infinity", x: "-Infinity"},
		{name: "NaN in an array", x: "[NaN]"},
		{name: "a leading plus", x: "+1"},
		{name: "a leading zero", x: "01"},
		{name: "a hexadecimal number", x: "0x10"},
	}
	for i, c := range cases {
		cases[i].value = `{"toy_id": "t1", "size": "M", "x": ` + c.x + `, "made_at": "2026-12-24T10:00:00Z"}`
	}
	// A lone surrogate in a name, not a value.
	cases = append(cases, strictCase{name: "a lone surrogate in a name", value: `{"toy_id": "t1", "size": "M", "\ud800": 1, "made_at": "2026-12-24T10:00:00Z"}`})
	return cases
}

// TestStrictJSON: at each boundary of the contract's strict JSON, Object,
// Parse and strictObject decide as the case says.
func TestStrictJSON(t *testing.T) {
	for _, c := range strictCases() {
		t.Run(c.name, func(t *testing.T) {
			fields, why := Object([]byte(c.value))
			if (fields != nil) != c.ok {
				t.Errorf("Object: accepted %v (%s), want %v", fields != nil, why, c.ok)
			}
			if _, ok := strictObject([]byte(c.value)); ok != c.ok {
				t.Errorf("strictObject: accepted %v, want %v", ok, c.ok)
			}
			_, err := Parse(Toys, []byte("M"), []byte(c.value))
			if c.ok && err != nil || !c.ok && ReasonOf(err) != ReasonMalformedJSON {
				t.Errorf("Parse: %v, want valid %v", err, c.ok)
			}
		})
	}
}

// finiteCases are numbers on both sides of the largest double, with what
// rounding to nearest, ties to even, makes of them.
var finiteCases = []struct {
	num    string
	finite bool
}{
	{"0", true}, {"-0", true}, {"0.0e0", true}, {"1", true}, {"-1.5E-3", true},
	{"1.7976931348623157e308", true},
	{"17976931348623157" + strings.Repeat("0", 292), true},
	{"0.17976931348623157e309", true},
	{"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791", true},
	// 2^1024 - 2^970, halfway between the largest double and 2^1024: a tie,
	// which goes to the even significand, 2^1024's.
	{"179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792", false},
	{"17976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633028641669288791094655554785194040263065748867150582068190890200070838367627385484581771153176447573027006985557136695962284291481986083493647529271907416844436551070434271155969950809304288017790417449779.2e1", false},
	{"1.797693134862315807e308", true}, {"1.797693134862315808e308", false},
	{"1.8e308", false}, {"-1.8e308", false}, {"1e309", false}, {"9.99e308", false},
	{"1e308", true}, {"0.1e309", true}, {"1e400", false}, {"-1e400", false},
	{"1e-400", true}, {"4.9e-324", true}, {"1e-99999999999", true}, {"0e99999999999", true},
	{"1e99999999999", false}, {"1e99999999999999999999999999999", false},
	{"0." + strings.Repeat("0", 9_700) + "1e10000000", false},
	{"0." + strings.Repeat("0", 9_700) + "1e9709", true},
	{"0." + strings.Repeat("0", 9_700) + "1e10010", false},
	{"1" + strings.Repeat("0", 400) + "e-300", true},
	{strings.Repeat("9", 308), true}, {strings.Repeat("9", 309), false},
}

func TestFiniteNumber(t *testing.T) {
	for _, c := range finiteCases {
		name := c.num
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if got := finiteNumber([]byte(c.num)); got != c.finite {
			t.Errorf("finiteNumber(%s) = %v, want %v", name, got, c.finite)
		}
		p := &strictParser{s: []byte(c.num)}
		if got := p.number(); got != c.finite || p.i != len(c.num) {
			t.Errorf("strictParser.number(%s) = %v, want %v", name, got, c.finite)
		}
	}
}

// TestObjectValuesAliasTheText: readObject hands out each member's value as a
// slice of the record's text, which Parse keeps without copying; a jsontext
// that copied (or reused a buffer across members) would break Parse.
func TestObjectValuesAliasTheText(t *testing.T) {
	value := []byte(`{"made_at": "2026-12-24T10:00:00Z", "size": "M", "toy_id": "t1", "n": [1, {"a": 2}]}`)
	var kept [][]byte
	if why := readObject(value, func(_, raw []byte) { kept = append(kept, raw) }); why != "" {
		t.Fatal(why)
	}
	if len(kept) != 4 {
		t.Fatalf("%d members, want 4", len(kept))
	}
	for i := range value {
		value[i] = '#'
	}
	for _, raw := range kept {
		if strings.Trim(string(raw), "#") != "" {
			t.Errorf("member value %q is not a slice of the record's text", raw)
		}
	}
}
