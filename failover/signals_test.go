package failover

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lifeboat/fleet"
)

func fullFleet(t testing.TB) *fleet.Fleet {
	t.Helper()
	data, err := os.ReadFile("../fleet/testdata/fleet/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse(data, "/etc/lifeboat/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseSignals(t *testing.T) {
	f := fullFleet(t)
	data, err := os.ReadFile("testdata/signals/evening-peak.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSignals(data, "peak.json", f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Weights["eu-only"]["eu-west-1"] != 50 || *s.Regions["eu-west-1"].QueueWaitMS != 60 || *s.Regions["us-east-1"].Running != 30 {
		t.Errorf("%+v", s)
	}
	for _, c := range []struct{ json, want string }{
		{`{"weights": {}, "regions": {}, "extra": 1}`, `unknown field "extra"`},
		{`{"regions": {}}`, "weights: required"},
		{`{"weights": {}}`, "regions: required"},
		{`{"weights": {"eu-only": {"us-east-1": 10}}, "regions": {}}`, `weights.eu-only.us-east-1: region "us-east-1" is not eligible for class eu-only`},
		{`{"weights": {"nope": {}}, "regions": {}}`, `weights.nope: tenant class "nope" is not defined`},
		{`{"weights": {"global": {"us-east-1": -1}}, "regions": {}}`, "negative"},
		{`{"weights": {}, "regions": {"mars-1": {"warm": true}}}`, `regions.mars-1: region "mars-1" is not defined`},
		{`{"weights": {}, "regions": {"us-east-1": {"queue_wait_ms": -3}}}`, "regions.us-east-1.queue_wait_ms: want a number of 0 or more"},
		{`{"weights": {}, "regions": {"us-east-1": {"warm": "yes"}}}`, "regions.warm: want bool"},
		{`{"weights": {"global": {"us-east-1": 1.5}}, "regions": {}}`, "want int"},
		{`{"weights": {}, "regions": {}} {}`, "more than one JSON value"},
		{`{"weights": {}, "regions": {}, "states": {"global": {"us-east-1": "off"}}}`, "states.global.us-east-1: want ready, drain or maint"},
		{`{"weights": `, "peak.json:"},
	} {
		_, err := ParseSignals([]byte(c.json), "peak.json", f)
		if err == nil || !errors.Is(err, ErrInvalidSignals) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.json, err, c.want)
		}
	}
}

// FuzzParseSignals: never panics; whatever it accepts only puts weight on eligible regions, and
// plans from it keep every invariant.
func FuzzParseSignals(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/signals/*.json")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "eu-west-1")
	}
	f.Add([]byte(`{"weights": {"eu-only": {"eu-central-1": 3}}, "regions": {"eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 1e308}}}`), "eu-central-1")
	fl := fullFleet(f)
	f.Fuzz(func(t *testing.T, data []byte, region string) {
		s, err := ParseSignals(data, "s.json", fl)
		if err != nil {
			if !errors.Is(err, ErrInvalidSignals) || !strings.HasPrefix(err.Error(), "s.json: ") {
				t.Fatalf("error %v", err)
			}
			return
		}
		for c, vec := range s.Weights {
			for r, v := range vec {
				if v > 0 && !slices.Contains(fl.Tenants[c], r) {
					t.Fatalf("accepted weight on %s for %s", r, c)
				}
			}
		}
		in := InputFromFleet(fl)
		in.Weights, in.States, in.Signals, in.Baseline, in.Transitions = s.Weights, s.States, s.Regions, s.Baseline, s.Transitions
		in.Event = Event{Kind: Evacuate, Region: region}
		if fl.Regions[region] == nil {
			return
		}
		checkPlan(t, in, MakePlan(in))
	})
}
