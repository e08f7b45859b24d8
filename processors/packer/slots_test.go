package packer

import (
	"fmt"
	"maps"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestWindowSlots: a window's slots are found by rank, in its first piece
// and past it, the places a recovery leaves empty (rank 2 here, and those
// before 600) count for nothing, each field is set once, and forgetting the
// window drops its slots and their count alone.
func TestWindowSlots(t *testing.T) {
	part := &tablePart{slots: map[windowRef]*windowSlots{}, state: &partState{}}
	m := sizeIndex("M")
	part.updateSlot(slotRef{"M/a", 10, 3}, &slotMsg{Stream: record.Toys, ID: "t3"})
	part.updateSlot(slotRef{"M/a", 10, 1}, &slotMsg{Stream: record.Boxes, ID: "b1"})
	part.updateSlot(slotRef{"M/a", 10, 1}, &slotMsg{Stream: record.Boxes, ID: "b1-again"})
	part.updateSlot(slotRef{"M/a", 10, 3}, &slotMsg{Close: true})
	part.updateSlot(slotRef{"M/a", 10, 600}, &slotMsg{Stream: record.Boxes, ID: "b600"})
	part.updateSlot(slotRef{"M/a", 20, 1}, &slotMsg{Stream: record.Toys, ID: "t1"})
	part.updateSlot(slotRef{"M/b", 10, 1}, &slotMsg{Stream: record.Toys, ID: "u1"})

	all := func() map[slotRef]slotState {
		out := map[slotRef]slotState{}
		part.eachSlot(func(ref slotRef, s *slotState) { out[ref] = *s })
		return out
	}
	want := map[slotRef]slotState{
		{"M/a", 10, 1}:   {Line: "M/a", Window: 10, Box: "b1"},
		{"M/a", 10, 3}:   {Line: "M/a", Window: 10, Toy: "t3", Closed: true},
		{"M/a", 10, 600}: {Line: "M/a", Window: 10, Box: "b600"},
		{"M/a", 20, 1}:   {Line: "M/a", Window: 20, Toy: "t1"},
		{"M/b", 10, 1}:   {Line: "M/b", Window: 10, Toy: "u1"},
	}
	if got := all(); !maps.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	if s := part.slotAt(slotRef{"M/a", 10, 2}); s != nil {
		t.Errorf("the empty place of rank 2 is a slot: %+v", *s)
	}
	if n := part.state.slots[m].Load(); n != 5 {
		t.Errorf("%d slots counted, want 5", n)
	}
	w := part.slots[windowRef{"M/a", 10}]
	for p, piece := range w.pieces[:len(w.pieces)-1] {
		if len(piece) != slotPiece || cap(piece) != slotPiece {
			t.Errorf("piece %d of %d holds %d places of %d, want %d", p, len(w.pieces), len(piece), cap(piece), slotPiece)
		}
	}
	if last := w.pieces[len(w.pieces)-1]; cap(last) != slotPiece {
		t.Errorf("the last piece, after the first, has room for %d places, want %d", cap(last), slotPiece)
	}
	if first := part.slots[windowRef{"M/a", 20}].pieces[0]; cap(first) > 4 {
		t.Errorf("a window of one slot has room for %d places", cap(first))
	}

	part.forgetWindow("M/a", closedWindow{Start: 10, Toys: 3, Boxes: 600})
	delete(want, slotRef{"M/a", 10, 1})
	delete(want, slotRef{"M/a", 10, 3})
	delete(want, slotRef{"M/a", 10, 600})
	if got := all(); !maps.Equal(got, want) {
		t.Fatalf("after forgetting M/a's window 10: slots %v, want %v", got, want)
	}
	if n := part.state.slots[m].Load(); n != 2 {
		t.Errorf("after forgetting M/a's window 10: %d slots counted, want 2", n)
	}
	part.forgetWindow("M/a", closedWindow{Start: 10, Toys: 3, Boxes: 600}) // again: nothing left to forget
	if n := part.state.slots[m].Load(); n != 2 {
		t.Errorf("forgetting a window twice: %d slots counted, want 2", n)
	}
}

// TestWindowSlotsSizedAsTheLast: a line's new window starts with room for
// as many slots as its last forgotten window had, up to a piece, and grows
// past that as any window does.
func TestWindowSlotsSizedAsTheLast(t *testing.T) {
	part := &tablePart{slots: map[windowRef]*windowSlots{}, keyClocks: map[string]*keyClock{"S": {}}}
	for k := 1; k <= 5; k++ {
		part.updateSlot(slotRef{"S", 0, k}, &slotMsg{Stream: record.Toys, ID: fmt.Sprint("t", k)})
	}
	part.forgetWindow("S", closedWindow{Start: 0, Toys: 5})
	part.updateSlot(slotRef{"S", 10, 1}, &slotMsg{Stream: record.Toys, ID: "u1"})
	if c := cap(part.slots[windowRef{"S", 10}].pieces[0]); c != 5 {
		t.Errorf("the next window has room for %d slots, want 5", c)
	}
	part.updateSlot(slotRef{"S", 10, 7}, &slotMsg{Stream: record.Toys, ID: "u7"})
	if s := part.slotAt(slotRef{"S", 10, 7}); s == nil || s.Toy != "u7" {
		t.Errorf("rank 7 of a window sized for 5: %+v", s)
	}
	if s := part.slotAt(slotRef{"S", 10, 1}); s == nil || s.Toy != "u1" {
		t.Errorf("rank 1 after the window grew: %+v", s)
	}

	for k := 1; k <= 3*slotPiece; k++ {
		part.updateSlot(slotRef{"S", 20, k}, &slotMsg{Stream: record.Boxes, ID: fmt.Sprint("b", k)})
	}
	part.forgetWindow("S", closedWindow{Start: 20, Boxes: 3 * slotPiece})
	part.updateSlot(slotRef{"S", 30, 1}, &slotMsg{Stream: record.Boxes, ID: "c1"})
	if c := cap(part.slots[windowRef{"S", 30}].pieces[0]); c != slotPiece {
		t.Errorf("after a window of %d slots the next has room for %d, want a piece, %d", 3*slotPiece, c, slotPiece)
	}
}
