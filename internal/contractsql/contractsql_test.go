package contractsql

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
)

// TestContractRenders checks the shared text's files: names, order, and that
// W and L are substituted as integer microseconds.
func TestContractRenders(t *testing.T) {
	rels, err := Contract(contract.Params{Window: 1500 * time.Millisecond, Lateness: 333 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rels {
		names = append(names, r.Name)
		if strings.Contains(r.Body, "{{") {
			t.Errorf("%s: placeholder left in %q", r.Name, r.Body)
		}
	}
	for _, want := range append([]string{"np_grammar", "np_checked", "np_classified", "np_items"}, Results...) {
		if !slices.Contains(names, want) {
			t.Errorf("relation %s missing from %v", want, names)
		}
	}
	// Results last, dependencies first: a relation's body may only name
	// np_input and relations before it.
	for i, r := range rels {
		for _, later := range rels[i:] {
			if strings.Contains(r.Body, later.Name+" ") || strings.Contains(r.Body, later.Name+"\n") {
				if later.Name != r.Name {
					t.Errorf("%s refers to %s, which comes later", r.Name, later.Name)
				}
			}
		}
	}
	all := ""
	for _, r := range rels {
		all += r.Body
	}
	for _, lit := range []string{"1500000", "333"} {
		if !strings.Contains(all, lit) {
			t.Errorf("literal %s (W or L in µs) not found in the rendered text", lit)
		}
	}
}

func TestContractRefusesBadParameters(t *testing.T) {
	for _, c := range []struct{ w, l time.Duration }{
		{0, 0}, {-time.Second, 0}, {time.Second + time.Nanosecond, 0}, {time.Second, -1}, {time.Second, 1500 * time.Nanosecond},
	} {
		if _, err := Contract(contract.Params{Window: c.w, Lateness: c.l}); err == nil {
			t.Errorf("Contract(%v, %v) succeeded, want an error", c.w, c.l)
		}
	}
}

// TestTreeCoversEveryNumber: for every W, the numbers of the windows that
// the extreme made_at and made_at - L the contract allows fall in lie in
// [2^Levels, 2^(Levels+1)), which np_levels' covering argument needs; and a
// wider window needs fewer levels.
func TestTreeCoversEveryNumber(t *testing.T) {
	day := 23*time.Hour + 59*time.Minute
	first := time.Date(0, 1, 1, 0, 0, 0, 0, time.FixedZone("", int(day.Seconds()))).UnixMicro()
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.FixedZone("", -int(day.Seconds()))).UnixMicro()
	maxL := time.Duration(math.MaxInt64).Microseconds()
	floorDiv := func(x, w int64) int64 {
		q := x / w
		if x%w != 0 && x < 0 {
			q--
		}
		return q
	}
	for _, tc := range []struct {
		w      time.Duration
		levels int
	}{
		{time.Microsecond, 60},
		{7 * time.Microsecond, 57},
		{time.Second, 40},
		{10 * time.Second, 36},
		{time.Hour, 28},
		{time.Duration(math.MaxInt64).Truncate(time.Microsecond), 7},
	} {
		tree := TreeOf(contract.Params{Window: tc.w})
		if tree.Levels != tc.levels {
			t.Errorf("W %v: %d levels, want %d", tc.w, tree.Levels, tc.levels)
		}
		lo, hi := int64(1)<<tree.Levels, int64(1)<<(tree.Levels+1)
		for _, x := range []int64{first - maxL, first, 0, last - maxL, last} {
			if n := tree.Num0 + floorDiv(x, tc.w.Microseconds()); n < lo || n >= hi {
				t.Errorf("W %v: made_at - L = %d µs has number %d, outside [2^%d, 2^%d)", tc.w, x, n, tree.Levels, tree.Levels+1)
			}
		}
	}
}
