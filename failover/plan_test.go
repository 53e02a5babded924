package failover

import (
	"encoding/json"
	"strings"
	"testing"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

func fptr(v float64) *float64 { return &v }
func iptr(v int) *int         { return &v }

// sampleInput is the DESIGN fleet: an EU-only class and a global one.
func sampleInput() PlanInput {
	pol := fleet.DefaultPolicy()
	pol.SpillCapPercent = 60
	in := PlanInput{
		Classes: map[string][]string{
			"eu-only": {"eu-west-1", "eu-central-1"},
			"global":  {"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"},
		},
		Capacity: map[string]float64{"us-east-1": 60 * 8000, "us-west-2": 10 * 8000, "eu-west-1": 40 * 8000, "eu-central-1": 40 * 8000, "ap-southeast-1": 30 * 8000},
		Policy:   pol,
		Weights: router.Weights{
			"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
			"global":  {"us-east-1": 40, "us-west-2": 10, "eu-west-1": 30, "ap-southeast-1": 20},
		},
		Signals: map[string]RegionSignal{
			"us-east-1":      {Warm: true, Healthy: true, QueueWaitMS: fptr(20), Running: iptr(3)},
			"us-west-2":      {Warm: true, Healthy: true, QueueWaitMS: fptr(30), Running: iptr(3)},
			"eu-west-1":      {Warm: true, Healthy: true, QueueWaitMS: fptr(40), Running: iptr(3)},
			"eu-central-1":   {Warm: true, Healthy: true, QueueWaitMS: fptr(10), Running: iptr(3)},
			"ap-southeast-1": {Warm: true, Healthy: true, QueueWaitMS: fptr(25), Running: iptr(3)},
		},
		Event: Event{Kind: Evacuate, Region: "eu-west-1"},
	}
	for r, sig := range in.Signals {
		sig.PrefillTokensPerS = fptr(in.Capacity[r] / 5) // 20 % utilisation, measured
		in.Signals[r] = sig
	}
	return in
}

func TestPlanEvacuateSample(t *testing.T) {
	p := MakePlan(sampleInput())
	b, _ := json.MarshalIndent(p, "", " ")
	if p.Refused {
		t.Fatalf("refused: %s", b)
	}
	fin := p.Final
	if fin.Weights["eu-only"]["eu-west-1"] != 0 || fin.Weights["global"]["eu-west-1"] != 0 || fin.Weights["eu-only"]["eu-central-1"] != 100 {
		t.Fatalf("final %v\n%s", fin.Weights, b)
	}
	if fin.States.Get("eu-only", "eu-west-1") != router.Maint || fin.States.Get("global", "eu-west-1") != router.Maint {
		t.Errorf("final states %v", fin.States)
	}
	last := p.Steps[len(p.Steps)-1]
	if !last.WaitForDrain || len(last.Withdraw) != 1 || len(last.Weights) != 0 {
		t.Errorf("last step should only withdraw after the drain: %+v", last)
	}
	if len(p.Steps) < 6 {
		t.Errorf("%d steps: 50%% at 10%% a step needs at least 5 weight steps and a withdraw", len(p.Steps))
	}
	t.Logf("%s", b)
}

func TestPlanRefusesEUOnlyWithoutEURegion(t *testing.T) {
	in := sampleInput()
	in.Signals["eu-central-1"] = RegionSignal{Warm: false, Healthy: true, QueueWaitMS: fptr(10), Why: "LOADING"}
	p := MakePlan(in)
	if !p.Refused || p.Rule != RuleResidency || !strings.Contains(p.Reason, "eu-only") || !strings.Contains(p.Reason, "eu-central-1 not warm") {
		t.Fatalf("want a residency refusal naming the class and the cold receiver: %+v", p)
	}
	if len(p.Steps) != 0 {
		t.Fatal("a refused plan has steps")
	}
}
