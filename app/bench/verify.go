package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
)

// Verification is a run's check against the batch reference: a fast run
// that loses or doubles a record is fast for nothing.
type Verification struct {
	// Equal: the packer's five result sets, read back from Kafka, equal
	// those of the batch reference (contract.Compute, ClosedOnly) on the
	// input records read back, and no output key was written with two
	// values. Differences counts the differing rows, Conflicts those keys.
	Equal       bool  `json:"equal_to_reference"`
	Differences int   `json:"differences,omitempty"`
	Conflicts   int   `json:"conflicts,omitempty"`
	Rows        int   `json:"reference_rows"`
	VerifyMS    int64 `json:"verify_ms"`
}

// verdict is the check for people: "equal" or what differs.
func (v Verification) verdict() string {
	if v.Equal {
		return "equal"
	}
	return fmt.Sprintf("DIFFERS (%d rows, %d conflicts)", v.Differences, v.Conflicts)
}

// mismatch is nil when the results are equal to the reference.
func (v Verification) mismatch() error {
	if v.Equal {
		return nil
	}
	return fmt.Errorf("the results differ from the batch reference: %d rows differ, %d keys written with two values", v.Differences, v.Conflicts)
}

// verify reads back the input topics and the packer's outputs and compares
// them with the batch reference on those inputs, as compare does.
func (b *Bench) verify(ctx context.Context, kc kafkaconf.Config, cfg packer.Config) (Verification, error) {
	var v Verification
	t0 := time.Now()
	b.progress("  verifying: reading back the inputs and the outputs")
	rb, err := readback.Read(ctx, kc, cfg.Topics)
	if err != nil {
		return v, fmt.Errorf("verify: %w", err)
	}
	inputs := rb.Inputs()
	b.progress("  verifying: the batch reference on %d input records", len(inputs))
	ref := contract.Compute(inputs, cfg.Params, contract.ClosedOnly)
	for _, set := range results.SetNames {
		v.Rows += len(ref.Rows(set))
	}
	for _, d := range results.Compare(rb.Goka, ref) {
		v.Differences += len(d.OnlyA) + len(d.OnlyB)
	}
	v.Conflicts = rb.Raw.Conflicts
	v.Equal = v.Differences == 0 && v.Conflicts == 0
	v.VerifyMS = time.Since(t0).Milliseconds()
	b.progress("  verified in %.1f s: %d rows, %s", float64(v.VerifyMS)/1000, v.Rows, v.verdict())
	return v, nil
}

// check verifies a stopped packer's run with Config.Verify (not the hop's:
// it has no results) and sets r.Check; a run that differs is an error.
func (b *Bench) check(ctx context.Context, kc kafkaconf.Config, cfg packer.Config, v Variant, r *Result) error {
	if !b.cfg.Verify || v.Hop {
		return nil
	}
	check, err := b.verify(ctx, kc, cfg)
	if err != nil {
		return err
	}
	r.Check = &check
	return check.mismatch()
}

// writeChecks says, for every run checked with --verify, what the check
// found (the scale-out runs say it in their own table).
func writeChecks(w io.Writer, rs []Result) {
	round := rounds(rs)
	for _, r := range rs {
		if r.Check == nil {
			continue
		}
		if round(r) != "" {
			fmt.Fprintf(w, "round %d: ", r.Round)
		}
		fmt.Fprintf(w, "results of %s against the batch reference: %s, %d rows\n", r.Name, r.Check.verdict(), r.Check.Rows)
	}
}
