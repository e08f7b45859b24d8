// Package readback reads back what a run of the packer left in Kafka: the
// input records, as the packer read them, and its five result sets
// deduplicated by key. The demo, compare and the bench check a run with it,
// and so do the tests of every layer.
package readback

import (
	"context"
	"fmt"
	"slices"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
)

// Run is what a run left in Kafka: the input records, as the packer read
// them, and its five result sets deduplicated by key (outputs.Read).
type Run struct {
	Toys, Boxes []record.Input
	Goka        results.Set
	// DeadLetters are Goka.Dead's records whole, as the packer wrote them.
	DeadLetters []packer.DeadLetter
	Raw         outputs.Counts
}

// Inputs are the toys and then the boxes.
func (r Run) Inputs() []record.Input { return slices.Concat(r.Toys, r.Boxes) }

// Read reads the input topics and the packer's result topics of t.
func Read(ctx context.Context, kc kafkaconf.Config, t packer.Topics) (Run, error) {
	var r Run
	var err error
	if r.Toys, err = topicread.Inputs(ctx, kc, t.Toys, record.Toys); err != nil {
		return r, fmt.Errorf("read input topic %s: %w", t.Toys, err)
	}
	if r.Boxes, err = topicread.Inputs(ctx, kc, t.Boxes, record.Boxes); err != nil {
		return r, fmt.Errorf("read input topic %s: %w", t.Boxes, err)
	}
	out, err := outputs.Read(ctx, kc, t)
	if err != nil {
		return r, fmt.Errorf("read Goka's result topics: %w", err)
	}
	r.Goka, r.DeadLetters, r.Raw = out.Set, out.DeadLetters, out.Raw
	return r, nil
}
