package record

import (
	"math/big"
	"unicode/utf8"
)

// strictObject is the contract's "UTF-8 text holding one JSON object",
// written from its rules alone, for the fuzz tests to hold readObject
// against: RFC 8259's grammar, strings of valid Unicode (an escaped high
// surrogate must be followed by an escaped low one, a low one must follow a
// high one), numbers finite as IEEE-754 doubles, decided exactly with big
// numbers, objects and arrays at most 127 levels deep counting the record's
// own, and nothing but white space after the object. It uses
// neither jsontext nor strconv nor encoding/json, and favours plainness
// over speed. It returns the members in order: each name decoded, each value
// as its text.
func strictObject(v []byte) (members [][2]string, ok bool) {
	p := &strictParser{s: v}
	p.ws()
	if p.peek() != '{' || !p.object(&members) {
		return nil, false
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, false
	}
	return members, true
}

// strictMaxDepth is the contract's nesting limit, restated here so that the
// rules stay independent of the code under test.
const strictMaxDepth = 127

type strictParser struct {
	s     []byte
	i     int
	depth int
}

// peek is the next byte, 0 at the end (0 is never valid where peek is used).
func (p *strictParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *strictParser) eat(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// ws skips RFC 8259's four white-space characters, and nothing else.
func (p *strictParser) ws() {
	for p.eat(' ') || p.eat('\t') || p.eat('\n') || p.eat('\r') {
	}
}

func (p *strictParser) value() bool {
	switch c := p.peek(); {
	case c == '{':
		return p.object(nil)
	case c == '[':
		return p.array()
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '-' || isDigit(c):
		return p.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(p.s)-p.i >= len(lit) && string(p.s[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			return true
		}
	}
	return false
}

// object reads an object, appending its members to members when not nil.
func (p *strictParser) object(members *[][2]string) bool {
	if p.depth++; p.depth > strictMaxDepth || !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		p.depth--
		return true
	}
	for {
		p.ws()
		name, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		start := p.i
		if !p.value() {
			return false
		}
		if members != nil {
			*members = append(*members, [2]string{name, string(p.s[start:p.i])})
		}
		p.ws()
		if p.eat('}') {
			p.depth--
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

func (p *strictParser) array() bool {
	if p.depth++; p.depth > strictMaxDepth || !p.eat('[') {
		return false
	}
	p.ws()
	if p.eat(']') {
		p.depth--
		return true
	}
	for {
		p.ws()
		if !p.value() {
			return false
		}
		p.ws()
		if p.eat(']') {
			p.depth--
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

// str reads a string and returns it decoded.
func (p *strictParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	var out []byte
	for {
		if p.i >= len(p.s) {
			return "", false
		}
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			p.i++
			r, ok := p.escape()
			if !ok {
				return "", false
			}
			out = utf8.AppendRune(out, r)
		default:
			r, n := utf8.DecodeRune(p.s[p.i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			out = append(out, p.s[p.i:p.i+n]...)
			p.i += n
		}
	}
}

// escape reads what follows a backslash.
func (p *strictParser) escape() (rune, bool) {
	simple := map[byte]rune{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	if r, ok := simple[p.peek()]; ok {
		p.i++
		return r, true
	}
	if !p.eat('u') {
		return 0, false
	}
	hi, ok := p.hex4()
	switch {
	case !ok || 0xDC00 <= hi && hi <= 0xDFFF: // a low surrogate alone
		return 0, false
	case hi < 0xD800 || hi > 0xDBFF:
		return hi, true
	}
	if !p.eat('\\') || !p.eat('u') {
		return 0, false
	}
	lo, ok := p.hex4()
	if !ok || lo < 0xDC00 || lo > 0xDFFF {
		return 0, false
	}
	return 0x10000 + (hi-0xD800)<<10 + (lo - 0xDC00), true
}

func (p *strictParser) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.s[p.i : p.i+4] {
		switch {
		case isDigit(c):
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// number reads -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? and
// refuses it when it is not finite as a double.
func (p *strictParser) number() bool {
	p.eat('-')
	var intDigits, fracDigits, expDigits []byte
	digits := func() []byte {
		start := p.i
		for isDigit(p.peek()) {
			p.i++
		}
		return p.s[start:p.i]
	}
	if intDigits = digits(); len(intDigits) == 0 || len(intDigits) > 1 && intDigits[0] == '0' {
		return false
	}
	if p.eat('.') {
		if fracDigits = digits(); len(fracDigits) == 0 {
			return false
		}
	}
	expNeg := false
	if p.eat('e') || p.eat('E') {
		expNeg = p.eat('-')
		if !expNeg {
			p.eat('+')
		}
		if expDigits = digits(); len(expDigits) == 0 {
			return false
		}
	}
	return strictFinite(string(intDigits)+string(fracDigits), len(fracDigits), string(expDigits), expNeg)
}

// tooLarge is the least magnitude that rounds to infinity: 2^1024 - 2^970,
// halfway between the largest double (2^1024 - 2^971) and 2^1024. A tie
// rounds to the even significand, which is 2^1024's: infinity (IEEE 754,
// section 7.4).
var tooLarge = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 970))

// strictFinite decides whether digits × 10^(exp - fracLen) (exp written in
// decimal, expNeg its sign) rounds to a finite double, exactly.
func strictFinite(digits string, fracLen int, exp string, expNeg bool) bool {
	n, _ := new(big.Int).SetString(digits, 10)
	if n.Sign() == 0 {
		return true
	}
	x := new(big.Int)
	if exp != "" {
		x.SetString(exp, 10)
	}
	if expNeg {
		x.Neg(x)
	}
	x.Sub(x, big.NewInt(int64(fracLen)))
	// n × 10^x lies in [10^(m-1), 10^m) for m = len(n) + x: far from
	// tooLarge (about 1.8 × 10^308) the magnitude alone decides, which keeps
	// 10^x small enough to compute below.
	m := new(big.Int).Add(x, big.NewInt(int64(len(n.String()))))
	switch {
	case m.Cmp(big.NewInt(300)) < 0:
		return true
	case m.Cmp(big.NewInt(320)) > 0:
		return false
	}
	v := new(big.Rat).SetInt(n)
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), new(big.Int).Abs(x), nil))
	if x.Sign() >= 0 {
		v.Mul(v, pow)
	} else {
		v.Quo(v, pow)
	}
	return v.Cmp(new(big.Rat).SetInt(tooLarge)) < 0
}
