package failover

import (
	"math/rand/v2"
	"slices"
	"testing"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

// The rule a blocked plan names is the rule that blocked it: for random plans that stop short
// of their target or are refused for an overridable rule, planning again with that rule
// overridden (and, when the plan says every move it stopped had others in the way too, those)
// changes the outcome — more traffic placed, another final state, or the plan completing.
// Overriding a rule that did not block changes nothing, which is how a wrong name (headroom
// for a donor at max_transitions) was found. The property covers the rules named for traffic
// that could not move (headroom, spill_cap, max_transitions): warm also stands for healthy,
// which no override bypasses, and warm and failback_dwell of a restored region are gates
// checked before any move, named as such. Spill is left out: which overloaded donor gives first
// depends on the rules in force, so an override can let another donor use up what the named
// move needed (the name is still the rule that stopped it).
func TestBlockedPlanNamesTheBlockingRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 6))
	overridable := []Rule{RuleHeadroom, RuleSpillCap, RuleTransitions}
	checked := map[Rule]int{}
	for n := 0; n < propertyCases; n++ {
		in := randomInput(rng)
		in.Overrides = nil
		p := MakePlan(in)
		if p.Complete || in.Event.Kind == Spill || !slices.Contains(overridable, p.Rule) || slices.Contains(p.AlsoBlocking, RuleWarm) || slices.Contains(p.AlsoBlocking, RuleDrain) {
			continue // warm also stands for healthy, drain for a receiver cut off: no override bypasses them
		}
		o := in
		o.Overrides = append([]Rule{p.Rule}, p.AlsoBlocking...)
		q := MakePlan(o)
		same := q.Refused == p.Refused && q.Complete == p.Complete && q.Final.Weights.Equal(p.Final.Weights) && q.Final.States.Equal(p.Final.States)
		if same {
			t.Fatalf("case %d: %s plan held by %q (%s); overriding %v changes nothing:\nplan: refused %v, %d steps, final %v\nagain: refused %v, %d steps, final %v, hold %q",
				n, in.Event, p.Rule, p.Verdict(), o.Overrides, p.Refused, len(p.Steps), p.Final.Weights, q.Refused, len(q.Steps), q.Final.Weights, q.Verdict())
		}
		checked[p.Rule]++
	}
	t.Logf("blocked plans whose named rule was overridden: %v", checked)
	for _, r := range []Rule{RuleHeadroom, RuleTransitions, RuleSpillCap} {
		if checked[r] == 0 {
			t.Errorf("no blocked plan named %s: the property is not exercised for it", r)
		}
	}
}

// A restore whose donor reached max_transitions_per_hour (the receiver may still change) names
// max_transitions, never "headroom: nothing could move": overriding headroom changes nothing,
// overriding max_transitions completes it.
func TestRestoreBlockedByDonorTransitions(t *testing.T) {
	in := PlanInput{
		Event:    Event{Kind: Restore, Region: "eu-west-1"},
		Classes:  map[string][]string{"eu-only": {"eu-west-1", "eu-central-1"}},
		Capacity: map[string]float64{"eu-west-1": 8000, "eu-central-1": 8000},
		Policy:   fleet.DefaultPolicy(),
		Weights:  router.Weights{"eu-only": {"eu-west-1": 0, "eu-central-1": 100}},
		Baseline: router.Weights{"eu-only": {"eu-west-1": 50, "eu-central-1": 50}},
		Signals: map[string]RegionSignal{
			"eu-west-1":    {Warm: true, Healthy: true, QueueWaitMS: fptr(10), CalmSeconds: fptr(3600), PrefillTokensPerS: fptr(0), Running: iptr(0)},
			"eu-central-1": {Warm: true, Healthy: true, QueueWaitMS: fptr(10), PrefillTokensPerS: fptr(3000), Running: iptr(1)},
		},
	}
	in.Policy.MaxTransitionsPerHour = 4
	in.Transitions = map[string]int{"eu-central-1": 4, "eu-west-1": 2}
	p := MakePlan(in)
	if p.Complete || p.Rule != RuleTransitions {
		t.Fatalf("restore with its donor at max_transitions_per_hour: rule %q, %s", p.Rule, p.Verdict())
	}
	in.Overrides = []Rule{RuleHeadroom}
	if q := MakePlan(in); q.Complete || !q.Final.Weights.Equal(p.Final.Weights) {
		t.Fatalf("overriding headroom changed the outcome: %s", q.Verdict())
	}
	in.Overrides = []Rule{RuleTransitions}
	if q := MakePlan(in); !q.Complete {
		t.Fatalf("overriding max_transitions did not complete the restore: %s", q.Verdict())
	}
}
