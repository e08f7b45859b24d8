// Package contractsql is the packing contract written once in SQL: one
// SELECT per relation (sql/*.sql), over a normalized relation np_input that
// each engine builds its own way. PostgreSQL and an embedded SQLite run it
// (internal/sqlengine, as tables), RisingWave runs it as materialized views
// (package risingwave, which adds its Kafka sources and np_input). Every rule
// of the contract (validity and its reason, heartbeats, duplicates, lateness,
// ranks, pairing, window closing) is decided in this text; the wrappers only
// turn raw Kafka records into typed facts (see risingwave/README.md for the
// exact split).
package contractsql

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/bits"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/northpole-workshop/northpole/internal/contract"
)

//go:embed sql/*.sql
var contractFS embed.FS

// Relation is one relation of the shared contract text: its name (from the
// file name, e.g. 10_np_checked.sql is np_checked) and its SELECT, with W and
// L substituted.
type Relation struct {
	Name string
	Body string
}

// Input is the normalized relation every engine's wrapper provides.
const Input = "np_input"

// Result relations, in the order of the contract's five result sets.
const (
	Packed   = "np_packed"
	Unpacked = "np_unpacked"
	Spare    = "np_spare"
	Late     = "np_late"
	Dead     = "np_dead"
)

// Results are the five result relations.
var Results = []string{Packed, Unpacked, Spare, Late, Dead}

var fileName = regexp.MustCompile(`^[0-9]{2}_(np_[a-z_]+)\.sql$`)

// Contract renders the shared text for the contract's parameters p (W and L),
// relations in dependency order (the order of their file names). W and L are written into
// the text as integer microseconds: RisingWave cannot join a streaming query
// with a parameters table (that would be a nested-loop join), and literals
// keep the text identical for every engine.
func Contract(p contract.Params) ([]Relation, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("render contract SQL: %w", err)
	}
	entries, err := fs.ReadDir(contractFS, "sql")
	if err != nil {
		return nil, fmt.Errorf("read embedded contract SQL: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	tree := TreeOf(p)
	fill := strings.NewReplacer(
		"{{W}}", strconv.FormatInt(p.Window.Microseconds(), 10),
		"{{L}}", strconv.FormatInt(p.Lateness.Microseconds(), 10),
		"{{LEVELS}}", strconv.Itoa(tree.Levels),
		"{{NUM0}}", strconv.FormatInt(tree.Num0, 10),
	)
	var out []Relation
	for _, n := range names {
		m := fileName.FindStringSubmatch(n)
		if m == nil {
			return nil, fmt.Errorf("contract SQL file %q: name must be NN_np_name.sql", n)
		}
		b, err := contractFS.ReadFile(path.Join("sql", n))
		if err != nil {
			return nil, fmt.Errorf("read contract SQL %s: %w", n, err)
		}
		body := fill.Replace(string(b))
		if strings.Contains(body, "{{") {
			return nil, fmt.Errorf("contract SQL %s: unknown placeholder left after substituting {{W}}, {{L}}, {{LEVELS}} and {{NUM0}}", n)
		}
		// Each relation is sent as one statement, and the RisingWave script
		// separates statements with ';'.
		if strings.Contains(body, ";") {
			return nil, fmt.Errorf("contract SQL %s: must not contain ';' (one SELECT per file)", n)
		}
		out = append(out, Relation{Name: m[1], Body: strings.TrimRight(body, "\n")})
	}
	return out, nil
}

// Tree is the shape of the tree of blocks over window numbers that
// np_levels lists (see its text): window q, the one that starts at q × W, has
// the number Num0 + q, and Levels levels, 0 to Levels-1, cover every number.
type Tree struct {
	Levels int
	Num0   int64
}

// madeBound bounds |made_at - L| in microseconds for every made_at the
// contract accepts (years 0000 to 9999, offsets within a day: under 2^57.9)
// and every L a time.Duration holds (under 2^53.1).
const madeBound = 1 << 58

// TreeOf is the tree for p's W: R = ceil(2^58 / W) bounds |q| for every
// window q a made_at or a made_at - L falls in, and with Levels - 1 the bit
// length of R and Num0 = 3 × 2^(Levels-1), every number lies in
// [2^Levels, 2^(Levels+1)): any two numbers first differ at a bit below
// Levels. A wider window needs fewer levels: 36 for 10 s, 60 for 1 µs.
func TreeOf(p contract.Params) Tree {
	w := p.Window.Microseconds()
	r := (madeBound + w - 1) / w
	k := bits.Len64(uint64(r)) + 1
	return Tree{Levels: k, Num0: 3 << (k - 1)}
}

// Hash is a short fingerprint of a relation's body, printed next to each
// statement so that people (and the drift test) can see that every engine ran
// the same text.
func Hash(body string) string {
	h := sha256.Sum256([]byte(body))
	return hex.EncodeToString(h[:8])
}

// CreateStatement is how every engine creates one relation of the shared text:
// "CREATE <kind> <name> AS" on its own line, then the body unchanged. Only
// kind differs per engine (TABLE for the batch engines, MATERIALIZED VIEW for
// RisingWave); SplitCreate undoes it.
func CreateStatement(kind string, r Relation) string {
	return "CREATE " + kind + " " + r.Name + " AS\n" + r.Body
}

// SplitCreate returns the relation name and the body of a statement made by
// CreateStatement, or ok false.
func SplitCreate(stmt string) (name, body string, ok bool) {
	head, body, found := strings.Cut(stmt, " AS\n")
	if !found || !strings.HasPrefix(head, "CREATE ") || strings.Contains(head, "\n") {
		return "", "", false
	}
	f := strings.Fields(head)
	return f[len(f)-1], body, true
}
