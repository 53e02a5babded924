package drills

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFull(t *testing.T) {
	d, err := Read("testdata/full.drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lose != "eu-west-1" || d.RTO != 5*time.Minute || d.Hold != 30*time.Second || len(d.Faults) != 6 || d.Fleet != filepath.Join("testdata", "fleet.yaml") {
		t.Fatalf("%+v", d)
	}
	if got := d.Order(); slices.Contains(got, StepHold) || got[len(got)-1] != StepTeardown {
		t.Fatalf("order %v", got)
	}
	// every fault has a detected expectation: one stated (rot), five implied
	implied := 0
	for _, e := range d.Expect {
		if e.Implied {
			implied++
		}
	}
	if implied != 5 || len(d.Expect) != 11 {
		t.Fatalf("expectations %+v", d.Expect)
	}
	if d.Faults[0].Name != "missing-file eu-central-1 model/tokenizer.json" || d.Faults[4].Duration != 2*time.Second {
		t.Fatalf("faults %+v", d.Faults)
	}
}

func TestParseDefaults(t *testing.T) {
	d, err := Read("testdata/minimal.drill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Order(), DefaultSteps) || d.Traffic.Requests != DefaultRequests || d.Fleet != "/srv/fleet.yaml" {
		t.Fatalf("%+v", d)
	}
}

// TestParseErrors: every problem at once, each naming file, line and field.
func TestParseErrors(t *testing.T) {
	_, err := Read("testdata/bad.drill.yaml")
	if !errors.Is(err, ErrInvalidDrill) {
		t.Fatalf("err %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"testdata/bad.drill.yaml:4: steps[1]: unknown step \"warmup\"",
		"testdata/bad.drill.yaml:4: steps[2]: step \"verify\" listed twice",
		"skip: teardown cannot be skipped",
		"testdata/bad.drill.yaml:6: hold: want a positive duration",
		"testdata/bad.drill.yaml:7: traffic.requests: want a whole number from 1 to 1000",
		"testdata/bad.drill.yaml:9: faults[0].kind: unknown fault \"meteor\"",
		"testdata/bad.drill.yaml:10: faults[1].path: required for a missing-file fault",
		"testdata/bad.drill.yaml:11: faults[2].path: a bundle path",
		"testdata/bad.drill.yaml:13: expect[0].detected: no fault named \"nothing\"",
		"testdata/bad.drill.yaml:14: expect[1]: state exactly one outcome",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, body := range []string{"", "name: x\n", "- a\n", "name: [x]\nfleet: f\nlose: r\n", "a: &x 1\nb: *x\n"} {
		if _, err := Parse([]byte(body), "d.yaml"); !errors.Is(err, ErrInvalidDrill) || !strings.HasPrefix(err.Error(), "d.yaml") {
			t.Errorf("%q: %v", body, err)
		}
	}
}

// FuzzParse: any input either parses into a drill that ends in teardown or fails with
// ErrInvalidDrill naming the file; never a panic. Seeds: testdata/*.drill.yaml.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.drill.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrInvalidDrill) || !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error %v", err)
			}
			return
		}
		o := d.Order()
		if o[len(o)-1] != StepTeardown || d.Name == "" || d.Lose == "" {
			t.Fatalf("%+v", d)
		}
		for _, fl := range d.Faults {
			if fl.Name == "" || !slices.Contains(FaultKinds(), fl.Kind) {
				t.Fatalf("fault %+v", fl)
			}
		}
	})
}

// TestLockTTLBounded: lock_ttl is bounded as the fleet's failover.lock_ttl (1s–1h), a problem
// naming the file and line (2ns once planted the faults, then panicked in NewTicker).
func TestLockTTLBounded(t *testing.T) {
	for _, tc := range []struct {
		ttl string
		ok  bool
	}{{"2ns", false}, {"999ms", false}, {"2h", false}, {"1s", true}, {"1h", true}} {
		_, err := Parse([]byte("name: x\nfleet: fleet.yaml\nlose: a\nlock_ttl: "+tc.ttl+"\n"), "d.yaml")
		switch {
		case tc.ok && err != nil:
			t.Errorf("lock_ttl %s: %v", tc.ttl, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "d.yaml:4") || !strings.Contains(err.Error(), "lock_ttl")):
			t.Errorf("lock_ttl %s: %v, want a problem at d.yaml:4", tc.ttl, err)
		}
	}
}
