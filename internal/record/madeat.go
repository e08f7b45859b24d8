package record

import (
	"fmt"
	"time"
)

// dateTime is an RFC 3339 date-time's fields as written.
type dateTime struct {
	year, month, day, hour, min, sec, nsec int
	offset                                 int  // seconds east of UTC
	zulu                                   bool // Z (or z) rather than a numeric offset
}

// scanRFC3339 reads s by the grammar of RFC 3339 section 5.6 (date-time),
// with each field's range: month 01-12, day 01-31, hour 00-23, minute and
// second 00-59, an offset of at most 23:59. ok is false when s does not follow
// it. Fraction digits past the ninth are dropped (truncated, not rounded).
// The calendar (February 30th) is dateTime.time's to check.
//
// It is written out, rather than a regular expression and time.Parse,
// because every input record's made_at passes through it, as the bytes of
// the record: the expression was 4 % of the packer's CPU, and time.Parse
// with the string it needs a quarter of the input's parse. TestIsRFC3339
// and FuzzIsRFC3339 hold it to the expression the SQL engines run
// (internal/contractsql/sql/10_np_grammar.sql), FuzzParseMadeAt to time.Parse.
func scanRFC3339[T string | []byte](s T) (d dateTime, ok bool) {
	const minLen = len("2006-01-02T15:04:05Z")
	if len(s) < minLen || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return d, false
	}
	var y, mo, dd, h, mi, sec bool
	d.year, y = digits(s[0:4])
	d.month, mo = twoDigits(s[5:7], 1, 12)
	d.day, dd = twoDigits(s[8:10], 1, 31)
	d.hour, h = twoDigits(s[11:13], 0, 23)
	d.min, mi = twoDigits(s[14:16], 0, 59)
	d.sec, sec = twoDigits(s[17:19], 0, 59)
	if !(y && mo && dd && h && mi && sec) {
		return d, false
	}
	rest := s[19:]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && isDigit(rest[n]) {
			if n <= 9 {
				d.nsec = d.nsec*10 + int(rest[n]-'0')
			}
			n++
		}
		if n == 1 {
			return d, false
		}
		for range 9 - min(n-1, 9) {
			d.nsec *= 10
		}
		rest = rest[n:]
	}
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		d.zulu = true
		return d, true
	case len(rest) == len("+00:00") && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, okh := twoDigits(rest[1:3], 0, 23)
		om, okm := twoDigits(rest[4:6], 0, 59)
		d.offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			d.offset = -d.offset
		}
		return d, okh && okm
	}
	return d, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits is the value of s when s is all ASCII digits.
func digits[T string | []byte](s T) (int, bool) {
	v := 0
	for i := range len(s) {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

// twoDigits is the value of s, two digits, when it is in [lo, hi].
func twoDigits[T string | []byte](s T, lo, hi int) (int, bool) {
	v, ok := digits(s)
	return v, ok && lo <= v && v <= hi
}

// time is the instant d names, in its offset (UTC for Z), or an error for a
// day its month does not have.
func (d dateTime) time() (time.Time, error) {
	if n := daysIn(d.month, d.year); d.day > n {
		return time.Time{}, fmt.Errorf("%s %04d has %d days", time.Month(d.month), d.year, n)
	}
	t := time.Date(d.year, time.Month(d.month), d.day, d.hour, d.min, d.sec, d.nsec, time.UTC)
	if d.zulu {
		return t, nil
	}
	return t.Add(-time.Duration(d.offset) * time.Second).In(time.FixedZone("", d.offset)), nil
}

// daysIn is the number of days of month (1-12) in year, in the proleptic
// Gregorian calendar that RFC 3339 and Go's time package use.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// ParseMadeAt parses an RFC 3339 date-time strictly: the grammar, then the
// calendar. Leap seconds (:60) are refused, as Go's time package cannot
// represent them. Z gives a time in UTC, a numeric offset one in that
// offset.
func ParseMadeAt(s string) (time.Time, error) { return parseMadeAt(s) }

func parseMadeAt[T string | []byte](s T) (time.Time, error) {
	d, ok := scanRFC3339(s)
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 date-time", s)
	}
	t, err := d.time()
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}
