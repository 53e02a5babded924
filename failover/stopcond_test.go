package failover_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
)

func answer(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/prometheus", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr(v float64) *float64 { return &v }

func TestJudgeStopCondition(t *testing.T) {
	maxc := &fleet.StopCondition{Name: "eu-error-ratio", Max: ptr(0.05), OnEmpty: fleet.OnEmptyHold}
	for _, c := range []struct {
		name, file string
		cond       *fleet.StopCondition
		pass       bool
		why        string
	}{
		{"above max", "vector.json", maxc, false, "0.083 > max 0.05"},
		{"worst of several", "vector-several.json", maxc, false, `0.2 > max 0.05`},
		{"empty holds", "vector-empty.json", maxc, false, "empty result: the query returned no series (on_empty: hold)"},
		{"empty passes when asked", "vector-empty.json", &fleet.StopCondition{Name: "x", Max: ptr(1), OnEmpty: fleet.OnEmptyPass}, true, "empty result (on_empty: pass)"},
		{"NaN holds even with on_empty pass", "scalar-nan.json", &fleet.StopCondition{Name: "x", Max: ptr(1), OnEmpty: fleet.OnEmptyPass}, false, "the value is NaN"},
		{"Inf holds", "scalar-inf.json", &fleet.StopCondition{Name: "x", Min: ptr(1)}, false, "the value is +Inf"},
		{"within", "vector.json", &fleet.StopCondition{Name: "x", Max: ptr(0.1), Min: ptr(0.01)}, true, "0.083 within max 0.1, min 0.01"},
		{"below min", "vector-several.json", &fleet.StopCondition{Name: "x", Min: ptr(0.03)}, false, "0.01 < min 0.03"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := failover.ParseQueryAnswer(200, answer(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			r := failover.Judge(c.cond, s, nil)
			if r.Pass != c.pass || !strings.Contains(r.Why, c.why) {
				t.Fatalf("pass %v why %q; want %v %q", r.Pass, r.Why, c.pass, c.why)
			}
		})
	}
	s, _ := failover.ParseQueryAnswer(200, answer(t, "vector-several.json"))
	if r := failover.Judge(maxc, s, nil); r.Series != `{region="b"}` || *r.Value != 0.2 {
		t.Errorf("the worst series is named: %+v", r)
	}
	r := failover.Judge(maxc, nil, errors.New("prometheus at http://x did not answer"))
	if r.Pass || r.Value != nil || !strings.Contains(r.Why, "no value: prometheus at http://x did not answer") {
		t.Errorf("an error never passes: %+v", r)
	}
	r.Query = "sum(x)"
	if got := r.Violation().String(); got != "stop condition eu-error-ratio: no value: prometheus at http://x did not answer (query: sum(x))" {
		t.Errorf("violation %q", got)
	}
}

func TestParseQueryAnswerErrors(t *testing.T) {
	for _, c := range []struct {
		file string
		code int
		want string
	}{
		{"error.json", 400, "HTTP 400: bad_data: invalid parameter"},
		{"matrix.json", 200, `result type "matrix"`},
		{"not-json.txt", 502, "HTTP 502, not a query answer"},
		{"vector.json", 503, "HTTP 503"},
	} {
		_, err := failover.ParseQueryAnswer(c.code, answer(t, c.file))
		if !errors.Is(err, failover.ErrPrometheus) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.file, err, c.want)
		}
	}
}

func TestParseOverride(t *testing.T) {
	f := &fleet.Fleet{StopConditions: []fleet.StopCondition{{Name: "eu-error-ratio"}}}
	if r, err := failover.ParseOverride(f, "eu-error-ratio", true); err != nil || r != "eu-error-ratio" {
		t.Fatal(r, err)
	}
	if r, err := failover.ParseOverride(f, "warm", false); err != nil || r != failover.RuleWarm {
		t.Fatal(r, err)
	}
	if _, err := failover.ParseOverride(f, "warm", true); err == nil || !strings.Contains(err.Error(), "resume overrides stop conditions only") {
		t.Fatal(err)
	}
	if _, err := failover.ParseOverride(f, "eu-error-rate", false); err == nil || !strings.Contains(err.Error(), "did you mean eu-error-ratio?") {
		t.Fatal(err)
	}
	if _, err := failover.ParseOverride(f, "residency", false); err == nil || !strings.Contains(err.Error(), "can never be overridden") {
		t.Fatal(err)
	}
}

// A stop condition's name is a rule name: none may be one of the failover's own rules.
func TestReservedStopNamesAreTheRules(t *testing.T) {
	var rules []string
	for _, r := range failover.Rules {
		rules = append(rules, string(r))
	}
	if got := fleet.ReservedStopNames(); !slices.Equal(got, rules) {
		t.Fatalf("fleet reserves %v; the rules are %v", got, rules)
	}
}

// Any answer parses or errs (never panics); what parses judges to a pass only with a finite
// value within the threshold, or an empty result under on_empty: pass.
func FuzzParseQueryAnswer(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/prometheus/*")
	if len(seeds) == 0 {
		f.Fatal("no seeds under testdata/prometheus")
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(200, b)
	}
	cond := &fleet.StopCondition{Name: "x", Max: ptr(0.05), Min: ptr(0), OnEmpty: fleet.OnEmptyHold, Interval: time.Second}
	f.Fuzz(func(t *testing.T, code int, body []byte) {
		s, err := failover.ParseQueryAnswer(code, body)
		if err != nil {
			if !errors.Is(err, failover.ErrPrometheus) {
				t.Fatalf("error %v is not ErrPrometheus", err)
			}
			if r := failover.Judge(cond, nil, err); r.Pass {
				t.Fatal("an error passed")
			}
			return
		}
		r := failover.Judge(cond, s, nil)
		if r.Pass {
			if r.Value == nil || math.IsNaN(*r.Value) || *r.Value > 0.05 || *r.Value < 0 {
				t.Fatalf("passed with %+v", r)
			}
			for _, x := range s {
				if x.Value > 0.05 || x.Value < 0 || math.IsNaN(x.Value) {
					t.Fatalf("passed with a series at %v", x.Value)
				}
			}
		}
	})
}
