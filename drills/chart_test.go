package drills

import (
	"encoding/xml"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// is125 says v is 1, 2 or 5 times a power of ten.
func is125(v float64) bool {
	if !(v > 0) {
		return false
	}
	m := v / math.Pow(10, math.Floor(math.Log10(v)+1e-12))
	for _, want := range []float64{1, 2, 5, 10} {
		if math.Abs(m-want) < 1e-9*want {
			return true
		}
	}
	return false
}

// TestNiceTicks: for any range, the step is a 1-2-5 value, every tick a multiple of it, the ticks
// cover the range without more than one step beyond either end, there are between 2 and about
// the target count of them, and every label prints the tick exactly (no 0.30000000000000004).
func TestNiceTicks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 19))
	cases := [][2]float64{{0, 1}, {0, 0.001}, {0, 7.3}, {0, 13.37}, {0, 30.6}, {0, 100}, {0, 105}, {0, 1e6}, {0, 0.35}, {2, 3}, {0, 4.59}, {0, 61.2}}
	for range 2000 {
		hi := math.Pow(10, rng.Float64()*10-4) // 1e-4 … 1e6
		cases = append(cases, [2]float64{0, hi})
		if rng.IntN(3) == 0 {
			cases = append(cases, [2]float64{hi * rng.Float64(), hi})
		}
	}
	for _, c := range cases {
		for _, target := range []int{5, 6} {
			ticks, step := niceTicks(c[0], c[1], target)
			if !is125(step) {
				t.Fatalf("%v/%d: step %g is not 1, 2 or 5 times a power of ten", c, target, step)
			}
			if len(ticks) < 2 || len(ticks) > 2*target+2 {
				t.Fatalf("%v/%d: %d ticks %v", c, target, len(ticks), ticks)
			}
			if ticks[0] > c[0]+step*1e-9 || ticks[0] < c[0]-step*(1+1e-9) || ticks[len(ticks)-1] < c[1]-step*1e-9 || ticks[len(ticks)-1] > c[1]+step*(1+1e-9) {
				t.Fatalf("%v/%d: ticks %v (step %g) do not cover the range snugly", c, target, ticks, step)
			}
			for i, v := range ticks {
				if k := v / step; math.Abs(k-math.Round(k)) > 1e-6 {
					t.Fatalf("%v/%d: tick %g is not a multiple of %g", c, target, v, step)
				}
				if i > 0 && math.Abs(ticks[i]-ticks[i-1]-step) > step*1e-6 {
					t.Fatalf("%v/%d: ticks %v not evenly %g apart", c, target, ticks, step)
				}
				l := tickLabel(v, step)
				got, err := strconv.ParseFloat(l, 64)
				if err != nil || math.Abs(got-v) > step*1e-6 || len(l) > 12 {
					t.Fatalf("%v/%d: tick %g labelled %q", c, target, v, l)
				}
			}
		}
	}
	if ticks, _ := niceTicks(0, 4.59, 6); !slicesEqual(ticks, []float64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("0..4.59: %v", ticks)
	}
	if ticks, _ := niceTicks(0, 0.35, 5); !slicesEqual(ticks, []float64{0, 0.1, 0.2, 0.3, 0.4}) {
		t.Errorf("0..0.35: %v", ticks)
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

// TestChartsTicksFaultsAndDashes: the charts of a report with odd durations label their axes
// with 1-2-5 values only, mark every injected fault on the time axis at its moment, and draw
// overlapping weight lines with different dash patterns and markers.
func TestChartsTicksFaultsAndDashes(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dec, rec := t0.Add(1300*time.Millisecond), t0.Add(5370*time.Millisecond)
	recS := 4.07
	at := func(v float64) *float64 { return &v }
	rep := &Report{Drill: "d", Started: t0, Finished: t0.Add(13370 * time.Millisecond), Seconds: 13.37, OK: true, Verdict: "PASS",
		SLA:   SLAResult{RTOSeconds: 30, RecoverySeconds: &recS, Decision: &dec, Recovered: &rec, Met: true},
		Steps: []StepResult{{Name: StepVerify, Status: Passed, Seconds: 0.3}, {Name: StepEvacuate, Status: Passed, Offset: 1.3, Seconds: 4.2}},
		Faults: []FaultResult{
			{Fault: Fault{Name: "missing-file eu-central-1 model/tokenizer.json"}, Injected: true, At: at(0.01)},
			{Fault: Fault{Name: "router-unreachable"}, Injected: true, At: at(2.5)},
			{Fault: Fault{Name: "kill-mid-ramp"}, Injected: true, At: at(3.9)},
			{Fault: Fault{Name: "never injected"}},
		},
		Classes:  []ClassTraffic{{Class: "eu-only"}},
		Requests: []Request{{Offset: 2, Class: "eu-only", Region: "eu-central-1", OK: true, TTFTMS: 23.7}, {Offset: 3, Class: "eu-only", OK: false, Error: "boom"}},
		Weights: []WeightPoint{
			{Offset: 0, Class: "eu-only", Region: "eu-west-1", Weight: 50}, {Offset: 0, Class: "eu-only", Region: "eu-central-1", Weight: 50},
			{Offset: 2, Class: "eu-only", Region: "eu-west-1", Weight: 0}, {Offset: 2, Class: "eu-only", Region: "eu-central-1", Weight: 100},
		}}
	for name, svg := range map[string]string{"timeline": TimelineSVG(rep), "weights": WeightsSVG(rep, "eu-only", rep.Seconds), "ttft": TTFTSVG(rep, rep.Seconds)} {
		var doc struct {
			Texts []struct {
				Class string `xml:"class,attr"`
				Text  string `xml:",chardata"`
			} `xml:"text"`
			Groups []struct {
				Class string `xml:"class,attr"`
				Fault string `xml:"data-fault,attr"`
				At    string `xml:"data-at,attr"`
				Paths []struct {
					Class string `xml:"class,attr"`
					Dash  string `xml:"stroke-dasharray,attr"`
				} `xml:"path"`
			} `xml:"g"`
		}
		if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ticks := 0
		for _, tx := range doc.Texts {
			if strings.HasPrefix(tx.Class, "tick-") {
				ticks++
				v, err := strconv.ParseFloat(tx.Text, 64)
				step := tickStep(doc.Texts, tx.Class)
				if k := v / step; err != nil || !is125(step) || math.Abs(k-math.Round(k)) > 1e-6 {
					t.Errorf("%s: tick label %q", name, tx.Text)
				}
			}
		}
		if ticks < 4 {
			t.Errorf("%s: %d tick labels", name, ticks)
		}
		marks := map[string]string{}
		dashes := map[string]bool{}
		for _, g := range doc.Groups {
			if g.Class == "fault-mark" {
				marks[g.Fault] = g.At
			}
			for _, p := range g.Paths {
				if p.Class == "series" {
					dashes[p.Dash] = true
				}
			}
		}
		if len(marks) != 3 || marks["router-unreachable"] != "2.500" || marks["kill-mid-ramp"] != "3.900" || marks["never injected"] != "" {
			t.Errorf("%s: fault marks %v", name, marks)
		}
		if name == "weights" && len(dashes) != 2 {
			t.Errorf("weights: two overlapping regions share a dash pattern: %v", dashes)
		}
	}
	// the timeline runs to the RTO deadline (+31.3s): x ticks 0, 10, … 40
	if !regexp.MustCompile(`>0</text>.*>10</text>.*>20</text>.*>30</text>.*>40</text>`).MatchString(TimelineSVG(rep)) {
		t.Errorf("timeline ticks:\n%s", TimelineSVG(rep))
	}
}

// tickStep is the difference between the first two tick labels of a class of ticks.
func tickStep(texts []struct {
	Class string `xml:"class,attr"`
	Text  string `xml:",chardata"`
}, class string) float64 {
	var vs []float64
	for _, tx := range texts {
		if tx.Class == class {
			v, _ := strconv.ParseFloat(tx.Text, 64)
			vs = append(vs, v)
		}
	}
	if len(vs) < 2 {
		return 1
	}
	return vs[1] - vs[0]
}
