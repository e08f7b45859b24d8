package bench

import (
	"slices"
)

// One run of a variant moves by up to a third from the next on a shared
// machine, more than many of the differences the bench is asked about.
// Rounds (Config.Rounds) run the whole variant list again and again; a
// variant is then judged by its ratio to the baseline of the same round,
// whose runs shared the machine's mood, and by the spread of that ratio
// over the rounds. A list in mirrored order (base,trace10,trace10,base)
// sets each variant equally early and late in its round.

// Spread is a figure's median and range over the rounds.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// RoundSummary is one variant over the rounds. Per round, its figure is
// the mean of its runs in that round (two in a mirrored list), and its
// ratio that mean over the mean of the round's baseline runs (the
// variant listed first).
type RoundSummary struct {
	Variant
	// Rounds counts the rounds in which the variant and the baseline both
	// measured something (a failed run counts for nothing).
	Rounds        int    `json:"rounds"`
	CPUPerEventUS Spread `json:"packer_cpu_us_per_event"`
	CPURatio      Spread `json:"cpu_per_event_ratio"`
}

// Summarize sums up rs, the runs of Run in their order, by variant (in
// the order they first ran). It returns nil for a single round. Live
// variants, which have no ratio, are left out.
func Summarize(rs []Result) []RoundSummary {
	if len(rs) == 0 || rs[len(rs)-1].Round < 2 {
		return nil
	}
	baseID := rs[0].ID
	type acc struct{ sum, n float64 }
	var order []Variant
	perRound := map[int]map[string]*acc{} // round -> variant ID -> CPU µs
	for _, r := range rs {
		if r.Error != "" || r.Live {
			continue
		}
		if !slices.ContainsFunc(order, func(v Variant) bool { return v.ID == r.ID }) {
			order = append(order, r.Variant)
		}
		if perRound[r.Round] == nil {
			perRound[r.Round] = map[string]*acc{}
		}
		a := perRound[r.Round][r.ID]
		if a == nil {
			a = &acc{}
			perRound[r.Round][r.ID] = a
		}
		a.sum += r.CPUPerEventUS
		a.n++
	}
	var out []RoundSummary
	for _, v := range order {
		var cpu, ratio []float64
		for _, byID := range perRound {
			a, base := byID[v.ID], byID[baseID]
			if a == nil || base == nil {
				continue
			}
			cpu = append(cpu, a.sum/a.n)
			ratio = append(ratio, (a.sum/a.n)/(base.sum/base.n))
		}
		if len(cpu) == 0 {
			continue
		}
		out = append(out, RoundSummary{Variant: v, Rounds: len(cpu), CPUPerEventUS: spreadOf(cpu), CPURatio: spreadOf(ratio)})
	}
	return out
}

// spreadOf is the median and range of xs (not empty); the median of an
// even count is the mean of the middle two.
func spreadOf(xs []float64) Spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Median: m, Min: s[0], Max: s[n-1]}
}
