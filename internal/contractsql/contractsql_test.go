package contractsql

import (
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
