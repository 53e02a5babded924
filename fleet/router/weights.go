package router

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Weights are router weights: tenant class → region → weight. A class's total is its traffic
// in the router's units; a region absent from a class's map has weight 0 there.
type Weights map[string]map[string]int

// Clone returns a deep copy.
func (w Weights) Clone() Weights {
	out := make(Weights, len(w))
	for c, m := range w {
		out[c] = maps.Clone(m)
	}
	return out
}

// Total is the sum of a class's weights.
func (w Weights) Total(class string) int {
	t := 0
	for _, v := range w[class] {
		t += v
	}
	return t
}

// Equal reports whether two weight sets route the same way (absent and 0 are equal).
func (w Weights) Equal(o Weights) bool {
	for _, pair := range [][2]Weights{{w, o}, {o, w}} {
		for c, m := range pair[0] {
			for r, v := range m {
				if pair[1][c][r] != v {
					return false
				}
			}
		}
	}
	return true
}

// Apply overlays delta (complete vectors of some classes) onto w, in place.
func (w Weights) Apply(delta Weights) {
	for c, m := range delta {
		w[c] = maps.Clone(m)
	}
}

// Share is a region's percentage of a class's traffic.
func (w Weights) Share(class, region string) float64 {
	t := w.Total(class)
	if t == 0 {
		return 0
	}
	return 100 * float64(w[class][region]) / float64(t)
}

// State is a router server's administrative state for one class.
type State string

// Server states: ready takes new sessions by weight; drain takes no new sessions but lets
// in-flight ones finish; maint is cut off (takes nothing, not even persistent connections).
const (
	Ready State = "ready"
	Drain State = "drain"
	Maint State = "maint"
)

// States are the server states per class and region; an absent entry is Ready.
type States map[string]map[string]State

// Get returns a state, Ready when absent.
func (s States) Get(class, region string) State {
	if v, ok := s[class][region]; ok && v != "" {
		return v
	}
	return Ready
}

// Set records a state.
func (s States) Set(class, region string, v State) {
	if s[class] == nil {
		s[class] = map[string]State{}
	}
	s[class][region] = v
}

// Clone returns a deep copy.
func (s States) Clone() States {
	out := make(States, len(s))
	for c, m := range s {
		out[c] = maps.Clone(m)
	}
	return out
}

// Apply overlays delta onto s, in place.
func (s States) Apply(delta States) {
	for c, m := range delta {
		for r, v := range m {
			s.Set(c, r, v)
		}
	}
}

// Equal reports whether two state sets are the same (absent and Ready are equal).
func (s States) Equal(o States) bool {
	for _, pair := range [][2]States{{s, o}, {o, s}} {
		for c, m := range pair[0] {
			for r := range m {
				if pair[0].Get(c, r) != pair[1].Get(c, r) {
					return false
				}
			}
		}
	}
	return true
}

// RouterState is what a router driver reads and writes: weights and server states, and what a
// driver whose withdraw deletes a region's entry keeps of it (Kept).
type RouterState struct {
	Weights Weights `json:"weights"`
	States  States  `json:"states,omitempty"`
	// Kept is, per class and region, the router's own entry for the region as the driver read it
	// (Route 53's whole record sets), opaque to all but the driver. It is for drivers whose
	// withdraw deletes the entry: the executor journals it with every state it records and hands
	// back, in every state it applies, the newest it has seen of each region — in this run or in
	// an earlier run's journal — so a withdrawn region is recreated exactly as it was. A driver
	// treats it as untrusted input (it came from a journal) and checks it before use.
	Kept Kept `json:"kept,omitempty"`
}

// Kept is class → region → a driver's own record of the region's entry (JSON).
type Kept map[string]map[string]json.RawMessage

// Clone returns a deep copy.
func (k Kept) Clone() Kept {
	if k == nil {
		return nil
	}
	out := make(Kept, len(k))
	for c, m := range k {
		out[c] = make(map[string]json.RawMessage, len(m))
		for r, v := range m {
			out[c][r] = slices.Clone(v)
		}
	}
	return out
}

// Merge adds to k every entry of o that k does not have (k's own entries are newer), in place;
// it returns k (a new map when k is nil and o is not empty).
func (k Kept) Merge(o Kept) Kept {
	for c, m := range o {
		for r, v := range m {
			if _, ok := k[c][r]; ok {
				continue
			}
			if k == nil {
				k = Kept{}
			}
			if k[c] == nil {
				k[c] = map[string]json.RawMessage{}
			}
			k[c][r] = slices.Clone(v)
		}
	}
	return k
}

// Clone returns a deep copy.
func (r RouterState) Clone() RouterState {
	return RouterState{Weights: r.Weights.Clone(), States: r.States.Clone(), Kept: r.Kept.Clone()}
}

// Diff describes how got differs from want, one line per class and region, sorted; nil when
// they route the same way. Only the classes and regions of want are compared, plus any weight
// got gives a region want does not name.
func Diff(want, got RouterState) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(want.Weights)) {
		regions := map[string]bool{}
		for r := range want.Weights[c] {
			regions[r] = true
		}
		for r := range got.Weights[c] {
			regions[r] = true
		}
		for r := range want.States[c] {
			regions[r] = true
		}
		names := make([]string, 0, len(regions))
		for r := range regions {
			names = append(names, r)
		}
		sort.Strings(names)
		for _, r := range names {
			if a, b := want.Weights[c][r], got.Weights[c][r]; a != b {
				out = append(out, fmt.Sprintf("%s/%s: weight %d, want %d", c, r, b, a))
			}
			if a, b := want.States.Get(c, r), got.States.Get(c, r); a != b {
				out = append(out, fmt.Sprintf("%s/%s: state %s, want %s", c, r, b, a))
			}
		}
	}
	return out
}

// Text is the weights as plain text for progress lines: "class: region w, region w; class: …",
// classes and regions sorted (never a Go map's %v).
func (w Weights) Text() string {
	var parts []string
	for _, c := range slices.Sorted(maps.Keys(w)) {
		var cells []string
		for _, r := range slices.Sorted(maps.Keys(w[c])) {
			cells = append(cells, fmt.Sprintf("%s %d", r, w[c][r]))
		}
		parts = append(parts, c+": "+strings.Join(cells, ", "))
	}
	return strings.Join(parts, "; ")
}
