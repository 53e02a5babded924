package failover

import (
	"os"
	"path/filepath"
	"testing"

	"lifeboat/fleet"
)

// The demo's sample fleets and signals parse, and the evacuation they show is not refused.
func TestSampleFailoverFixtures(t *testing.T) {
	for _, name := range []string{"fleet.yaml", "fleet-haproxy.yaml"} {
		path := filepath.Join("..", "internal", "sample", "failover", name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fleet.Parse(data, path)
		if err != nil {
			t.Fatal(err)
		}
		for sig, refused := range map[string]bool{"signals.json": false, "signals-eu-cold.json": true} {
			b, err := os.ReadFile(filepath.Join(filepath.Dir(path), sig))
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseSignals(b, sig, f)
			if err != nil {
				t.Fatal(err)
			}
			in := InputFromFleet(f)
			in.Weights, in.Signals, in.Event = s.Weights, s.Regions, Event{Kind: Evacuate, Region: "eu-west-1"}
			if p := MakePlan(in); p.Refused != refused || (!refused && p.Hold != "") {
				t.Errorf("%s with %s: refused %v hold %q, want refused %v", name, sig, p.Refused, p.Hold, refused)
			}
		}
	}
}
