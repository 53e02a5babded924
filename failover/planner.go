package failover

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"lifeboat/fleet/router"
)

// maxPlanSteps bounds a plan (a 1-unit step_percent over a large total is still finite).
const maxPlanSteps = 10000

// planner carries the working state of one plan.
type planner struct {
	m       *model
	in      *PlanInput
	w       [][]int          // weights, per class aligned with its elig
	st      [][]router.State // states, the same shape
	trans   []int            // transitions per region so far: history + steps
	target  [][]int          // converge goal (restore, abort); nil otherwise
	plan    *Plan
	gained  map[int]bool // regions that gained weight in some step
	blocked map[Rule]bool
	// sole are the rules that were, for some move the plan wanted, the only rule in the way:
	// overriding one of them lets that move happen. blocked holds every rule that stopped a
	// move, sole or not.
	sole map[Rule]bool
	// stuck are the regions that could not change for max_transitions_per_hour (donors and
	// receivers), for the reason's words.
	stuck map[int]bool
	// holdRule is the rule that stopped the plan short of its goal (with plan.Hold).
	holdRule Rule
}

// MakePlan plans the event in in. It never returns a step that breaks a rule: each step is
// built to pass, then checked; a step that fails its check ends the plan as refused.
//
// With in.Only the plan changes those classes only; with in.SkipBlocked it covers every
// selected class that can reach its target and names the others in Plan.Blocked. Without
// in.SkipBlocked and with in.Hint, a plan of several classes that cannot reach its target says
// in Plan.CouldMove which classes could have moved without the blocked ones.
func MakePlan(in PlanInput) *Plan {
	sel := in.selection()
	var p *Plan
	if in.SkipBlocked {
		p = planMovable(in, sel)
	} else {
		p = makePlan(in)
		if len(in.Only) > 0 {
			p.Classes = sel
		}
		if in.Hint && !p.Complete && len(sel) > 1 {
			if movable, blocked, _ := partition(in, sel); len(movable) > 0 && len(blocked) > 0 {
				p.CouldMove = movable
			}
		}
	}
	p.Selected, p.SkipBlocked = sortedSet(in.Only), in.SkipBlocked
	return p
}

// selection is the classes a plan may cover: in.Only, or every class of the fleet, sorted.
func (in *PlanInput) selection() []string {
	if len(in.Only) > 0 {
		return sortedSet(in.Only)
	}
	return slices.Sorted(maps.Keys(in.Classes))
}

func sortedSet(xs []string) []string {
	if len(xs) == 0 {
		return nil
	}
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// partition adds the selected classes one at a time, in name order, keeping each whose plan
// together with the ones kept so far still reaches its target: the classes that can move (and
// the plan that moves them all), and the ones that cannot, each with the rule and reason of the
// plan that failed with it.
func partition(in PlanInput, sel []string) ([]string, []ClassBlock, *Plan) {
	var movable []string
	var blocked []ClassBlock
	var last *Plan
	for _, c := range sel {
		try := in
		try.SkipBlocked, try.Only = false, append(slices.Clone(movable), c)
		p := makePlan(try)
		if p.Complete {
			movable, last = append(movable, c), p
			continue
		}
		why := p.Reason
		if why == "" {
			why = p.Verdict()
		}
		blocked = append(blocked, ClassBlock{Class: c, Rule: p.Rule, Reason: why})
	}
	return movable, blocked, last
}

// planMovable is the --skip-blocked plan: every selected class that can move, moved all the
// way; the others untouched and named. It is complete only when nothing is blocked, and refused
// when nothing can move.
func planMovable(in PlanInput, sel []string) *Plan {
	movable, blocked, p := partition(in, sel)
	var names []string
	for _, b := range blocked {
		names = append(names, fmt.Sprintf("%s (%s: %s)", b.Class, b.Rule, strings.TrimSuffix(b.Reason, ".")))
	}
	if len(movable) == 0 {
		all := in
		all.SkipBlocked, all.Only = false, sel
		p = makePlan(all)
		p.Refused, p.Complete, p.Steps, p.Hold, p.Shed = true, false, nil, "", map[string]float64{}
		p.Final = p.After(-1)
		p.Rule, p.Reason = blocked[0].Rule, "no class can move: "+strings.Join(names, "; ")
		p.Blocked = blocked
		return p
	}
	p.Classes, p.Blocked = movable, blocked
	if len(blocked) > 0 {
		var left []string
		for _, b := range blocked {
			left = append(left, b.Class)
		}
		p.Complete = false
		p.Rule = blocked[0].Rule
		p.Reason = fmt.Sprintf("%s moves %s in %d step(s); left untouched, as they are on the router: %s. When they can move: lifeboat failover plan %s --class %s",
			p.Event, strings.Join(movable, ", "), len(p.Steps), strings.Join(names, "; "), p.Event.Flags(), strings.Join(left, ","))
	}
	return p
}

// makePlan is one plan of in, for in.Only (or every class).
func makePlan(in PlanInput) *Plan {
	p := newPlanner(&in)
	if reason := p.validate(); reason != "" {
		p.refuse(RuleTotals, reason)
	} else {
		switch in.Event.Kind {
		case Evacuate:
			p.evacuate()
		case Spill:
			p.spill()
		case Restore:
			p.restore()
		case Abort:
			p.abort()
		default:
			p.refuse(RuleTotals, fmt.Sprintf("unknown event %q", in.Event.Kind))
		}
	}
	p.plan.Final = p.plan.After(len(p.plan.Steps) - 1)
	p.verdict()
	return p.plan
}

// verdict fills Complete, and for a plan that holds short of its goal the rule and the reason;
// when the rule is headroom and an inflow was assumed, it names the assumption and the
// measurement that would settle it.
func (p *planner) verdict() {
	pl := p.plan
	pl.Complete = !pl.Refused && pl.Hold == "" && len(pl.Shed) == 0
	rule := pl.Rule
	if !pl.Refused && pl.Hold != "" {
		pl.Rule, rule = p.holdRule, p.holdRule
		if pl.Reason == "" {
			pl.Reason = pl.Hold
		}
	}
	if pl.Complete || rule != RuleHeadroom {
		return
	}
	for _, r := range p.m.assumed {
		pl.DecidedByAssumption = append(pl.DecidedByAssumption, fmt.Sprintf("%s: prefill inflow not measured, assumed %d%% of capacity (failover.assumed_utilization_percent); measure it to settle this: %s on %s's metrics, read twice a step_interval apart, or prefill_tokens_per_s in --signals",
			r, p.in.Policy.AssumedUtilizationPercent, MetricPromptTotal, r))
	}
}

func newPlanner(in *PlanInput) *planner {
	m, assumptions := newModel(in)
	p := &planner{m: m, in: in, gained: map[int]bool{}, blocked: map[Rule]bool{}, sole: map[Rule]bool{}, stuck: map[int]bool{}}
	p.plan = &Plan{Event: in.Event, Shed: map[string]float64{}, Overrides: in.Overrides, Immediate: in.Immediate, Assumptions: assumptions}
	p.plan.Start = router.RouterState{Weights: in.Weights.Clone(), States: in.States.Clone()}
	p.plan.Regions = m.views()
	if p.plan.Start.States == nil {
		p.plan.Start.States = router.States{}
	}
	p.w = make([][]int, len(m.classes))
	p.st = make([][]router.State, len(m.classes))
	for ci, mc := range m.classes {
		p.w[ci] = slices.Clone(mc.w)
		p.st[ci] = make([]router.State, len(mc.elig))
		for k, i := range mc.elig {
			p.st[ci][k] = in.States.Get(mc.name, m.regions[i])
		}
	}
	p.trans = make([]int, len(m.regions))
	for i, r := range m.regions {
		p.trans[i] = in.Transitions[r]
	}
	return p
}

// hold ends the plan short of its goal: the steps before it are safe, the rest waits for rule.
func (p *planner) hold(rule Rule, why string) {
	p.plan.Hold, p.holdRule = why, rule
}

// shortOfTarget says, per class, where the plan ends against the target (restore, abort).
func (p *planner) shortOfTarget() string {
	var parts []string
	for ci, mc := range p.m.classes {
		if slices.Equal(p.w[ci], p.target[ci]) {
			continue
		}
		var have, want []string
		for k, i := range mc.elig {
			have = append(have, fmt.Sprintf("%s %d", p.m.regions[i], p.w[ci][k]))
			want = append(want, fmt.Sprintf("%d", p.target[ci][k]))
		}
		parts = append(parts, fmt.Sprintf("%s ends at %s (target %s)", mc.name, strings.Join(have, "/"), strings.Join(want, "/")))
	}
	return strings.Join(parts, "; ")
}

func (p *planner) refuse(rule Rule, reason string) {
	p.plan.Refused, p.plan.Rule, p.plan.Reason, p.plan.Steps = true, rule, reason, nil
}

// validate checks the input itself: known event region, weights only on eligible regions, in
// range.
func (p *planner) validate() string {
	in := p.in
	for _, c := range sortedSet(in.Only) {
		if _, ok := in.Classes[c]; !ok {
			return fmt.Sprintf("class %q is not a tenant class of the fleet", c)
		}
	}
	if in.Event.Kind != Spill && in.Event.Kind != Abort {
		if _, ok := p.m.ridx[in.Event.Region]; !ok {
			return fmt.Sprintf("region %q is not in the fleet", in.Event.Region)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(in.Weights)) {
		elig, ok := in.Classes[c]
		if !ok {
			return fmt.Sprintf("the router has class %q, which the fleet does not define", c)
		}
		set := make(map[string]bool, len(elig))
		for _, r := range elig {
			set[r] = true
		}
		for _, r := range slices.Sorted(maps.Keys(in.Weights[c])) {
			v := in.Weights[c][r]
			if v > 0 && !set[r] {
				return fmt.Sprintf("class %s already has weight %d on %s, outside its eligible regions %v: fix the router first (residency)", c, v, r, elig)
			}
			if v < 0 || (in.MaxWeight > 0 && v > in.MaxWeight) {
				return fmt.Sprintf("class %s: weight %d on %s is outside the driver's range 0..%d", c, v, r, in.MaxWeight)
			}
		}
	}
	if in.Baseline != nil {
		for _, c := range slices.Sorted(maps.Keys(in.Baseline)) {
			for r, v := range in.Baseline[c] {
				if v > 0 && !slices.Contains(in.Classes[c], r) {
					return fmt.Sprintf("baseline: class %s has weight on %s, outside its eligible regions", c, r)
				}
			}
		}
	}
	return ""
}

// step is one step under construction.
type step struct {
	w        [][]int
	st       [][]router.State
	d        []float64
	spill    []int
	spill0   []int
	changedC []bool
	changedR []bool
	drain    map[int]bool
	withdraw map[int]bool
	waitFor  bool
}

func (p *planner) newStep() *step {
	s := &step{w: make([][]int, len(p.w)), st: make([][]router.State, len(p.st)), spill: make([]int, len(p.w)),
		changedC: make([]bool, len(p.w)), changedR: make([]bool, len(p.m.regions)), drain: map[int]bool{}, withdraw: map[int]bool{}}
	for ci := range p.w {
		s.w[ci] = slices.Clone(p.w[ci])
		s.st[ci] = slices.Clone(p.st[ci])
		s.spill[ci] = p.spillOf(ci, s.w[ci])
	}
	s.spill0 = slices.Clone(s.spill)
	s.d = p.m.inflow(s.w)
	return s
}

func (p *planner) spillOf(ci int, w []int) int {
	mc := p.m.classes[ci]
	n := 0
	for k := range w {
		n += max(0, w[k]-mc.base[k])
	}
	return n
}

// canGainQ says whether region index k of class ci may take one more unit from index from in s,
// and if not, which rule stops it; with the receiver's predicted queue wait after the unit.
func (p *planner) canGainQ(s *step, ci, from, k int, stateOK func(router.State) bool) (bool, Rule, float64) {
	mc := p.m.classes[ci]
	i := mc.elig[k]
	in := p.in
	if !p.m.receive[i] && !(in.overridden(RuleWarm) && p.receiveIgnoringWarm(i)) {
		return false, RuleWarm, 0
	}
	if !stateOK(s.st[ci][k]) {
		return false, RuleDrain, 0
	}
	if in.MaxWeight > 0 && s.w[ci][k]+1 > in.MaxWeight {
		return false, RuleTotals, 0
	}
	// a hair under the threshold, so float rounding can never let the step check disagree
	q := p.m.predict(i, s.d[i]+mc.unit)
	if !in.overridden(RuleHeadroom) && !(q < float64(in.Policy.SpillStartMS)*(1-1e-9)-1e-6) {
		return false, RuleHeadroom, q
	}
	if !in.overridden(RuleSpillCap) {
		delta := 0
		if s.w[ci][k]+1 > mc.base[k] {
			delta++
		}
		if s.w[ci][from] > mc.base[from] {
			delta--
		}
		if n := s.spill[ci] + delta; n > mc.capUnits && n > s.spill0[ci] {
			return false, RuleSpillCap, q
		}
	}
	if !in.overridden(RuleTransitions) && !s.changedR[i] && p.trans[i]+1 > in.Policy.MaxTransitionsPerHour {
		return false, RuleTransitions, q
	}
	return true, "", q
}

// failing are every rule that stops region index k of class ci from taking one more unit from
// index from in s (canGainQ stops at the first).
func (p *planner) failing(s *step, ci, from, k int, stateOK func(router.State) bool) []Rule {
	mc := p.m.classes[ci]
	i := mc.elig[k]
	in := p.in
	var rules []Rule
	if !p.m.receive[i] && !(in.overridden(RuleWarm) && p.receiveIgnoringWarm(i)) {
		rules = append(rules, RuleWarm)
	}
	if !stateOK(s.st[ci][k]) {
		rules = append(rules, RuleDrain)
	}
	if in.MaxWeight > 0 && s.w[ci][k]+1 > in.MaxWeight {
		rules = append(rules, RuleTotals)
	}
	if q := p.m.predict(i, s.d[i]+mc.unit); !in.overridden(RuleHeadroom) && !(q < float64(in.Policy.SpillStartMS)*(1-1e-9)-1e-6) {
		rules = append(rules, RuleHeadroom)
	}
	if !in.overridden(RuleSpillCap) {
		delta := 0
		if s.w[ci][k]+1 > mc.base[k] {
			delta++
		}
		if s.w[ci][from] > mc.base[from] {
			delta--
		}
		if n := s.spill[ci] + delta; n > mc.capUnits && n > s.spill0[ci] {
			rules = append(rules, RuleSpillCap)
		}
	}
	if !in.overridden(RuleTransitions) && !s.changedR[i] && p.trans[i]+1 > in.Policy.MaxTransitionsPerHour {
		rules = append(rules, RuleTransitions)
	}
	return rules
}

// noteBlocked records the rules that stopped one move (at region i, for the transitions
// wording): each is a blocker, and a rule alone in the way is the one whose override lets it
// happen.
func (p *planner) noteBlocked(rules []Rule, i int) {
	slices.Sort(rules)
	rules = slices.Compact(rules)
	for _, r := range rules {
		p.blocked[r] = true
		if r == RuleTransitions {
			p.stuck[i] = true
		}
	}
	if len(rules) == 1 {
		p.sole[rules[0]] = true
	}
}

// donorStuck records the moves a donor (index from of class ci) would make but may not, as it
// reached max_transitions_per_hour: each to a receiver the ok filter admits, blocked by that
// rule and by whatever stops the receiver too.
func (p *planner) donorStuck(s *step, ci, from int, ok func(k int) bool, stateOK func(router.State) bool) {
	mc := p.m.classes[ci]
	for k := range mc.elig {
		if k == from || !ok(k) {
			continue
		}
		p.noteBlocked(append([]Rule{RuleTransitions}, p.failing(s, ci, from, k, stateOK)...), mc.elig[from])
	}
}

func (p *planner) receiveIgnoringWarm(i int) bool {
	sig, ok := p.in.Signals[p.m.regions[i]]
	return ok && sig.Healthy && sig.QueueWaitMS != nil && p.m.capacity[i] > 0
}

// canLose says whether the donor may change in this step (transitions).
func (p *planner) canLose(s *step, i int) bool {
	return p.in.overridden(RuleTransitions) || s.changedR[i] || p.trans[i]+1 <= p.in.Policy.MaxTransitionsPerHour
}

func (p *planner) move(s *step, ci, from, to int) {
	mc := p.m.classes[ci]
	if s.w[ci][to]+1 > mc.base[to] {
		s.spill[ci]++
	}
	if s.w[ci][from] > mc.base[from] {
		s.spill[ci]--
	}
	s.w[ci][from]--
	s.w[ci][to]++
	fi, ti := mc.elig[from], mc.elig[to]
	s.d[fi] = math.Max(0, s.d[fi]-mc.unit)
	s.d[ti] += mc.unit
	s.changedC[ci], s.changedR[fi], s.changedR[ti] = true, true, true
}

// best picks, among the class's regions that pass canGainQ, the one whose predicted queue wait
// after one more unit is lowest (ties: file order). -1 when none.
func (p *planner) best(s *step, ci, from int, ok func(k int) bool, stateOK func(router.State) bool) int {
	mc := p.m.classes[ci]
	bestK, bestQ := -1, math.Inf(1)
	var rejected []int
	for k := range mc.elig {
		if k == from || !ok(k) {
			continue
		}
		good, _, q := p.canGainQ(s, ci, from, k, stateOK)
		if !good {
			rejected = append(rejected, k)
			continue
		}
		if bestK < 0 || q < bestQ {
			bestK, bestQ = k, q
		}
	}
	if bestK < 0 {
		// nowhere to go: every rule in each receiver's way is why (a receiver passed over for
		// a better one is not)
		for _, k := range rejected {
			p.noteBlocked(p.failing(s, ci, from, k, stateOK), mc.elig[k])
		}
	}
	return bestK
}

// resetBlocked forgets why earlier steps could not move more: the plan stops where its last
// step found nothing to move, and what blocked that one is why.
func (p *planner) resetBlocked() {
	clear(p.blocked)
	clear(p.sole)
	clear(p.stuck)
}

func readyOnly(st router.State) bool { return st == router.Ready }

// setState changes a state in s and records the change.
func (p *planner) setState(s *step, ci, k int, v router.State) {
	if s.st[ci][k] == v {
		return
	}
	i := p.m.classes[ci].elig[k]
	s.st[ci][k] = v
	s.changedR[i] = true
	switch v {
	case router.Drain:
		s.drain[i] = true
	case router.Maint:
		s.withdraw[i] = true
	}
}

// commit checks s and appends it to the plan; false when it changes nothing or breaks a rule
// (the plan is then refused: a planner bug must never reach a router).
func (p *planner) commit(s *step) bool {
	changed := false
	for _, c := range s.changedR {
		changed = changed || c
	}
	if !changed {
		return false
	}
	if vs := p.checkDense(s); len(vs) > 0 {
		msgs := make([]string, len(vs))
		for i, v := range vs {
			msgs[i] = v.String()
		}
		p.refuse(vs[0].Rule, fmt.Sprintf("internal check: step %d breaks %s", len(p.plan.Steps)+1, strings.Join(msgs, "; ")))
		return false
	}
	out := &Step{Weights: router.Weights{}, States: router.States{}, PredictedQueueWaitMS: map[string]float64{}, Drain: []string{}, WaitForDrain: s.waitFor}
	for ci, mc := range p.m.classes {
		if !slices.Equal(s.w[ci], p.w[ci]) {
			vec := map[string]int{}
			for k, i := range mc.elig {
				if s.w[ci][k] > 0 || p.in.Weights[mc.name] != nil && hasKey(p.in.Weights[mc.name], p.m.regions[i]) {
					vec[p.m.regions[i]] = s.w[ci][k]
				}
				if s.w[ci][k] > p.w[ci][k] {
					p.gained[i] = true
				}
			}
			out.Weights[mc.name] = vec
		}
		for k, i := range mc.elig {
			if s.st[ci][k] != p.st[ci][k] {
				out.States.Set(mc.name, p.m.regions[i], s.st[ci][k])
			}
		}
	}
	for i := range p.gained {
		if q := p.m.predict(i, s.d[i]); !math.IsInf(q, 0) {
			out.PredictedQueueWaitMS[p.m.regions[i]] = math.Round(q*10) / 10
		}
	}
	for i := range s.drain {
		out.Drain = append(out.Drain, p.m.regions[i])
	}
	for i := range s.withdraw {
		out.Withdraw = append(out.Withdraw, p.m.regions[i])
	}
	sort.Strings(out.Drain)
	sort.Strings(out.Withdraw)
	for i, c := range s.changedR {
		if c {
			p.trans[i]++
		}
	}
	p.w, p.st = s.w, s.st
	p.plan.Steps = append(p.plan.Steps, out)
	return true
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// whyBlocked names what stopped placement, for refusals and holds.
//
// The rule named is the one that blocked: a rule that was alone in the way of some move comes
// first (overriding it lets that move happen), in the order below; only when every blocked move
// had several rules in the way is the first of those named, with the others.
func (p *planner) whyBlocked() (Rule, string) {
	order := []Rule{RuleHeadroom, RuleSpillCap, RuleTransitions, RuleTotals, RuleDrain, RuleWarm}
	for _, r := range order {
		if p.sole[r] {
			p.plan.AlsoBlocking = nil
			return r, p.blockedWords(r)
		}
	}
	for _, r := range order {
		if p.blocked[r] {
			var with []string
			for _, o := range order {
				if o != r && p.blocked[o] {
					with = append(with, string(o))
				}
			}
			p.plan.AlsoBlocking = nil
			for _, o := range with {
				p.plan.AlsoBlocking = append(p.plan.AlsoBlocking, Rule(o))
			}
			return r, p.blockedWords(r) + "; every move it stopped was also stopped by " + strings.Join(with, ", ")
		}
	}
	// No rule stopped a move: there was none to make within the classes' eligible regions
	// (naming an overridable rule here would send the operator to an override that changes
	// nothing).
	return RuleResidency, "no move is left within the classes' eligible regions"
}

// blockedWords says in words how rule r blocked.
func (p *planner) blockedWords(r Rule) string {
	switch r {
	case RuleHeadroom:
		return fmt.Sprintf("no eligible receiver would stay under spill_start_ms %d after one more unit", p.in.Policy.SpillStartMS)
	case RuleSpillCap:
		return fmt.Sprintf("spill_cap_percent %d reached", p.in.Policy.SpillCapPercent)
	case RuleTransitions:
		var at []string
		for i, n := range p.trans {
			if p.stuck[i] && n+1 > p.in.Policy.MaxTransitionsPerHour {
				at = append(at, fmt.Sprintf("%s (%d changes)", p.m.regions[i], n))
			}
		}
		return fmt.Sprintf("regions the traffic must move from or to reached max_transitions_per_hour %d: %s; wait for the hour to pass, or break glass with --override %s (journaled)", p.in.Policy.MaxTransitionsPerHour, strings.Join(at, ", "), RuleTransitions)
	case RuleTotals:
		return fmt.Sprintf("receivers are at the driver's largest weight %d", p.in.MaxWeight)
	case RuleDrain:
		return "the eligible receivers are drained or cut off"
	case RuleWarm:
		return "no eligible receiver is warm and healthy"
	}
	return "nothing could move"
}

func (p *planner) regionIndexIn(ci int, region string) int {
	i, ok := p.m.ridx[region]
	if !ok {
		return -1
	}
	if k, ok := p.m.classes[ci].pos[i]; ok {
		return k
	}
	return -1
}

// evacuate moves every class off the event region, ramped, then drains and withdraws it.
func (p *planner) evacuate() {
	in := p.in
	R := p.m.ridx[in.Event.Region]
	sig := in.Signals[in.Event.Region]
	if in.Immediate && sig.Healthy {
		p.refuse(RuleDrain, fmt.Sprintf("--immediate is only for a dead region, and %s is healthy: evacuate it ramped (drain before withdraw)", in.Event.Region))
		return
	}
	// Residency: every class with traffic on R needs an eligible, warm, healthy receiver.
	for ci, mc := range p.m.classes {
		kR := p.regionIndexIn(ci, in.Event.Region)
		if kR < 0 || p.w[ci][kR] == 0 || mc.frozen {
			continue
		}
		var why []string
		found := false
		for _, i := range mc.elig {
			if i == R {
				continue
			}
			k := mc.pos[i]
			if p.st[ci][k] != router.Ready {
				why = append(why, fmt.Sprintf("%s is %s (drained or cut off)", p.m.regions[i], p.st[ci][k]))
				continue
			}
			if p.m.receive[i] || (in.overridden(RuleWarm) && p.receiveIgnoringWarm(i)) {
				found = true
				break
			}
			why = append(why, fmt.Sprintf("%s %s", p.m.regions[i], p.m.why[i]))
		}
		if !found {
			others := "it has no other eligible region"
			if len(why) > 0 {
				others = strings.Join(why, "; ")
			}
			p.refuse(RuleResidency, fmt.Sprintf("class %s has %d%% of its traffic on %s and no healthy, warm, eligible receiver (tenants.%s: %v; %s). Needed: one of its other eligible regions warm and healthy. Lifeboat never routes a class outside its eligible regions.",
				mc.name, int(math.Round(float64(p.w[ci][kR])*100/float64(mc.total))), in.Event.Region, mc.name, in.Classes[mc.name], others))
			return
		}
	}
	for n := 0; n < maxPlanSteps; n++ {
		p.resetBlocked()
		s := p.newStep()
		if !p.canLose(s, R) {
			// what else would stop the traffic leaving R: if every move has something more in
			// its way, overriding max_transitions alone moves nothing, and the plan says so
			for ci, mc := range p.m.classes {
				if kR := p.regionIndexIn(ci, in.Event.Region); kR >= 0 && s.w[ci][kR] > 0 && !mc.frozen {
					p.donorStuck(s, ci, kR, func(int) bool { return true }, readyOnly)
				}
			}
			if !p.sole[RuleTransitions] {
				for _, r := range []Rule{RuleHeadroom, RuleSpillCap, RuleTotals, RuleDrain, RuleWarm} {
					if p.blocked[r] {
						p.plan.AlsoBlocking = append(p.plan.AlsoBlocking, r)
					}
				}
			}
			p.hold(RuleTransitions, fmt.Sprintf("%s reached max_transitions_per_hour %d: holding; wait for the hour to pass, or break glass with --override %s (journaled)", in.Event.Region, in.Policy.MaxTransitionsPerHour, RuleTransitions))
			break
		}
		moved := false
		for ci, mc := range p.m.classes {
			kR := p.regionIndexIn(ci, in.Event.Region)
			if kR < 0 || s.w[ci][kR] == 0 || mc.frozen {
				continue
			}
			budget := mc.stepUnits
			if in.Immediate || in.overridden(RuleStep) {
				budget = s.w[ci][kR]
			}
			for u := 0; u < budget && s.w[ci][kR] > 0; u++ {
				k := p.best(s, ci, kR, func(int) bool { return true }, readyOnly)
				if k < 0 {
					break
				}
				p.move(s, ci, kR, k)
				moved = true
			}
		}
		p.evacuateStates(s, R, moved)
		if !p.commit(s) {
			break
		}
	}
	if p.plan.Refused {
		return
	}
	p.shedOn(in.Event.Region)
	if len(p.plan.Steps) == 0 && p.plan.Hold == "" {
		if total := p.weightOn(R); total > 0 {
			rule, why := p.whyBlocked()
			p.refuse(rule, fmt.Sprintf("cannot move any traffic off %s: %s", in.Event.Region, why))
		}
	} else if p.weightOn(R) > 0 && p.plan.Hold == "" {
		rule, why := p.whyBlocked()
		var left []string
		for _, c := range slices.Sorted(maps.Keys(p.plan.Shed)) {
			left = append(left, fmt.Sprintf("%.1f%% of %s", p.plan.Shed[c], c))
		}
		p.hold(rule, fmt.Sprintf("%s keeps %s that cannot be placed (%s: %s)", in.Event.Region, strings.Join(left, " and "), rule, why))
	}
}

func (p *planner) weightOn(i int) int {
	n := 0
	for ci, mc := range p.m.classes {
		if k, ok := mc.pos[i]; ok && !mc.frozen {
			n += p.w[ci][k]
		}
	}
	return n
}

// evacuateStates drains R in every class where it reached 0 and, once it is drained
// everywhere and nothing moved in this step, withdraws it (immediately for a dead region).
func (p *planner) evacuateStates(s *step, R int, moved bool) {
	allDrained := true
	for ci, mc := range p.m.classes {
		k, ok := mc.pos[R]
		if !ok || mc.frozen {
			continue
		}
		if s.w[ci][k] > 0 {
			allDrained = false
			continue
		}
		if p.in.Immediate {
			p.setState(s, ci, k, router.Maint)
			continue
		}
		switch s.st[ci][k] {
		case router.Ready:
			p.setState(s, ci, k, router.Drain)
			allDrained = false // withdraw in a later step, after the drain
		case router.Drain:
			if moved {
				allDrained = false
			}
		}
	}
	if p.in.Immediate || !allDrained || moved {
		return
	}
	any := false
	for ci, mc := range p.m.classes {
		if k, ok := mc.pos[R]; ok && !mc.frozen && s.st[ci][k] == router.Drain {
			p.setState(s, ci, k, router.Maint)
			any = true
		}
	}
	s.waitFor = any && !p.in.overridden(RuleDrain)
}

func (p *planner) shedOn(region string) {
	for ci, mc := range p.m.classes {
		if k := p.regionIndexIn(ci, region); k >= 0 && p.w[ci][k] > 0 && mc.total > 0 && !mc.frozen {
			p.plan.Shed[mc.name] = math.Round(1000*float64(p.w[ci][k])/float64(mc.total)) / 10
		}
	}
}

// spill moves load off regions whose queue wait is over spill_start_ms (or, once spilling,
// still over spill_stop_ms) to receivers that stay under spill_start_ms.
func (p *planner) spill() {
	in := p.in
	start, stop := float64(in.Policy.SpillStartMS), float64(in.Policy.SpillStopMS)
	s0 := p.newStep()
	donor := make([]bool, len(p.m.regions))
	anyDonor := false
	for i, r := range p.m.regions {
		sig, ok := in.Signals[r]
		if !ok || sig.QueueWaitMS == nil {
			continue
		}
		q := *sig.QueueWaitMS
		spilling := false
		for ci, mc := range p.m.classes {
			if k, ok := mc.pos[i]; ok && s0.w[ci][k] < mc.base[k] {
				spilling = true
			}
		}
		if q >= start || (spilling && q >= stop) {
			donor[i], anyDonor = true, true
		}
	}
	if !anyDonor {
		p.plan.Reason = fmt.Sprintf("no region's queue wait is over spill_start_ms %d (or, while spilling, spill_stop_ms %d): nothing to do", in.Policy.SpillStartMS, in.Policy.SpillStopMS)
		return
	}
	for n := 0; n < maxPlanSteps; n++ {
		p.resetBlocked()
		s := p.newStep()
		for ci, mc := range p.m.classes {
			if mc.frozen {
				continue
			}
			budget := mc.stepUnits
			if in.overridden(RuleStep) {
				budget = mc.total
			}
			donors := []int{}
			for k, i := range mc.elig {
				if donor[i] && s.w[ci][k] > 0 {
					donors = append(donors, k)
				}
			}
			for budget > 0 {
				// the donor with the highest predicted wait still at or over spill_stop_ms
				from, fq := -1, -1.0
				var stuck []int
				for _, k := range donors {
					i := mc.elig[k]
					q := p.m.predict(i, s.d[i])
					if s.w[ci][k] > 0 && q >= stop && !p.canLose(s, i) {
						stuck = append(stuck, k)
						continue
					}
					if s.w[ci][k] > 0 && q >= stop && q > fq {
						from, fq = k, q
					}
				}
				if from < 0 {
					for _, k := range stuck {
						p.donorStuck(s, ci, k, func(k int) bool { return !donor[mc.elig[k]] }, readyOnly)
					}
					break
				}
				to := p.best(s, ci, from, func(k int) bool { return !donor[mc.elig[k]] }, readyOnly)
				if to < 0 {
					break
				}
				p.move(s, ci, from, to)
				budget--
			}
		}
		if !p.commit(s) {
			break
		}
	}
	if len(p.plan.Steps) == 0 && !p.plan.Refused {
		rule, why := p.whyBlocked()
		p.hold(rule, fmt.Sprintf("no load can spill (%s): %s", rule, why))
	}
}

// restore gives a region its traffic back: to the baseline where one is known, else a share in
// proportion to capacity; only once it is warm and calm for failback_dwell.
func (p *planner) restore() {
	in := p.in
	R := p.m.ridx[in.Event.Region]
	sig := in.Signals[in.Event.Region]
	switch {
	case !p.m.receive[R]:
		p.hold(RuleWarm, fmt.Sprintf("%s cannot take traffic back yet: %s", in.Event.Region, p.m.why[R]))
		return
	case !in.overridden(RuleDwell) && *sig.QueueWaitMS >= float64(in.Policy.SpillStopMS):
		p.hold(RuleDwell, fmt.Sprintf("%s queue wait %.0f ms is not under spill_stop_ms %d: failback waits", in.Event.Region, *sig.QueueWaitMS, in.Policy.SpillStopMS))
		return
	case !in.overridden(RuleDwell) && (sig.CalmSeconds == nil || *sig.CalmSeconds < in.Policy.FailbackDwell.Seconds()):
		calm := "unknown"
		if sig.CalmSeconds != nil {
			calm = fmt.Sprintf("%.0fs", *sig.CalmSeconds)
		}
		if in.OneReading {
			wait := in.Policy.FailbackDwell + 2*in.Policy.StepInterval // restore's own default
			p.hold(RuleDwell, fmt.Sprintf("%s is warm and under spill_stop_ms now, but a plan takes one reading and cannot observe failback_dwell (%s); restore watches it for the dwell, then fails back: lifeboat failover restore --region %s --hold-timeout %s",
				in.Event.Region, in.Policy.FailbackDwell, in.Event.Region, wait))
			return
		}
		p.hold(RuleDwell, fmt.Sprintf("%s has been warm and under spill_stop_ms for %s, failback_dwell is %s: failback waits", in.Event.Region, calm, in.Policy.FailbackDwell))
		return
	}
	p.target = make([][]int, len(p.m.classes))
	for ci, mc := range p.m.classes {
		p.target[ci] = slices.Clone(p.w[ci])
		kR, ok := mc.pos[R]
		if !ok || mc.total == 0 || mc.frozen {
			continue
		}
		if in.Baseline != nil && mc.base[kR] > 0 && sum(mc.base) == mc.total {
			p.target[ci] = slices.Clone(mc.base)
			continue
		}
		// capacity-proportional share over the regions in use plus R
		var all float64
		for k, i := range mc.elig {
			if p.w[ci][k] > 0 || k == kR {
				all += p.m.capacity[i]
			}
		}
		if all <= 0 {
			continue
		}
		want := int(math.Round(float64(mc.total) * p.m.capacity[R] / all))
		p.target[ci] = redistribute(p.w[ci], kR, want)
	}
	p.converge()
}

// redistribute returns w with index k set to want and the others scaled down in proportion,
// integer-rounded by largest remainder so the total is kept.
func redistribute(w []int, k, want int) []int {
	total := sum(w)
	want = min(max(want, w[k]), total)
	rest := total - w[k]
	out := slices.Clone(w)
	out[k] = want
	give := want - w[k]
	if give == 0 || rest == 0 {
		return w
	}
	type rem struct {
		k int
		f float64
	}
	var rems []rem
	taken := 0
	for j := range w {
		if j == k {
			continue
		}
		exact := float64(w[j]) * float64(give) / float64(rest)
		t := int(math.Floor(exact))
		out[j] = w[j] - t
		taken += t
		rems = append(rems, rem{j, exact - float64(t)})
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for _, r := range rems {
		if taken >= give {
			break
		}
		if out[r.k] > 0 {
			out[r.k]--
			taken++
		}
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// abort returns to the baseline weights, ramped, under the same rules.
func (p *planner) abort() {
	p.target = make([][]int, len(p.m.classes))
	for ci, mc := range p.m.classes {
		p.target[ci] = slices.Clone(p.w[ci])
		if sum(mc.base) == mc.total && mc.total > 0 && !mc.frozen {
			p.target[ci] = slices.Clone(mc.base)
		}
	}
	p.converge()
}

// converge moves each class toward p.target, at most step_percent per step, into receivers that
// pass every rule; a drained or cut-off receiver is made ready in the step it first gains.
func (p *planner) converge() {
	in := p.in
	for n := 0; n < maxPlanSteps; n++ {
		p.resetBlocked()
		s := p.newStep()
		for ci, mc := range p.m.classes {
			if mc.frozen {
				continue
			}
			budget := mc.stepUnits
			if in.Immediate || in.overridden(RuleStep) {
				budget = mc.total
			}
			tgt := p.target[ci]
			for budget > 0 {
				from := -1
				var stuck []int
				for k := range mc.elig {
					if s.w[ci][k] > tgt[k] && !p.canLose(s, mc.elig[k]) {
						stuck = append(stuck, k)
						continue
					}
					if s.w[ci][k] > tgt[k] && (from < 0 || s.w[ci][k]-tgt[k] > s.w[ci][from]-tgt[from]) {
						from = k
					}
				}
				if from < 0 {
					for _, k := range stuck { // traffic to give back, and the donor may not change this hour
						p.donorStuck(s, ci, k, func(k int) bool { return s.w[ci][k] < tgt[k] }, func(router.State) bool { return true })
					}
					break
				}
				to := p.best(s, ci, from, func(k int) bool { return s.w[ci][k] < tgt[k] }, func(router.State) bool { return true })
				if to < 0 {
					break
				}
				if s.st[ci][to] != router.Ready {
					p.setState(s, ci, to, router.Ready)
				}
				p.move(s, ci, from, to)
				budget--
			}
		}
		p.convergeStates(s)
		if !p.commit(s) {
			break
		}
	}
	if p.plan.Refused {
		return
	}
	done := true
	for ci := range p.m.classes {
		done = done && slices.Equal(p.w[ci], p.target[ci])
	}
	if !done {
		rule, why := p.whyBlocked()
		left := p.shortOfTarget()
		if len(p.plan.Steps) == 0 {
			p.hold(rule, fmt.Sprintf("cannot move toward the target yet (%s: %s); left: %s", rule, why, left))
		} else {
			p.hold(rule, fmt.Sprintf("stops short of the target (%s: %s); left: %s", rule, why, left))
		}
	}
}

// convergeStates drains regions whose target is 0 once they reach it, then withdraws them.
func (p *planner) convergeStates(s *step) {
	moved := false
	for ci := range p.m.classes {
		moved = moved || !slices.Equal(s.w[ci], p.w[ci])
	}
	for ci, mc := range p.m.classes {
		for k := range mc.elig {
			if mc.frozen || p.target[ci][k] != 0 || s.w[ci][k] != 0 || p.plan.Start.Weights[mc.name][p.m.regions[mc.elig[k]]] == 0 || !p.canLose(s, mc.elig[k]) {
				continue
			}
			switch s.st[ci][k] {
			case router.Ready:
				p.setState(s, ci, k, router.Drain)
			case router.Drain:
				if !moved && p.st[ci][k] == router.Drain {
					p.setState(s, ci, k, router.Maint)
					s.waitFor = !p.in.overridden(RuleDrain)
				}
			}
		}
	}
}

// views is each region as the model sees it, for the plan's readers.
func (m *model) views() []RegionView {
	out := make([]RegionView, 0, len(m.regions))
	for i, r := range m.regions {
		sig := m.in.Signals[r]
		v := RegionView{Region: r, Healthy: sig.Healthy, Warm: sig.Warm, Receiver: m.receive[i], Why: m.why[i], InflowTokensPerS: m.d0[i], Inflow: "none"}
		if sig.QueueWaitMS != nil {
			q := *sig.QueueWaitMS
			v.QueueWaitMS = &q
		}
		switch {
		case sig.PrefillTokensPerS != nil:
			v.Inflow = "measured"
		case slices.Contains(m.assumed, r):
			v.Inflow = "assumed"
		}
		out = append(out, v)
	}
	return out
}
