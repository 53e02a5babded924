package drills

import "testing"

// TestDemoDrillParses: the demo's drill file (internal/sample/drill) stays valid.
func TestDemoDrillParses(t *testing.T) {
	d, err := Read("../internal/sample/drill/drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lose != "eu-west-1" || len(d.Faults) != 3 || d.RTO == 0 {
		t.Fatalf("%+v", d)
	}
}
