package packer

import "github.com/northpole-workshop/northpole/internal/results"

// The result rows the packer writes, from a slot or a late record; each
// bounded to fit in one Kafka record (fit.go) beside key, the key it is
// written under.

func (p *Packer) packedRow(slot *slotState, ws, key string) *results.Packed {
	r := &results.Packed{Line: slot.Line, Size: lineSize(slot.Line), WindowStart: ws}
	r.ToyID, r.ToyIDCut = splitID(slot.Toy)
	r.BoxID, r.BoxIDCut = splitID(slot.Box)
	if room := p.lim.rowRoom(key, 2); mayNotFit(room, r.ToyID, r.BoxID) {
		fitText(room, []*string{&r.ToyID, &r.BoxID}, []*results.Cut{&r.ToyIDCut, &r.BoxIDCut})
	}
	return r
}

func (p *Packer) unpackedRow(slot *slotState, ws, key string) *results.Unpacked {
	r := &results.Unpacked{Line: slot.Line, Size: lineSize(slot.Line), WindowStart: ws}
	r.ToyID, r.ToyIDCut = splitID(slot.Toy)
	if room := p.lim.rowRoom(key, 1); mayNotFit(room, r.ToyID) {
		fitText(room, []*string{&r.ToyID}, []*results.Cut{&r.ToyIDCut})
	}
	return r
}

func (p *Packer) spareRow(slot *slotState, ws, key string) *results.Spare {
	r := &results.Spare{Line: slot.Line, Size: lineSize(slot.Line), WindowStart: ws}
	r.BoxID, r.BoxIDCut = splitID(slot.Box)
	if room := p.lim.rowRoom(key, 1); mayNotFit(room, r.BoxID) {
		fitText(room, []*string{&r.BoxID}, []*results.Cut{&r.BoxIDCut})
	}
	return r
}

func (p *Packer) lateRow(o *validRecord, key string) *results.Late {
	r := &results.Late{Stream: string(o.Stream), Partition: o.Partition, Offset: o.Offset, Line: o.Line, Size: lineSize(o.Line), MadeAt: o.madeAt()}
	r.ID, r.IDCut = splitID(o.ID)
	if room := p.lim.rowRoom(key, 1); mayNotFit(room, r.ID) {
		fitText(room, []*string{&r.ID}, []*results.Cut{&r.IDCut})
	}
	return r
}
