package failover

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/shell"
)

// EventKind is what a plan is for.
type EventKind string

const (
	// Evacuate moves every class's traffic off a region (a failure, or a drill).
	Evacuate EventKind = "evacuate"
	// Restore gives a region its traffic back (failback).
	Restore EventKind = "restore"
	// Spill moves load off regions whose estimated queue wait crossed spill_start_ms.
	Spill EventKind = "spill"
	// Abort returns to the weights before the failover, ramped, under the same rules.
	Abort EventKind = "abort"
)

// Event is the reason for a plan.
type Event struct {
	Kind   EventKind `json:"kind"`
	Region string    `json:"region,omitempty"`
}

func (e Event) String() string {
	if e.Region == "" {
		return string(e.Kind)
	}
	return string(e.Kind) + " " + e.Region
}

// Flags is the event as the failover commands' flags spell it: --region R [--action A].
func (e Event) Flags() string {
	switch {
	case e.Region == "":
		return "--action " + string(e.Kind)
	case e.Kind == Evacuate:
		return "--region " + e.Region
	}
	return "--region " + e.Region + " --action " + string(e.Kind)
}

// CommandLine is a pasteable failover command for a fleet, `lifeboat failover SUB --fleet F
// ARGS...` with the fleet argument shell-quoted and args as given: the one spelling of the
// CLI's hints and the notifications' next command.
func CommandLine(flt, sub string, args ...string) string {
	parts := append([]string{"lifeboat", "failover", sub, "--fleet", shell.Quote(flt)}, args...)
	return strings.Join(parts, " ")
}

// Rule names a safety invariant. Every step of every plan is checked against all of them.
type Rule string

const (
	// RuleResidency: a class's weight only goes to its eligible regions. Never overridable.
	RuleResidency Rule = "residency"
	// RuleNonZero: a class with traffic never has an all-zero weight vector. Never overridable.
	RuleNonZero Rule = "nonzero"
	// RuleTotals: each class keeps its total and every weight is in the driver's range. Never
	// overridable.
	RuleTotals Rule = "totals"
	// RuleStep: a step moves at most step_percent of a class's traffic (except --immediate).
	RuleStep Rule = "step_percent"
	// RuleHeadroom: a receiver gains only while its predicted queue wait stays under
	// spill_start_ms.
	RuleHeadroom Rule = "headroom"
	// RuleSpillCap: the share of a class's traffic outside its baseline regions stays within
	// spill_cap_percent (or does not grow).
	RuleSpillCap Rule = "spill_cap"
	// RuleWarm: a region that is not warm and healthy never gains weight.
	RuleWarm Rule = "warm"
	// RuleDrain: a region is drained (no new sessions) before it is cut off (maint), and a
	// drained or cut-off region has weight 0.
	RuleDrain Rule = "drain_before_withdraw"
	// RuleTransitions: at most max_transitions_per_hour changes per region.
	RuleTransitions Rule = "max_transitions"
	// RuleDwell: a failback waits until the region is warm and under spill_stop_ms for
	// failback_dwell.
	RuleDwell Rule = "failback_dwell"
)

// Rules are every rule, in the order they are reported.
var Rules = []Rule{RuleResidency, RuleNonZero, RuleTotals, RuleStep, RuleHeadroom, RuleSpillCap, RuleWarm, RuleDrain, RuleTransitions, RuleDwell}

// Overridable reports whether --override may bypass a rule. Residency, non-zero vectors and
// totals never can: no break-glass widens residency or hands a router a vector it interprets.
func (r Rule) Overridable() bool {
	switch r {
	case RuleResidency, RuleNonZero, RuleTotals:
		return false
	}
	return slices.Contains(Rules, r)
}

// ParseRule checks a --override argument.
func ParseRule(s string) (Rule, error) {
	r := Rule(s)
	if !slices.Contains(Rules, r) {
		names := make([]string, 0, len(Rules))
		for _, x := range Rules {
			if x.Overridable() {
				names = append(names, string(x))
			}
		}
		return "", fmt.Errorf("unknown rule %q (overridable: %s)%s", s, strings.Join(names, ", "), fleet.DidYouMean(s, names))
	}
	if !r.Overridable() {
		return "", fmt.Errorf("rule %s can never be overridden", s)
	}
	return r, nil
}

// PlanInput is everything the planner looks at. The planner does no I/O and is deterministic:
// the same input always gives the same plan.
type PlanInput struct {
	// Classes: tenant class → its eligible regions (the fleet's tenants).
	Classes map[string][]string
	// Capacity: region → prefill rate in tokens/s (replicas × prefill_tokens_per_s); 0 or absent
	// means unknown, and the region can take no load.
	Capacity map[string]float64
	Policy   fleet.Policy
	Weights  router.Weights // current router weights
	States   router.States  // current router states; nil means all Ready
	Signals  map[string]RegionSignal
	Event    Event
	// Baseline are the weights before the failover began: the target of restore and abort and
	// the reference of the spill cap. Nil means Weights.
	Baseline router.Weights
	// Transitions are each region's weight changes in the last hour (from the journal).
	Transitions map[string]int
	// Immediate moves everything in one step and cuts the region off without waiting for a
	// drain; only for a region that is already dead (not healthy).
	Immediate bool
	// Overrides are the rules --override bypasses.
	Overrides []Rule
	// MaxWeight is the driver's largest weight (HAProxy 256); 0 means no limit.
	MaxWeight int
	// Out are regions an open failover took out of service (evacuated, not yet restored): no
	// evacuation, spill or other region's restore moves traffic into them (abort may).
	Out []string
	// Only, when not empty, are the classes the plan may change (--class): every other class
	// keeps its weights and states exactly as they are, and its traffic still counts in every
	// receiver's load.
	Only []string
	// SkipBlocked plans every class (of Only, or of the fleet) that can reach its target and
	// leaves the others untouched, each named in Plan.Blocked with its rule and reason
	// (--skip-blocked). Such a plan is never complete while a class is blocked.
	SkipBlocked bool
	// Hint: a plan of several classes that cannot reach its target (without SkipBlocked) names
	// in Plan.CouldMove the classes that could move without the blocked ones. It costs a plan
	// per class, so only the commands that print a plan ask for it.
	Hint bool
	// OneReading: the signals are a single reading (failover plan against the live fleet), so
	// CalmSeconds cannot show how long a region has been calm: a restore held by failback_dwell
	// says so, and names the restore command that observes the dwell.
	OneReading bool
}

// InputFromFleet starts a PlanInput from a fleet: classes, capacities, policy.
func InputFromFleet(f *fleet.Fleet) PlanInput {
	in := PlanInput{Classes: map[string][]string{}, Capacity: map[string]float64{}, Policy: f.Failover}
	for c, rs := range f.Tenants {
		in.Classes[c] = slices.Clone(rs)
	}
	for n, r := range f.Regions {
		in.Capacity[n] = r.PrefillCapacity()
	}
	return in
}

func (in *PlanInput) overridden(r Rule) bool { return slices.Contains(in.Overrides, r) }

// Plan is the planner's output: a value to print, diff, approve, journal and execute.
type Plan struct {
	Event   Event `json:"event"`
	Refused bool  `json:"refused"`
	// Complete: the plan reaches its target. False when it is refused or holds short of it
	// (traffic it cannot place, a failback that stops before the baseline): carried out, such a
	// plan ends held for safety (a refusal), and run applies it only when the operator accepts.
	Complete bool `json:"complete"`
	// Rule is the rule that refused the plan or stopped it short of its target, and Reason says
	// why in words, naming the class and what would be needed.
	Rule   Rule   `json:"rule,omitempty"`
	Reason string `json:"reason"`
	// AlsoBlocking are the other rules that stood in the way of every move Rule stopped:
	// overriding Rule alone moves nothing more (empty when Rule alone was in some move's way).
	AlsoBlocking []Rule `json:"also_blocking,omitempty"`
	// Hold says why the plan stops before its goal (a rule that will pass later: dwell,
	// transitions, headroom); the steps before it are safe to run.
	Hold  string  `json:"hold,omitempty"`
	Steps []*Step `json:"steps"`
	// Shed is, per class, the percentage of its traffic the plan cannot place: it stays on the
	// evacuated region (and fails if that region is dead).
	Shed        map[string]float64 `json:"shed"`
	Start       router.RouterState `json:"start"`
	Final       router.RouterState `json:"final"`
	Overrides   []Rule             `json:"overrides,omitempty"`
	Immediate   bool               `json:"immediate,omitempty"`
	Assumptions []string           `json:"assumptions,omitempty"`
	// DecidedByAssumption: the hold or refusal rests on these assumptions (an unmeasured
	// inflow, assumed_utilization_percent of capacity), each with the measurement that would
	// settle it.
	DecidedByAssumption []string `json:"decided_by_assumption,omitempty"`
	// Regions is what the plan was decided on, one entry per region: health, the warm verdict,
	// queue wait, and whether its inflow was measured or assumed.
	Regions []RegionView `json:"regions,omitempty"`
	// Selected are the classes the operator restricted the plan to (--class), sorted; empty:
	// every class of the fleet.
	Selected []string `json:"selected,omitempty"`
	// SkipBlocked: the plan was made with --skip-blocked (see PlanInput.SkipBlocked).
	SkipBlocked bool `json:"skip_blocked,omitempty"`
	// Classes are the classes this plan covers, sorted: the only ones the executor writes,
	// compares with the journal and re-asserts. Empty: every class (a plan without --class or
	// --skip-blocked).
	Classes []string `json:"classes,omitempty"`
	// Blocked are the classes a --skip-blocked plan leaves untouched because they cannot move,
	// each with the rule and the reason.
	Blocked []ClassBlock `json:"blocked,omitempty"`
	// CouldMove, on a plan without --skip-blocked that cannot reach its target, are the classes
	// that could reach theirs without the blocked ones: what --skip-blocked would move.
	CouldMove []string `json:"could_move,omitempty"`
}

// ClassBlock is a class a plan leaves untouched: the rule that stops it and why.
type ClassBlock struct {
	Class  string `json:"class"`
	Rule   Rule   `json:"rule"`
	Reason string `json:"reason"`
}

// Covers reports whether the plan may change class (its Classes, or every class when empty).
func (p *Plan) Covers(class string) bool {
	return len(p.Classes) == 0 || slices.Contains(p.Classes, class)
}

// Scope is rs restricted to the classes the plan covers: what the executor writes, reads back
// and compares. A plan that covers every class gets rs itself.
func (p *Plan) Scope(rs router.RouterState) router.RouterState {
	if len(p.Classes) == 0 {
		return rs
	}
	out := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	for c, vec := range rs.Weights {
		if p.Covers(c) {
			out.Weights[c] = maps.Clone(vec)
		}
	}
	for c, vec := range rs.States {
		if p.Covers(c) {
			out.States[c] = maps.Clone(vec)
		}
	}
	for c, vec := range rs.Kept {
		if p.Covers(c) {
			out.Kept = out.Kept.Merge(router.Kept{c: vec})
		}
	}
	return out
}

// BlockedNames are the names of the blocked classes, in order.
func (p *Plan) BlockedNames() []string {
	out := make([]string, len(p.Blocked))
	for i, b := range p.Blocked {
		out[i] = b.Class
	}
	return out
}

// OnlyBlocked reports whether the plan falls short of its target only because of the classes
// --skip-blocked left untouched: what it moves, it moves all the way.
func (p *Plan) OnlyBlocked() bool {
	return !p.Refused && len(p.Blocked) > 0 && p.Hold == "" && len(p.Shed) == 0
}

// RegionView is one region as the planner saw it.
type RegionView struct {
	Region      string   `json:"region"`
	Healthy     bool     `json:"healthy"`
	Warm        bool     `json:"warm"`
	QueueWaitMS *float64 `json:"queue_wait_ms,omitempty"`
	// Inflow is "measured", "assumed" (assumed_utilization_percent of capacity) or "none" (no
	// weight and nothing measured).
	Inflow string `json:"inflow"`
	// InflowTokensPerS is the prefill inflow the plan started from (measured or assumed).
	InflowTokensPerS float64 `json:"inflow_tokens_per_s"`
	// Receiver: the region may gain traffic; otherwise Why says why not.
	Receiver bool   `json:"receiver"`
	Why      string `json:"why,omitempty"`
}

// Verdict is the plan's outcome in one line: what it reaches, or the rule that stops it and
// what is left.
func (p *Plan) Verdict() string {
	switch {
	case p.Refused:
		return fmt.Sprintf("REFUSED (%s): %s", p.Rule, p.Reason)
	case p.OnlyBlocked():
		return fmt.Sprintf("PARTIAL, held for safety (%s): %s", p.Rule, p.Reason)
	case p.Complete && len(p.Classes) > 0:
		return fmt.Sprintf("%s for %s only: complete in %d step(s); every other class left as it is", p.Event, strings.Join(p.Classes, ", "), len(p.Steps))
	case p.Complete:
		return fmt.Sprintf("%s: complete in %d step(s)", p.Event, len(p.Steps))
	}
	why := p.Hold
	if why == "" {
		why = p.Reason
	}
	return fmt.Sprintf("HELD for safety (%s): %s cannot complete: %s", p.Rule, p.Event, why)
}

// DownWarning is what a ramped evacuation of a region that is DOWN must say beside its verdict:
// the ramp keeps sending it traffic at every step. "" for any other plan.
func (p *Plan) DownWarning() string {
	if p.Event.Kind != Evacuate || p.Immediate || p.Refused {
		return ""
	}
	for _, r := range p.Regions {
		if r.Region == p.Event.Region && !r.Healthy {
			return fmt.Sprintf("but %s is DOWN: ramping keeps sending it traffic; use --immediate", r.Region)
		}
	}
	return ""
}

// Step is one change of the router.
type Step struct {
	// Weights are the complete new vectors of the classes this step changes.
	Weights router.Weights `json:"weights"`
	// States are the server states this step changes.
	States router.States `json:"states,omitempty"`
	// PredictedQueueWaitMS is each receiver's predicted queue wait after the step.
	PredictedQueueWaitMS map[string]float64 `json:"predicted_queue_wait_ms"`
	// Drain lists the regions this step drains (no new sessions) in some class.
	Drain []string `json:"drain"`
	// Withdraw lists the regions this step cuts off (maint) in some class.
	Withdraw []string `json:"withdraw,omitempty"`
	// WaitForDrain: before this step, wait until each withdrawn region's in-flight requests
	// are under drain_running_below, or drain_timeout passes.
	WaitForDrain bool `json:"wait_for_drain,omitempty"`
}

// After returns the router state after steps [0, k] of the plan (k = -1: the start).
func (p *Plan) After(k int) router.RouterState {
	s := p.Start.Clone()
	if s.States == nil {
		s.States = router.States{}
	}
	for i := 0; i <= k && i < len(p.Steps); i++ {
		s.Weights.Apply(p.Steps[i].Weights)
		s.States.Apply(p.Steps[i].States)
	}
	return s
}

// Violation is one broken rule.
type Violation struct {
	Rule   Rule   `json:"rule"`
	Class  string `json:"class,omitempty"`
	Region string `json:"region,omitempty"`
	Detail string `json:"detail"`
	// A stop condition's violation (Rule is the condition's name): the query as sent, the value
	// (absent when there was none: empty, NaN, Prometheus down), the threshold it broke and,
	// of several series, the worst one's labels.
	Query     string   `json:"query,omitempty"`
	Value     *float64 `json:"value,omitempty"`
	Threshold string   `json:"threshold,omitempty"`
	Series    string   `json:"series,omitempty"`
}

// StopCondition reports whether the violation is a stop condition's.
func (v Violation) StopCondition() bool { return v.Query != "" }

func (v Violation) String() string {
	if v.StopCondition() {
		return StopResult{Name: string(v.Rule), Region: v.Region, Query: v.Query, Series: v.Series, Why: v.Detail}.String()
	}
	where := v.Class
	if v.Region != "" {
		where += "/" + v.Region
	}
	return fmt.Sprintf("%s: %s: %s", v.Rule, where, v.Detail)
}

// queueWaitScaleMS is the queue wait one unit of ρ/(1-ρ) adds when the measured wait gives no
// larger calibration (see PredictQueueWait).
const queueWaitScaleMS = 100

// PredictQueueWait predicts a region's queue wait at prefill inflow d (tokens/s) from its
// measured wait q0 at inflow d0 and its capacity P, on the M/M/1 shape W ∝ ρ/(1-ρ):
// q = q0 + S·(f(d/P) − f(d0/P)), f(ρ) = ρ/(1-ρ), S = max(100 ms, q0/f(ρ0)), never below 0, and
// +Inf at or over capacity. It is monotone in d.
func PredictQueueWait(q0, d0, d, P float64) float64 {
	if P <= 0 || d >= P {
		return math.Inf(1)
	}
	f := func(rho float64) float64 { return rho / (1 - rho) }
	rho0 := math.Min(d0/P, 0.999)
	s := float64(queueWaitScaleMS)
	if rho0 > 0 && q0/f(rho0) > s {
		s = q0 / f(rho0)
	}
	q := q0 + s*(f(d/P)-f(rho0))
	if q < 0 {
		return 0
	}
	return q
}

// model is the planner's dense view of the input.
type model struct {
	in       *PlanInput
	regions  []string
	ridx     map[string]int
	capacity []float64
	q0, d0   []float64
	receive  []bool   // warm, healthy, queue wait and capacity known
	why      []string // why a region cannot receive
	assumed  []string // regions whose inflow was assumed (not measured)
	classes  []*mclass
}

type mclass struct {
	name      string
	elig      []int // region indices, the class's eligible regions
	pos       map[int]int
	w, base   []int
	total     int
	unit      float64 // prefill inflow (tokens/s) per weight unit
	stepUnits int
	capUnits  int
	// frozen: the plan leaves the class as it is (not in PlanInput.Only); its traffic still
	// loads the regions it is on.
	frozen bool
}

func newModel(in *PlanInput) (*model, []string) {
	m := &model{in: in, ridx: map[string]int{}}
	names := map[string]bool{}
	for _, rs := range in.Classes {
		for _, r := range rs {
			names[r] = true
		}
	}
	for r := range in.Capacity {
		names[r] = true
	}
	for r := range in.Signals {
		names[r] = true
	}
	for r := range names {
		m.regions = append(m.regions, r)
	}
	sort.Strings(m.regions)
	n := len(m.regions)
	m.capacity, m.q0, m.d0 = make([]float64, n), make([]float64, n), make([]float64, n)
	m.receive, m.why = make([]bool, n), make([]string, n)
	for i, r := range m.regions {
		m.ridx[r] = i
		m.capacity[i] = in.Capacity[r]
	}
	baseline := in.Baseline
	if baseline == nil {
		baseline = in.Weights
	}
	hasWeight := make([]bool, n)
	for _, c := range slices.Sorted(maps.Keys(in.Classes)) {
		mc := &mclass{name: c, pos: map[int]int{}, frozen: len(in.Only) > 0 && !slices.Contains(in.Only, c)}
		for _, r := range in.Classes[c] {
			i := m.ridx[r]
			mc.pos[i] = len(mc.elig)
			mc.elig = append(mc.elig, i)
			w := in.Weights[c][r]
			mc.w = append(mc.w, w)
			mc.base = append(mc.base, baseline[c][r])
			mc.total += w
			if w > 0 {
				hasWeight[i] = true
			}
		}
		mc.stepUnits = max(1, mc.total*in.Policy.StepPercent/100)
		mc.capUnits = mc.total * in.Policy.SpillCapPercent / 100
		m.classes = append(m.classes, mc)
	}
	var assumptions []string
	for i, r := range m.regions {
		sig, ok := in.Signals[r]
		switch {
		case !ok:
			m.why[i] = "no signals"
		case !sig.Healthy:
			m.why[i] = "not healthy"
		case !sig.Warm:
			m.why[i] = "not warm"
		case sig.QueueWaitMS == nil:
			m.why[i] = "queue wait unknown"
		case m.capacity[i] <= 0:
			m.why[i] = "capacity unknown (capacity.replicas × prefill_tokens_per_s)"
		case in.Event.Kind != Abort && slices.Contains(in.Out, r) && !(in.Event.Kind == Restore && in.Event.Region == r):
			m.why[i] = "taken out by the open failover (evacuated): restore it first"
		default:
			m.receive[i] = true
		}
		if sig.Why != "" && m.why[i] != "" {
			m.why[i] += " (" + sig.Why + ")"
		}
		if sig.QueueWaitMS != nil {
			m.q0[i] = *sig.QueueWaitMS
		}
		switch {
		case sig.PrefillTokensPerS != nil:
			m.d0[i] = *sig.PrefillTokensPerS
		case hasWeight[i]:
			m.d0[i] = m.capacity[i] * float64(in.Policy.AssumedUtilizationPercent) / 100
			if m.capacity[i] > 0 {
				assumptions = append(assumptions, fmt.Sprintf("%s: prefill inflow not measured, assumed %d%% of capacity", r, in.Policy.AssumedUtilizationPercent))
				m.assumed = append(m.assumed, r)
			}
		}
	}
	// Split each region's inflow over its classes by their weight shares, then give each class
	// an inflow per weight unit.
	shareSum := make([]float64, n)
	for _, mc := range m.classes {
		if mc.total == 0 {
			continue
		}
		for k, i := range mc.elig {
			shareSum[i] += float64(mc.w[k]) / float64(mc.total)
		}
	}
	for _, mc := range m.classes {
		if mc.total == 0 {
			continue
		}
		var demand float64
		for k, i := range mc.elig {
			if shareSum[i] > 0 {
				demand += m.d0[i] * (float64(mc.w[k]) / float64(mc.total)) / shareSum[i]
			}
		}
		mc.unit = demand / float64(mc.total)
	}
	return m, assumptions
}

// inflow is each region's predicted prefill inflow under weights w (dense).
func (m *model) inflow(w [][]int) []float64 {
	d := slices.Clone(m.d0)
	for ci, mc := range m.classes {
		for k, i := range mc.elig {
			d[i] += mc.unit * float64(w[ci][k]-mc.w[k])
		}
	}
	for i := range d {
		d[i] = math.Max(d[i], 0)
	}
	return d
}

func (m *model) predict(i int, d float64) float64 {
	return PredictQueueWait(m.q0[i], m.d0[i], d, m.capacity[i])
}
