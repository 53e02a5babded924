package failover

import (
	"fmt"
	"maps"
	"slices"

	"lifeboat/fleet/router"
)

// checkDense checks the step s against every rule, from the planner's current state.
func (p *planner) checkDense(s *step) []Violation {
	var vs []Violation
	in := p.in
	add := func(rule Rule, ci, i int, format string, args ...any) {
		v := Violation{Rule: rule, Detail: fmt.Sprintf(format, args...)}
		if ci >= 0 {
			v.Class = p.m.classes[ci].name
		}
		if i >= 0 {
			v.Region = p.m.regions[i]
		}
		vs = append(vs, v)
	}
	d := p.m.inflow(s.w)
	changed := make([]bool, len(p.m.regions))
	for ci, mc := range p.m.classes {
		before, after := p.w[ci], s.w[ci]
		if sum(after) != sum(before) {
			add(RuleTotals, ci, -1, "total %d, was %d", sum(after), sum(before))
		}
		nonzero := false
		moved := 0
		for k, i := range mc.elig {
			v := after[k]
			if v < 0 || (in.MaxWeight > 0 && v > in.MaxWeight) {
				add(RuleTotals, ci, i, "weight %d outside 0..%d", v, in.MaxWeight)
			}
			nonzero = nonzero || v > 0
			if v != before[k] || s.st[ci][k] != p.st[ci][k] {
				changed[i] = true
			}
			if v > before[k] {
				moved += v - before[k]
				if !p.m.receive[i] && !(in.overridden(RuleWarm) && p.receiveIgnoringWarm(i)) {
					add(RuleWarm, ci, i, "gains weight but is %s", p.m.why[i])
				}
				if q := p.m.predict(i, d[i]); !in.overridden(RuleHeadroom) && !(q < float64(in.Policy.SpillStartMS)) {
					add(RuleHeadroom, ci, i, "predicted queue wait %.0f ms is not under spill_start_ms %d", q, in.Policy.SpillStartMS)
				}
			}
			st := s.st[ci][k]
			if st != router.Ready && v > 0 {
				add(RuleDrain, ci, i, "is %s with weight %d", st, v)
			}
			if st == router.Maint && p.st[ci][k] == router.Ready && !in.Immediate && !in.overridden(RuleDrain) {
				add(RuleDrain, ci, i, "cut off without a drain first")
			}
		}
		if sum(before) > 0 && !nonzero {
			add(RuleNonZero, ci, -1, "all-zero weight vector for a class with traffic")
		}
		if moved > mc.stepUnits && !in.Immediate && !in.overridden(RuleStep) {
			add(RuleStep, ci, -1, "moves %d of %d (step_percent %d allows %d)", moved, mc.total, in.Policy.StepPercent, mc.stepUnits)
		}
		if sp, sp0 := p.spillOf(ci, after), p.spillOf(ci, before); sp > mc.capUnits && sp > sp0 && !in.overridden(RuleSpillCap) {
			add(RuleSpillCap, ci, -1, "spill %d of %d over spill_cap_percent %d", sp, mc.total, in.Policy.SpillCapPercent)
		}
	}
	for i, c := range changed {
		if c && p.trans[i]+1 > in.Policy.MaxTransitionsPerHour && !in.overridden(RuleTransitions) {
			add(RuleTransitions, -1, i, "change %d in the last hour (max_transitions_per_hour %d); wait for the hour to pass, or break glass with --override %s (journaled)", p.trans[i]+1, in.Policy.MaxTransitionsPerHour, RuleTransitions)
		}
	}
	return vs
}

// CheckStep checks one step from the state in in (in.Weights, in.States, the signals as they
// are now) against every rule. The executor calls it before each step with fresh signals: a
// violation there means hold. Residency is checked on the step's own maps: a region outside a
// class's eligible list with a weight, or an unknown class, is a violation whatever else holds.
func CheckStep(in PlanInput, st *Step) []Violation {
	var vs []Violation
	for _, c := range slices.Sorted(maps.Keys(st.Weights)) {
		elig, ok := in.Classes[c]
		if !ok {
			vs = append(vs, Violation{Rule: RuleResidency, Class: c, Detail: "class not in the fleet"})
			continue
		}
		for _, r := range slices.Sorted(maps.Keys(st.Weights[c])) {
			if st.Weights[c][r] != 0 && !slices.Contains(elig, r) {
				vs = append(vs, Violation{Rule: RuleResidency, Class: c, Region: r, Detail: fmt.Sprintf("weight %d outside the eligible regions %v", st.Weights[c][r], elig)})
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(st.States)) {
		if _, ok := in.Classes[c]; !ok {
			vs = append(vs, Violation{Rule: RuleResidency, Class: c, Detail: "class not in the fleet"})
		}
	}
	if len(vs) > 0 {
		return vs
	}
	p := newPlanner(&in)
	s := p.newStep()
	for ci, mc := range p.m.classes {
		if vec, ok := st.Weights[mc.name]; ok {
			for k, i := range mc.elig {
				s.w[ci][k] = vec[p.m.regions[i]]
			}
		}
		for k, i := range mc.elig {
			if v, ok := st.States[mc.name][p.m.regions[i]]; ok {
				s.st[ci][k] = v
			}
		}
	}
	return p.checkDense(s)
}
