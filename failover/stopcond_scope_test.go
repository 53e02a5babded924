package failover

import (
	"slices"
	"testing"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

// A condition scoped to regions or classes is evaluated only before a write that changes one
// of them; a {{.Region}} query once per region the write changes (of its own, when it lists some).
func TestStopScope(t *testing.T) {
	cur := router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}}}
	st := &Step{Weights: router.Weights{"eu-only": {"eu-west-1": 25, "eu-central-1": 75}}}
	sc := stepScope(cur, st)
	if !slices.Equal(sc.Classes, []string{"eu-only"}) || !slices.Equal(sc.Regions, []string{"eu-central-1", "eu-west-1"}) {
		t.Fatalf("scope %+v", sc)
	}
	drain := stepScope(cur, &Step{States: router.States{"global": {"eu-west-1": router.Drain}}, Drain: []string{"eu-west-1"}})
	if !slices.Equal(drain.Classes, []string{"global"}) || !slices.Equal(drain.Regions, []string{"eu-west-1"}) {
		t.Fatalf("a state change is a change: %+v", drain)
	}
	for _, c := range []struct {
		name string
		cond fleet.StopCondition
		want []string // nil: out of scope
	}{
		{"unscoped", fleet.StopCondition{}, []string{""}},
		{"a region it changes", fleet.StopCondition{Regions: []string{"eu-west-1", "us-east-1"}}, []string{""}},
		{"no region it changes", fleet.StopCondition{Regions: []string{"us-east-1"}}, nil},
		{"a class it changes", fleet.StopCondition{Classes: []string{"eu-only"}}, []string{""}},
		{"another class", fleet.StopCondition{Classes: []string{"global"}}, nil},
		{"per region", fleet.StopCondition{PerRegion: true}, []string{"eu-central-1", "eu-west-1"}},
		{"per listed region", fleet.StopCondition{PerRegion: true, Regions: []string{"eu-west-1", "us-east-1"}}, []string{"eu-west-1"}},
	} {
		got, ok := regionsFor(&c.cond, sc)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.name, got, ok, c.want)
		}
	}
}
