// Package english writes counts in English for people: "1 toy", "2 boxes".
package english

import "fmt"

// Count says n things, in the singular for one: Count(1, "toy") is "1 toy",
// Count(2, "box") is "2 boxes".
func Count[N ~int | ~int32 | ~int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	switch noun[len(noun)-1] {
	case 's', 'x':
		return fmt.Sprintf("%d %ses", n, noun)
	case 'y':
		if len(noun) > 1 && !isVowel(noun[len(noun)-2]) {
			return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
		}
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}
