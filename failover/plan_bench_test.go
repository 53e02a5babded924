package failover

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

func largeInput(nRegions, nClasses int) PlanInput {
	rng := rand.New(rand.NewPCG(7, 7))
	pol := fleet.DefaultPolicy()
	pol.SpillCapPercent = 100
	in := PlanInput{Classes: map[string][]string{}, Capacity: map[string]float64{}, Policy: pol, Weights: router.Weights{}, Signals: map[string]RegionSignal{}}
	regions := make([]string, nRegions)
	for i := range regions {
		regions[i] = fmt.Sprintf("region-%04d", i)
		in.Capacity[regions[i]] = 80_000
		in.Signals[regions[i]] = RegionSignal{Warm: true, Healthy: true, QueueWaitMS: fptr(20), PrefillTokensPerS: fptr(20_000)}
	}
	for c := 0; c < nClasses; c++ {
		elig := []string{regions[0]}
		if c == 0 {
			elig = slices.Clone(regions)
		} else {
			for _, i := range rng.Perm(nRegions - 1)[:4+rng.IntN(46)] {
				elig = append(elig, regions[i+1])
			}
		}
		name := fmt.Sprintf("class-%03d", c)
		in.Classes[name] = elig
		vec := map[string]int{}
		for _, r := range elig {
			vec[r] = 1 + rng.IntN(100)
		}
		in.Weights[name] = vec
	}
	in.Event = Event{Kind: Evacuate, Region: regions[0]}
	return in
}

// BenchmarkPlan1000x200 is the planning figure of `make bench` (section 7).
func BenchmarkPlan1000x200(b *testing.B) {
	in := largeInput(1000, 200)
	for b.Loop() {
		if p := MakePlan(in); p.Refused {
			b.Fatal(p.Reason)
		}
	}
}
