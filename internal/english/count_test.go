package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "toy", "1 toy"}, {0, "toy", "0 toys"}, {2080, "toy", "2080 toys"},
		{1, "box", "1 box"}, {5, "box", "5 boxes"},
		{1, "system", "1 system"}, {4, "size class", "4 size classes"},
		{2, "entry", "2 entries"}, {3, "key", "3 keys"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
