//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
)

// Issue 31 part 4: a drill run inside a blocked window, or while a blocking stop condition
// fails, is skipped (exit 0, one line, a SKIPPED history entry, nothing changed); run for real,
// the drill evaluates the fleet's stop conditions before its ramps and fail-back and its report
// lists every evaluation.
func TestDrillCalendarAndStopConditions(t *testing.T) {
	drill := drillFleet(t, "5m")
	dir := filepath.Dir(drill)
	exp := &exporter{values: map[string]float64{"lifeboat_test_error_ratio": 0.2}}
	hs := httptest.NewServer(exp)
	t.Cleanup(hs.Close)
	prom := emulators.StartPrometheus(t, strings.TrimPrefix(hs.URL, "http://"))
	rig := &stopRig{dir: dir, exp: exp, prom: prom}
	rig.waitValue(t, "max(lifeboat_test_error_ratio)", 0.2)
	fl := filepath.Join(dir, "fleet.yaml")
	f, _ := os.ReadFile(fl)
	f = fmt.Appendf(f, "prometheus: {url: %q}\nstop_conditions:\n  - {name: error-ratio, query: 'max(lifeboat_test_error_ratio)', max: 0.05}\n", prom.URL)
	if err := os.WriteFile(fl, f, 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := os.ReadFile(drill)
	weights := readFile(t, filepath.Join(dir, "weights.json"))

	os.WriteFile(drill, append(base, "blocked_windows: [{start: \"00:00\", end: \"24:00\"}]\n"...), 0o644)
	r := cli(t, nil, "drill", "run", drill, "--approve-all")
	if r.code != 0 || !strings.Contains(r.stdout, "drill lose-eu-west-1 skipped: inside the blocked window every day 00:00–24:00 UTC") {
		t.Fatalf("blocked window: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	os.WriteFile(drill, append(base, "blocking_conditions: [error-ratio]\n"...), 0o644)
	r = cli(t, nil, "drill", "run", drill, "--approve-all")
	if r.code != 0 || !strings.Contains(r.stdout, "skipped: blocking condition failing: stop condition error-ratio: 0.2 > max 0.05 (query: max(lifeboat_test_error_ratio))") {
		t.Fatalf("blocking condition: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if readFile(t, filepath.Join(dir, "weights.json")) != weights {
		t.Fatal("a skipped drill changed the router")
	}
	h := cli(t, nil, "drill", "history", "--fleet", fl)
	if h.code != 0 || strings.Count(h.stdout, "SKIPPED") != 2 || !strings.Contains(h.stdout, "skipped: inside the blocked window") ||
		!strings.Contains(h.stdout, "2 run(s): 0 passed, 0 failed, 2 skipped by the calendar") {
		t.Fatalf("history: exit %d\n%s\n%s", h.code, h.stdout, h.stderr)
	}

	os.WriteFile(drill, append(base, "blocking_conditions: [error-ratoi]\n"...), 0o644)
	if r = cli(t, nil, "drill", "run", drill, "--approve-all"); r.code != 2 || !strings.Contains(r.stderr, "did you mean error-ratio?") {
		t.Fatalf("unknown blocking condition: exit %d\n%s", r.code, r.stderr)
	}

	exp.set("lifeboat_test_error_ratio", 0.01)
	rig.waitValue(t, "max(lifeboat_test_error_ratio)", 0.01)
	os.WriteFile(drill, append(base, "blocking_conditions: [error-ratio]\n"...), 0o644)
	out := filepath.Join(dir, "report")
	r = cli(t, nil, "drill", "run", drill, "--approve-all", "--report", out)
	if r.code != 0 {
		t.Fatalf("drill with passing conditions: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Stops []struct {
			Name  string   `json:"name"`
			Pass  bool     `json:"pass"`
			Value *float64 `json:"value"`
			Query string   `json:"query"`
			Step  *int     `json:"step"`
		} `json:"stop_conditions"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	if len(rep.Stops) < 2 {
		t.Fatalf("the report lists %d stop condition evaluations: %s", len(rep.Stops), b)
	}
	for _, s := range rep.Stops {
		if s.Name != "error-ratio" || !s.Pass || s.Value == nil || *s.Value != 0.01 || s.Query != "max(lifeboat_test_error_ratio)" || s.Step == nil {
			t.Fatalf("evaluation %+v", s)
		}
	}
	if md, html := readFile(t, filepath.Join(out, "report.md")), readFile(t, filepath.Join(out, "report.html")); !strings.Contains(md, "## Stop conditions") || !strings.Contains(html, "<h2>Stop conditions</h2>") {
		t.Fatal("report.md or report.html has no stop conditions section")
	}
}
