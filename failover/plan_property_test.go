package failover

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

// propertyCases is how many random plans every `go test` run checks.
const propertyCases = 100_000

// randomInput draws a fleet, weights, signals, history and an event.
func randomInput(rng *rand.Rand) PlanInput {
	nr := 2 + rng.IntN(6)
	regions := make([]string, nr)
	for i := range regions {
		regions[i] = fmt.Sprintf("r%d", i)
	}
	pol := fleet.DefaultPolicy()
	pol.StepPercent = []int{1, 5, 10, 10, 25, 25, 50, 100}[rng.IntN(8)]
	if pol.StepPercent == 1 && rng.IntN(4) > 0 {
		pol.StepPercent = 20 // 1 % steps (100+ steps a plan) in a few cases only: they cost the most
	}
	pol.SpillStartMS = 50 + rng.IntN(800)
	pol.SpillStopMS = rng.IntN(pol.SpillStartMS)
	pol.SpillCapPercent = rng.IntN(101)
	pol.MaxTransitionsPerHour = 1 + rng.IntN(20)
	pol.AssumedUtilizationPercent = 1 + rng.IntN(99)
	pol.FailbackDwell = time.Duration(rng.IntN(600)) * time.Second
	in := PlanInput{Classes: map[string][]string{}, Capacity: map[string]float64{}, Policy: pol,
		Weights: router.Weights{}, States: router.States{}, Signals: map[string]RegionSignal{}, Transitions: map[string]int{}}
	if rng.IntN(3) == 0 {
		in.MaxWeight = 256
	}
	for _, r := range regions {
		in.Capacity[r] = 0 // every fleet region is known; 0 is an unknown capacity
		if rng.IntN(10) > 0 {
			in.Capacity[r] = float64(1+rng.IntN(50)) * 1000
		}
		sig := RegionSignal{Warm: rng.IntN(5) > 0, Healthy: rng.IntN(6) > 0}
		if rng.IntN(8) > 0 {
			sig.QueueWaitMS = fptr(float64(rng.IntN(1000)))
		}
		if rng.IntN(2) == 0 {
			sig.PrefillTokensPerS = fptr(rng.Float64() * in.Capacity[r])
		}
		if rng.IntN(2) == 0 {
			sig.CalmSeconds = fptr(float64(rng.IntN(1200)))
		}
		sig.Running = iptr(rng.IntN(5))
		if rng.IntN(10) > 0 {
			in.Signals[r] = sig
		}
		in.Transitions[r] = rng.IntN(pol.MaxTransitionsPerHour + 2)
	}
	nc := 1 + rng.IntN(4)
	for c := 0; c < nc; c++ {
		name := fmt.Sprintf("c%d", c)
		perm := rng.Perm(nr)
		elig := []string{}
		for _, i := range perm[:1+rng.IntN(nr)] {
			elig = append(elig, regions[i])
		}
		in.Classes[name] = elig
		vec := map[string]int{}
		for _, r := range elig {
			v := 0
			if rng.IntN(4) > 0 {
				v = rng.IntN(120)
			}
			if in.MaxWeight > 0 {
				v = min(v, in.MaxWeight)
			}
			vec[r] = v
			if v == 0 && rng.IntN(3) == 0 {
				in.States.Set(name, r, []router.State{router.Drain, router.Maint}[rng.IntN(2)])
			}
		}
		in.Weights[name] = vec
	}
	kinds := []EventKind{Evacuate, Evacuate, Restore, Spill, Abort}
	in.Event = Event{Kind: kinds[rng.IntN(len(kinds))]}
	if in.Event.Kind == Evacuate || in.Event.Kind == Restore {
		in.Event.Region = regions[rng.IntN(nr)]
	}
	if in.Event.Kind != Evacuate && rng.IntN(2) == 0 {
		// a baseline: the same totals, spread differently over each class's eligible regions
		in.Baseline = router.Weights{}
		for c, vec := range in.Weights {
			total := 0
			for _, v := range vec {
				total += v
			}
			elig := in.Classes[c]
			b := map[string]int{}
			for total > 0 {
				r := elig[rng.IntN(len(elig))]
				if in.MaxWeight > 0 && b[r] >= in.MaxWeight {
					continue
				}
				b[r]++
				total--
			}
			in.Baseline[c] = b
		}
	}
	if in.Event.Kind == Evacuate && !in.Signals[in.Event.Region].Healthy && rng.IntN(2) == 0 {
		in.Immediate = true
	}
	if rng.IntN(10) == 0 {
		over := []Rule{RuleStep, RuleHeadroom, RuleSpillCap, RuleWarm, RuleDrain, RuleTransitions, RuleDwell}
		in.Overrides = []Rule{over[rng.IntN(len(over))]}
	}
	return in
}

// checkPlan re-derives every invariant of every step independently of the planner's own check,
// and that a refusal (or a plan that cannot start) had no safe alternative.
func checkPlan(t testing.TB, in PlanInput, p *Plan) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nevent %v immediate %v overrides %v\nclasses %v\nweights %v\nstates %v\nsignals %s\nplan refused=%v %s %s hold=%s steps=%d",
			fmt.Sprintf(format, args...), in.Event, in.Immediate, in.Overrides, in.Classes, in.Weights, in.States, dumpSignals(in.Signals), p.Refused, p.Rule, p.Reason, p.Hold, len(p.Steps))
	}
	over := func(r Rule) bool { return slices.Contains(in.Overrides, r) }
	// covers: the classes the plan moves (--class, --skip-blocked); every class otherwise
	covers := func(c string) bool { return p.Covers(c) && !slices.Contains(p.BlockedNames(), c) }
	if p.Refused {
		if len(p.Steps) != 0 {
			fail("refused with steps")
		}
		if len(p.Reason) == 0 {
			fail("refused without a reason")
		}
		checkRefusal(t, in, p, covers, fail)
		return
	}
	start := router.RouterState{Weights: in.Weights.Clone(), States: in.States.Clone()}
	if start.States == nil {
		start.States = router.States{}
	}
	cur := start.Clone()
	base := in.Baseline
	if base == nil {
		base = in.Weights
	}
	// the test's own load model: class inflow per weight unit, from the start
	d0 := map[string]float64{}
	hasW := map[string]bool{}
	for _, vec := range in.Weights {
		for r, v := range vec {
			if v > 0 {
				hasW[r] = true
			}
		}
	}
	for r := range in.Capacity {
		if s, ok := in.Signals[r]; ok && s.PrefillTokensPerS != nil {
			d0[r] = *s.PrefillTokensPerS
		} else if hasW[r] {
			d0[r] = in.Capacity[r] * float64(in.Policy.AssumedUtilizationPercent) / 100
		}
	}
	shareSum := map[string]float64{}
	for c, vec := range in.Weights {
		if T := in.Weights.Total(c); T > 0 {
			for r, v := range vec {
				shareSum[r] += float64(v) / float64(T)
			}
		}
	}
	unit := map[string]float64{}
	for c, vec := range in.Weights {
		T := in.Weights.Total(c)
		if T == 0 {
			continue
		}
		var dem float64
		for r, v := range vec {
			if shareSum[r] > 0 {
				dem += d0[r] * (float64(v) / float64(T)) / shareSum[r]
			}
		}
		unit[c] = dem / float64(T)
	}
	trans := map[string]int{}
	for r, n := range in.Transitions {
		trans[r] = n
	}
	for k, st := range p.Steps {
		next := cur.Clone()
		next.Weights.Apply(st.Weights)
		next.States.Apply(st.States)
		changed := map[string]bool{}
		inflow := map[string]float64{}
		for r, v := range d0 {
			inflow[r] = v
		}
		for c := range in.Classes {
			for r, v := range next.Weights[c] {
				inflow[r] += unit[c] * float64(v-in.Weights[c][r])
			}
			for r := range in.Weights[c] {
				if _, ok := next.Weights[c][r]; !ok {
					inflow[r] -= unit[c] * float64(in.Weights[c][r])
				}
			}
		}
		for c, elig := range in.Classes {
			T0, T1 := cur.Weights.Total(c), next.Weights.Total(c)
			if T0 != T1 {
				fail("step %d: class %s total %d → %d", k, c, T0, T1)
			}
			nonzero, gained := false, 0
			sp0, sp1 := 0, 0
			for _, r := range unionKeys(cur.Weights[c], next.Weights[c], base[c]) {
				a, b := cur.Weights[c][r], next.Weights[c][r]
				sp0 += max(0, a-base[c][r])
				sp1 += max(0, b-base[c][r])
				if b > 0 && !slices.Contains(elig, r) {
					fail("step %d: residency: class %s gets %d on %s outside %v", k, c, b, r, elig)
				}
				if b < 0 || (in.MaxWeight > 0 && b > in.MaxWeight) {
					fail("step %d: weight %d out of range", k, b)
				}
				nonzero = nonzero || b > 0
				if a != b || cur.States.Get(c, r) != next.States.Get(c, r) {
					changed[r] = true
				}
				if b > a {
					gained += b - a
					sig := in.Signals[r]
					if !over(RuleWarm) && !(sig.Warm && sig.Healthy) {
						fail("step %d: %s gains in %s but is not warm and healthy", k, r, c)
					}
					if !sig.Healthy || sig.QueueWaitMS == nil || in.Capacity[r] <= 0 {
						fail("step %d: %s gains without a known queue wait, health or capacity", k, r)
					}
					q := PredictQueueWait(*sig.QueueWaitMS, d0[r], math.Max(0, inflow[r]), in.Capacity[r])
					if !over(RuleHeadroom) && !(q < float64(in.Policy.SpillStartMS)) {
						fail("step %d: %s gains with predicted wait %.1f ≥ spill_start %d", k, r, q, in.Policy.SpillStartMS)
					}
				}
				if s := next.States.Get(c, r); s != router.Ready && b > 0 {
					fail("step %d: %s/%s is %s with weight %d", k, c, r, s, b)
				}
				if cur.States.Get(c, r) == router.Ready && next.States.Get(c, r) == router.Maint && !in.Immediate && !over(RuleDrain) {
					fail("step %d: %s/%s cut off without a drain", k, c, r)
				}
			}
			if T0 > 0 && !nonzero {
				fail("step %d: all-zero vector for %s", k, c)
			}
			if lim := max(1, T0*in.Policy.StepPercent/100); gained > lim && !in.Immediate && !over(RuleStep) {
				fail("step %d: class %s moves %d > %d", k, c, gained, lim)
			}
			if capU := T0 * in.Policy.SpillCapPercent / 100; sp1 > capU && sp1 > sp0 && !over(RuleSpillCap) {
				fail("step %d: class %s spill %d > cap %d (was %d)", k, c, sp1, capU, sp0)
			}
		}
		for r := range changed {
			trans[r]++
			if trans[r] > in.Policy.MaxTransitionsPerHour && !over(RuleTransitions) {
				fail("step %d: %s transition %d > %d", k, r, trans[r], in.Policy.MaxTransitionsPerHour)
			}
		}
		if len(changed) == 0 {
			fail("step %d changes nothing", k)
		}
		if st.WaitForDrain && len(st.Withdraw) == 0 {
			fail("step %d waits for a drain without withdrawing", k)
		}
		cur = next
	}
	if !cur.Weights.Equal(p.Final.Weights) || !cur.States.Equal(p.Final.States) {
		fail("Final is not the last step's state")
	}
	switch in.Event.Kind {
	case Evacuate:
		R := in.Event.Region
		left := 0
		for c := range in.Classes {
			if covers(c) {
				left += cur.Weights[c][R]
			}
		}
		if left == 0 && p.Hold == "" {
			for c, elig := range in.Classes {
				if covers(c) && slices.Contains(elig, R) && cur.States.Get(c, R) != router.Maint {
					fail("evacuation finished but %s/%s is %s, not maint", c, R, cur.States.Get(c, R))
				}
			}
		}
		if left > 0 && p.Hold == "" {
			fail("evacuation leaves %d on %s without saying why", left, R)
		}
		if len(p.Steps) == 0 && left > 0 {
			noSafeUnitMove(t, in, covers, fail)
		}
	case Restore:
		if len(p.Steps) == 0 && p.Hold == "" && p.Reason == "" {
			// nothing to do must mean R already holds its target
		}
	}
}

// checkRefusal proves a refusal had no safe alternative.
func checkRefusal(t testing.TB, in PlanInput, p *Plan, covers func(string) bool, fail func(string, ...any)) {
	t.Helper()
	R := in.Event.Region
	switch p.Rule {
	case RuleResidency:
		for c, elig := range in.Classes {
			if in.Weights[c][R] == 0 || !covers(c) {
				continue
			}
			ok := false
			for _, r := range elig {
				s, has := in.Signals[r]
				if r != R && has && in.States.Get(c, r) == router.Ready && s.Healthy && (s.Warm || slices.Contains(in.Overrides, RuleWarm)) && s.QueueWaitMS != nil && in.Capacity[r] > 0 {
					ok = true
				}
			}
			if !ok {
				return // this class really had no receiver
			}
		}
		fail("residency refusal but every class with traffic on %s had a receiver", R)
	default:
		if p.Rule == RuleDrain && in.Immediate && in.Signals[R].Healthy {
			return // --immediate is refused for a healthy region
		}
		if in.Event.Kind != Evacuate {
			fail("refusal %s of a %s plan", p.Rule, in.Event.Kind)
		}
		noSafeUnitMove(t, in, covers, fail)
	}
}

// noSafeUnitMove: moving a single unit of any class off the evacuated region to any other
// eligible region breaks a rule (CheckStep, from the start state).
func noSafeUnitMove(t testing.TB, in PlanInput, covers func(string) bool, fail func(string, ...any)) {
	t.Helper()
	R := in.Event.Region
	for c, elig := range in.Classes {
		if in.Weights[c][R] == 0 || !covers(c) {
			continue
		}
		for _, r := range elig {
			if r == R {
				continue
			}
			vec := map[string]int{}
			for k, v := range in.Weights[c] {
				vec[k] = v
			}
			vec[R]--
			vec[r]++
			st := &Step{Weights: router.Weights{c: vec}}
			if in.States.Get(c, r) != router.Ready {
				continue // evacuations only move into ready receivers; restore and abort re-admit
			}
			if len(CheckStep(in, st)) == 0 {
				fail("refused or held, but moving one unit of %s from %s to %s passes every rule", c, R, r)
			}
		}
	}
}

func unionKeys(ms ...map[string]int) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dumpSignals(m map[string]RegionSignal) string {
	s := ""
	for _, r := range slices.Sorted(maps.Keys(m)) {
		sig := m[r]
		q, d := "nil", "nil"
		if sig.QueueWaitMS != nil {
			q = fmt.Sprint(*sig.QueueWaitMS)
		}
		if sig.PrefillTokensPerS != nil {
			d = fmt.Sprintf("%.0f", *sig.PrefillTokensPerS)
		}
		s += fmt.Sprintf("%s{warm %v healthy %v q %s d %s} ", r, sig.Warm, sig.Healthy, q, d)
	}
	return s
}

// TestPlanProperties: 10^5 random fleets, weights, signals and events; no step of any plan
// breaks an invariant, and every refusal had no safe alternative.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 2026))
	counts := map[string]int{}
	for n := 0; n < propertyCases; n++ {
		in := randomInput(rng)
		p := MakePlan(in)
		checkPlan(t, in, p)
		switch {
		case p.Refused:
			counts["refused:"+string(p.Rule)]++
		case len(p.Steps) == 0:
			counts["no steps"]++
		default:
			counts[string(in.Event.Kind)+" with steps"]++
		}
		// deterministic: the same input gives the same plan
		if n%1000 == 0 {
			q := MakePlan(in)
			if len(q.Steps) != len(p.Steps) || q.Reason != p.Reason || !q.Final.Weights.Equal(p.Final.Weights) {
				t.Fatalf("case %d: two plans of one input differ", n)
			}
		}
	}
	t.Logf("%d cases: %v", propertyCases, counts)
	for _, k := range []string{"evacuate with steps", "restore with steps", "spill with steps", "abort with steps", "refused:residency"} {
		if counts[k] == 0 {
			t.Errorf("the generator never produced %q: the property test is not exercising it", k)
		}
	}
}

// FuzzPlan runs the same properties on inputs drawn from fuzzed seeds.
func FuzzPlan(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s, s*7)
	}
	f.Fuzz(func(t *testing.T, a, b uint64) {
		rng := rand.New(rand.NewPCG(a, b))
		in := randomInput(rng)
		checkPlan(t, in, MakePlan(in))
	})
}
