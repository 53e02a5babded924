//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"lifeboat/internal/clitest"
)

// Tests of issue 22's failover commands, through processes of the built binary.

// The plan shows what a person decides on: the fleet, every region's health, warm verdict,
// queue wait and inflow (measured or assumed) above the steps, the estimated duration, a ~ on
// every cell a step changes, and a verdict that cannot be missed; a dead region suggests
// --immediate as a pasteable command.
func TestFailoverPlanShowsTheDecision(t *testing.T) {
	dir := faultDir(t)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 {
		t.Fatalf("plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout
	for _, want := range []string{
		"Plan for fleet fleet.yaml (model llama-demo",
		"estimated 1.02s (3 step(s), 2 wait(s) of step_interval 10ms, + up to drain_timeout 1s for 1 drain(s))",
		"REGION", "HEALTH", "WARM", "QUEUE WAIT", "INFLOW",
		"measured 9600 tok/s", // us-east-1's inflow is in the signals
		"Steps (~ marks a cell the step changes):",
		"~75", // eu-central-1's eu-only weight after step 1
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "QUEUE WAIT"), strings.Index(out, "STEP"); i < 0 || j < i {
		t.Errorf("the regions are not above the steps:\n%s", out)
	}
	if strings.Contains(out, "~50") {
		t.Errorf("a cell the step does not change is marked:\n%s", out)
	}
	if strings.Contains(out, "HELD FOR SAFETY") {
		t.Errorf("a complete plan carries the hold banner:\n%s", out)
	}
	// an unmeasured inflow is said to be assumed, per region
	signals := readFile(t, filepath.Join(dir, "warm.json"))
	os.WriteFile(filepath.Join(dir, "dead.json"), []byte(strings.Replace(strings.Replace(signals,
		`"eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 30, "running": 0, "prefill_tokens_per_s": 6400}`,
		`"eu-west-1": {"warm": false, "healthy": false, "why": "connection refused"}`, 1), "x", "x", 1)), 0o644)
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "dead.json")
	if !strings.Contains(r.stdout, "DOWN") || !strings.Contains(r.stdout, "lifeboat failover run --fleet fleet.yaml --region eu-west-1 --immediate") {
		t.Errorf("a dead region does not suggest --immediate: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct{ region, column, want string }{
		{"eu-west-1", "HEALTH", "DOWN"},
		{"eu-west-1", "WARM", "COLD"},       // warm: false in the signals
		{"eu-west-1", "INFLOW", "assumed "}, // no prefill_tokens_per_s for it
		{"eu-central-1", "WARM", "warm"},
		{"eu-central-1", "INFLOW", "measured 6400 tok/s"},
	} {
		if got := regionCell(t, r.stdout, c.region, c.column); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s's %s is %q, want %q:\n%s", c.region, c.column, got, c.want, r.stdout)
		}
	}
	// -o json carries the estimated duration and its parts, the same figures as the header
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "-o", "json")
	var doc struct {
		EstimatedS *float64       `json:"estimated_s"`
		Estimate   map[string]any `json:"estimate"`
		Steps      []any          `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("plan -o json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if e := doc.Estimate; doc.EstimatedS == nil || *doc.EstimatedS != 1.02 || len(doc.Steps) != 3 ||
		e["steps"] != 3.0 || e["step_waits"] != 2.0 || e["drains"] != 1.0 || e["step_interval_s"] != 0.01 || e["drain_timeout_s"] != 1.0 {
		t.Errorf("plan -o json: estimated_s %v, estimate %v, want 1.02 s of 3 steps, 2 waits of 0.01 s and 1 drain of up to 1 s:\n%s", doc.EstimatedS, e, r.stdout)
	}
	// a plan that holds: the banner above the verdict, the verdict the last line
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "spill_cap_percent: 60", "spill_cap_percent: 10", 1)), 0o644)
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 3 || len(lines) < 2 || !strings.Contains(lines[len(lines)-2], "HELD FOR SAFETY") || !strings.HasPrefix(lines[len(lines)-1], "VERDICT: HELD for safety") {
		t.Errorf("a held plan's verdict can be missed: exit %d\n%s", r.code, r.stdout)
	}
}

// Progress lines are plain text, never Go maps.
func TestFailoverProgressIsPlainText(t *testing.T) {
	faultDir(t)
	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "map[") || !strings.Contains(r.stderr, "eu-only: eu-central-1 75, eu-west-1 25") {
		t.Errorf("progress lines:\n%s", r.stderr)
	}
}

// One spelling: --region everywhere, the old spellings still work and name the new one; a
// typo'd region gets "did you mean".
func TestFailoverOneSpelling(t *testing.T) {
	faultDir(t)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stderr, "--evacuate is deprecated: use --region eu-west-1") {
		t.Errorf("old --evacuate: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--restore", "eu-west-1", "--signals", "warm.json")
	if !strings.Contains(r.stderr, "--restore is deprecated: use --region eu-west-1 --action restore") || !strings.Contains(r.stdout, "restore eu-west-1") {
		t.Errorf("old --restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--action", "restore", "--signals", "warm.json")
	if !strings.Contains(r.stdout, "restore eu-west-1") {
		t.Errorf("--action restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west1", "--signals", "warm.json", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, ") (did you mean eu-west-1?)") {
		t.Errorf("typo'd region: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-wset-1", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, ") (did you mean eu-west-1?)") {
		t.Errorf("typo'd region in restore: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--action", "restore", "--signals", "warm.json", "--yes")
	if r.code != 2 || !strings.Contains(r.stderr, "lifeboat failover restore --fleet fleet.yaml --region eu-west-1") {
		t.Errorf("run --action restore: exit %d\n%s", r.code, r.stderr)
	}
}

// Every refusal and hold ends with a pasteable next command naming the fleet; prompts name the
// fleet and, without a terminal, say --yes.
func TestFailoverHintsArePasteable(t *testing.T) {
	dir := faultDir(t)
	r := res(clitest.Run(t, clitest.Options{Stdin: strings.NewReader("no\n")}, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json"))
	if r.code == 0 || !strings.Contains(r.stderr, "add --yes") || !strings.Contains(r.stderr, "Apply these 3 steps to fleet fleet.yaml (model llama-demo") {
		t.Errorf("non-TTY prompt: exit %d\n%s", r.code, r.stderr)
	}
	// a lock held by a live run elsewhere: the unlock hint carries --fleet
	lock := `{"id": "L-1", "holder": "someone@elsewhere pid 1", "token": 7, "operation": "failover evacuate eu-west-1", "since": "2026-01-01T00:00:00Z", "expires": "2999-01-01T00:00:00Z"}`
	os.MkdirAll(filepath.Join(dir, "state", "failover"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "state", "failover", "lock.json"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 3 || !strings.Contains(r.stderr, "lifeboat failover unlock --fleet fleet.yaml --id") {
		t.Errorf("lock held: exit %d\n%s", r.code, r.stderr)
	}
	os.Remove(filepath.Join(dir, "state", "failover", "lock.json"))
	// max_transitions names the region and the override
	os.WriteFile(filepath.Join(dir, "busy.json"), []byte(strings.Replace(readFile(t, filepath.Join(dir, "warm.json")), `"regions"`, `"transitions": {"eu-central-1": 12, "us-east-1": 12}, "regions"`, 1)), 0o644)
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "busy.json")
	if r.code != 3 || !strings.Contains(r.stdout, "eu-central-1") || !strings.Contains(r.stdout, "--override max_transitions") {
		t.Errorf("max_transitions: exit %d\n%s", r.code, r.stdout)
	}
}

// A plan that cannot reach its target has its own prompt: it says the plan holds and asks to
// apply its steps "anyway". Without a terminal the hint names --yes --allow-partial (--yes
// alone would not apply it), and the prompt names the fleet. Answered "no", nothing changes
// and the run fails; answered "yes", its one step is applied and the run ends held (exit 3).
func TestFailoverPartialPlanPrompt(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "spill_cap_percent: 60", "spill_cap_percent: 10", 1)), 0o644)
	weights := readFile(t, filepath.Join(dir, "weights.json"))
	run := []string{"failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--reason", "t"}
	r := res(clitest.Run(t, clitest.Options{Stdin: strings.NewReader("no\n")}, run...))
	for _, want := range []string{
		"add --yes --allow-partial (the plan above is for fleet fleet.yaml (model llama-demo, router file, state ./state))",
		"This plan cannot reach its target: HELD for safety (spill_cap)",
		"Apply its 1 steps to fleet fleet.yaml (model llama-demo, router file, state ./state) anyway (the outcome ends held for safety)? Type yes to go on: ",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the partial-plan prompt lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "Apply these ") {
		t.Errorf("a plan that cannot complete got the prompt of a complete one:\n%s", r.stderr)
	}
	if r.code == 0 || !strings.Contains(r.stderr, "nothing changed") {
		t.Errorf("answered no: exit %d, want a failure that says nothing changed\n%s", r.code, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "weights.json")); got != weights {
		t.Errorf("answered no, the router changed:\n%s", got)
	}
	r = res(clitest.Run(t, clitest.Options{Stdin: strings.NewReader("yes\n")}, run...))
	cells := fileRouterCells(t, filepath.Join(dir, "weights.json"))
	if r.code != 3 || !strings.Contains(r.stdout, "1 step(s) applied") || !strings.HasPrefix(cells["eu-only"]["eu-central-1"], "60 ") {
		t.Errorf("answered yes: exit %d, weights %v, want its step applied and exit 3\n%s\n%s", r.code, cells, r.stdout, r.stderr)
	}
}

// A saved plan is applied exactly, and refused (exit 3, nothing changed, saying what changed)
// when the signals or the router it was computed from changed in a way that matters, or when
// it was computed from another fleet.
func TestFailoverSavedPlan(t *testing.T) {
	dir := faultDir(t)
	weights := filepath.Join(dir, "weights.json")
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--out", "evac.plan")
	if r.code != 0 || !strings.Contains(r.stderr, "lifeboat failover run --fleet fleet.yaml --plan evac.plan") {
		t.Fatalf("plan --out: exit %d\n%s", r.code, r.stderr)
	}
	// the signals changed: eu-central-1 is cold now, and the plan would be refused
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "evac.plan", "--signals", "cold.json")
	if r.code != 3 || !strings.Contains(r.stderr, "saved plan evac.plan no longer holds") || !strings.Contains(r.stderr, "eu-central-1: warm true → false") {
		t.Fatalf("changed signals: exit %d\n%s", r.code, r.stderr)
	}
	if readFile(t, weights) != cliWeights {
		t.Fatal("a refused saved plan changed the router")
	}
	// another fleet (a region more): refused
	other := strings.Replace(cliFleet, "regions:\n", "regions:\n  ap-south-1: {replica: ./r, capacity: {replicas: 1, prefill_tokens_per_s: 8000}}\n", 1)
	os.WriteFile(filepath.Join(dir, "other.yaml"), []byte(other), 0o644)
	r = cli(t, nil, "failover", "run", "--fleet", "other.yaml", "--plan", "evac.plan", "--signals", "warm.json")
	if r.code != 3 || !strings.Contains(r.stderr, "was computed from fleet fleet.yaml") {
		t.Fatalf("another fleet: exit %d\n%s", r.code, r.stderr)
	}
	// unchanged: applied exactly, without a prompt (approved when saved)
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "evac.plan", "--signals", "warm.json", "--reason", "INC-1")
	if r.code != 0 || !strings.Contains(r.stdout, "3 step(s) applied") {
		t.Fatalf("run --plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// the router moved on (the plan was applied): the same plan file is refused
	after := readFile(t, weights)
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "evac.plan", "--signals", "warm.json")
	if r.code != 3 || !strings.Contains(r.stderr, "the router changed since the plan was made") {
		t.Fatalf("changed router: exit %d\n%s", r.code, r.stderr)
	}
	if readFile(t, weights) != after {
		t.Fatal("a refused saved plan changed the router")
	}
}

// A saved plan outlives signals that move without changing it: the queue waits of both
// receivers rise by a few ms (the plan made from them shows it, with the same steps and
// verdict), and `run --plan` still applies the saved plan, as it was saved, exit 0. The other
// half, signals that change the plan, is refused in TestFailoverSavedPlan.
func TestFailoverSavedPlanOutlivesSignalsThatDoNotMatter(t *testing.T) {
	dir := faultDir(t)
	warm := readFile(t, filepath.Join(dir, "warm.json"))
	moved := strings.NewReplacer(`"queue_wait_ms": 20`, `"queue_wait_ms": 24`, `"queue_wait_ms": 10`, `"queue_wait_ms": 13`).Replace(warm)
	if moved == warm {
		t.Fatal("the moved signals are the recorded ones")
	}
	os.WriteFile(filepath.Join(dir, "moved.json"), []byte(moved), 0o644)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--out", "evac.plan")
	if r.code != 0 {
		t.Fatalf("plan --out: exit %d\n%s", r.code, r.stderr)
	}
	saved := r.stdout
	// the premise: the signals moved (beyond rounding) and the plan made from them did not
	type planDoc struct {
		Complete, Refused bool
		Steps             []struct {
			Weights map[string]map[string]int    `json:"weights"`
			States  map[string]map[string]string `json:"states"`
		} `json:"steps"`
	}
	plans := map[string]planDoc{}
	for _, sig := range []string{"warm.json", "moved.json"} {
		r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", sig, "-o", "json")
		var p planDoc
		if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 0 || err != nil {
			t.Fatalf("plan with %s: exit %d, %v\n%s", sig, r.code, err, r.stdout)
		}
		plans[sig] = p
	}
	if !reflect.DeepEqual(plans["warm.json"], plans["moved.json"]) || len(plans["moved.json"].Steps) != 3 {
		t.Fatalf("the moved queue waits change the plan: %+v / %+v", plans["warm.json"], plans["moved.json"])
	}
	if now := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "moved.json"); !strings.Contains(now.stdout, "13 ms") || strings.Contains(saved, "13 ms") {
		t.Fatalf("the plan from the moved signals does not show eu-central-1's queue wait of 13 ms:\n%s", now.stdout)
	}

	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "evac.plan", "--signals", "moved.json", "--reason", "INC-2")
	if r.code != 0 || !strings.Contains(r.stdout, "3 step(s) applied") || strings.Contains(r.stderr, "no longer holds") {
		t.Fatalf("run --plan with signals that do not change it: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// the plan applied is the one saved (its regions table says 10 ms, not 13)
	if !strings.Contains(r.stderr, "eu-central-1  healthy  warm  10 ms") || strings.Contains(r.stderr, "13 ms") {
		t.Errorf("run --plan did not show the saved plan:\n%s", r.stderr)
	}
	cells := fileRouterCells(t, filepath.Join(dir, "weights.json"))
	if !strings.HasPrefix(cells["eu-only"]["eu-central-1"], "100 ") || !strings.HasPrefix(cells["global"]["us-east-1"], "100 ") || !strings.HasSuffix(cells["eu-only"]["eu-west-1"], " maint") {
		t.Fatalf("router after run --plan: %v", cells)
	}
}

// Abort from any terminal: while a run holds the lock, a second process's abort asks it to stop
// through the state store; the run honours it between steps (journaled with who asked and why)
// and steps back to the baseline; the abort waits for it and says where it ended.
func TestFailoverAbortFromAnotherTerminal(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 1500ms", 1)), 0o644)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-7")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ab := cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--reason", "receivers saturating", "--wait", "60s")
	run := wait()
	if ab.code != 0 || !strings.Contains(ab.stdout, "aborted at the request and back at its baseline") {
		t.Fatalf("abort from another terminal: exit %d\n%s\n%s\nthe run: exit %d\n%s", ab.code, ab.stdout, ab.stderr, run.code, run.stderr)
	}
	if run.code == 0 || !strings.Contains(run.stderr, "abort requested by") || !strings.Contains(run.stderr, "receivers saturating") {
		t.Fatalf("the run: exit %d\n%s", run.code, run.stderr)
	}
	if !waitForRecord(t, dir, "abort_request", 1) {
		t.Fatal("the abort request is not journaled")
	}
	st := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	if st.code != 0 || !strings.Contains(st.stdout, `"closed": true`) || !strings.Contains(st.stdout, "receivers saturating") {
		t.Fatalf("status after the requested abort: exit %d\n%s", st.code, st.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "failover", "abort-request.json")); !os.IsNotExist(err) {
		t.Fatalf("the abort request is left behind: %v", err)
	}
}

// status tells a running run from an interrupted one (Ctrl-C: the lock is free) and from a dead
// one (kill -9: its holder's pid is gone on this host), and shows the journal and the lock when
// the router cannot be read.
func TestFailoverStatusRunningInterruptedDead(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 2s", 1)), 0o644)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-9")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s", r.code, r.stderr)
	}
	if r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml"); !strings.Contains(r.stdout, "RUNNING") {
		t.Errorf("status of a running run: exit %d\n%s", r.code, r.stdout)
	}
	cmd.Process.Signal(os.Interrupt)
	wait()
	if r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml"); !strings.Contains(r.stdout, "INTERRUPTED") || !strings.Contains(r.stdout, "lifeboat failover resume --fleet fleet.yaml") {
		t.Errorf("status after Ctrl-C: exit %d\n%s", r.code, r.stdout)
	}
	cmd, wait = startCLI(t, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if !waitForRecord(t, dir, "resume", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("resume never took over: exit %d\n%s", r.code, r.stderr)
	}
	cmd.Process.Kill()
	wait()
	if r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml"); !strings.Contains(r.stdout, "DEAD") {
		t.Errorf("status after kill -9: exit %d\n%s", r.code, r.stdout)
	}
	// the router cannot be read: the journal and the lock are shown all the same
	os.Remove(filepath.Join(dir, "weights.json"))
	r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if r.code == 0 || !strings.Contains(r.stdout, "Run ") || !strings.Contains(r.stdout, "Router: UNREACHABLE") || !strings.Contains(r.stdout, "Lock ") {
		t.Errorf("status with the router unreachable: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// regionCell is the text in column of region's row of a plan's regions table (the columns
// found by the header's, as tabwriter aligns them).
func regionCell(t *testing.T, out, region, column string) string {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, h := range lines {
		if !strings.HasPrefix(h, "  REGION ") {
			continue
		}
		start := strings.Index(h, " "+column+" ")
		if start < 0 {
			start = strings.Index(h, " "+column) // the last column
		}
		if start < 0 {
			t.Fatalf("no column %s in %q", column, h)
		}
		start++
		for _, row := range lines[i+1:] {
			if !strings.HasPrefix(row, "  "+region+" ") {
				continue
			}
			end := len(row)
			if rest := strings.TrimLeft(h[start+len(column):], " "); rest != "" {
				end = min(len(row), len(h)-len(rest))
			}
			if start >= len(row) {
				return ""
			}
			return strings.TrimSpace(row[start:end])
		}
	}
	t.Fatalf("no row %s in the regions table:\n%s", region, out)
	return ""
}
