//go:build integration

package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Issue 32 §1: a plan's output a person can act on, against a live fleet (engine-sim replicas
// probed by the built binary).

// A restore planned live takes one reading: it cannot have seen failback_dwell, so it says so
// (never "warm for 0s") and names the restore command that waits the dwell out — a command
// that the binary then accepts as written.
func TestFailoverPlanRestoreLiveNamesTheDwell(t *testing.T) {
	liveFleet(t)
	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--yes", "--reason", "test")
	if r.code != 0 {
		t.Fatalf("evacuate eu-west-1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--action", "restore")
	if r.code != 3 || strings.Contains(r.stdout, "for 0s") || !strings.Contains(r.stdout, "a plan takes one reading and cannot observe failback_dwell (2s)") {
		t.Fatalf("plan --action restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	verdict := lastLine(r.stdout)
	m := regexp.MustCompile(`lifeboat (failover restore --fleet fleet\.yaml --region eu-west-1 --hold-timeout (\S+))$`).FindStringSubmatch(verdict)
	if !strings.HasPrefix(verdict, "VERDICT: HELD") || m == nil || m[2] != "3.2s" { // failback_dwell 2s + two step_intervals of 600ms
		t.Fatalf("the verdict names no restore command that waits out the dwell: %q", verdict)
	}
	// the command as printed: restore watches eu-west-1 for the dwell, then fails back
	args := strings.Fields(m[1]) // nothing in it is quoted
	r = cli(t, nil, append(args, "--yes", "--reason", "test")...)
	if r.code != 0 || !strings.Contains(r.stderr, "observing before failback") || !strings.Contains(r.stdout, "VERDICT: done") {
		t.Fatalf("%s: exit %d\n%s\n%s", m[1], r.code, r.stdout, r.stderr)
	}
}

// With no failover open there is nothing to restore: the live plan refuses as the run does
// (exit 3, no dwell hold), and names the command that shows what is open.
func TestFailoverPlanRestoreWithNothingOpenRefuses(t *testing.T) {
	liveFleet(t)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--action", "restore")
	if r.code != 3 || strings.Contains(r.stdout, "HELD") || !strings.Contains(r.stderr, "no failover is open") ||
		!strings.Contains(r.stderr, "lifeboat failover status --fleet fleet.yaml") {
		t.Fatalf("plan --action restore with nothing open: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	run := cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--yes", "--reason", "test")
	if run.code != r.code {
		t.Fatalf("plan (exit %d) and restore (exit %d) disagree\n%s", r.code, run.code, run.stderr)
	}
}

// A ramped evacuation of a DOWN region: the verdict line itself carries the warning (and
// -o json a field), and the regions table never says the region being evacuated receives.
func TestFailoverPlanDownRegionVerdictWarns(t *testing.T) {
	dir := liveFleet(t)
	dead := httptest.NewServer(nil)
	dead.Close()
	fp := filepath.Join(dir, "fleet.yaml")
	b, _ := os.ReadFile(fp)
	fl := regexp.MustCompile(`(eu-west-1: \{replica: \./r, endpoint: )"[^"]+"`).ReplaceAllString(string(b), `$1"`+dead.URL+`"`)
	if fl == string(b) {
		t.Fatal("the live fleet has no eu-west-1 endpoint to break")
	}
	os.WriteFile(fp, []byte(fl), 0o644)

	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1")
	verdict := lastLine(r.stdout)
	if !strings.HasPrefix(verdict, "VERDICT: ") || !strings.HasSuffix(verdict, "— but eu-west-1 is DOWN: ramping keeps sending it traffic; use --immediate") {
		t.Fatalf("the verdict of a ramp off a DOWN region does not warn: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	row := regexp.MustCompile(`(?m)^  eu-west-1\s+DOWN\s.*$`).FindString(r.stdout)
	if row == "" || !strings.HasSuffix(row, "no: evacuating") {
		t.Fatalf("regions table row of the region being evacuated: %q\n%s", row, r.stdout)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "-o", "json")
	var doc struct {
		Warning string `json:"warning"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Warning != "but eu-west-1 is DOWN: ramping keeps sending it traffic; use --immediate" {
		t.Fatalf("-o json warning %q (%v)\n%s", doc.Warning, err, r.stdout)
	}
	// --immediate is the advice taken: no warning
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--immediate")
	if strings.Contains(r.stdout, "ramping keeps sending") || !strings.HasPrefix(lastLine(r.stdout), "VERDICT: ") {
		t.Fatalf("plan --immediate: exit %d\n%s", r.code, r.stdout)
	}
}

// failover show PLAN: a saved plan rendered as `failover plan` printed it (the same renderer),
// after the facts the file records; -o json is the saved plan; a file that is not a plan, cut
// short or edited is exit 2 naming the file and the field.
func TestFailoverShowSavedPlan(t *testing.T) {
	dir := faultDir(t)
	plan := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--out", "evac.plan")
	if plan.code != 0 || !strings.HasPrefix(lastLine(plan.stdout), "VERDICT: evacuate eu-west-1: complete in") {
		t.Fatalf("plan --out: exit %d\n%s\n%s", plan.code, plan.stdout, plan.stderr)
	}
	r := cli(t, nil, "failover", "show", "evac.plan")
	head, body, ok := strings.Cut(r.stdout, "\n\n")
	if r.code != 0 || !ok || body != plan.stdout {
		t.Fatalf("show is not the plan as `failover plan` printed it: exit %d\n%s\n--- plan printed:\n%s\n%s", r.code, r.stdout, plan.stdout, r.stderr)
	}
	var saved struct {
		Fleet, Digest string
		Created       string
	}
	b, _ := os.ReadFile(filepath.Join(dir, "evac.plan"))
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Saved plan evac.plan\n", "made:   " + saved.Created[:19], "ago); the router state and signals below are as read then",
		"fleet:  fleet.yaml (digest " + saved.Fleet + ")", "digest: " + saved.Digest + " (the plan matches it)",
		"now:    fleet.yaml has the same regions, classes and router", "apply:  lifeboat failover run --fleet fleet.yaml --plan evac.plan"} {
		if !strings.Contains(head, want) {
			t.Errorf("show's facts lack %q:\n%s", want, head)
		}
	}
	r = cli(t, nil, "failover", "show", "evac.plan", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc["digest"] != saved.Digest || doc["plan"] == nil {
		t.Fatalf("show -o json: exit %d (%v)\n%s", r.code, err, r.stdout)
	}

	// the fleet changed since: still shown, said STALE, with the command to plan again
	fl, _ := os.ReadFile(filepath.Join(dir, "fleet.yaml"))
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(string(fl), "global: [us-east-1, eu-west-1]", "global: [us-east-1, eu-west-1, eu-central-1]", 1)), 0o644)
	r = cli(t, nil, "failover", "show", "evac.plan")
	if r.code != 0 || !strings.Contains(r.stdout, "STALE:  fleet.yaml has other regions, classes or router now") ||
		!strings.Contains(r.stdout, "Plan again: lifeboat failover plan --fleet fleet.yaml --region eu-west-1 --out evac.plan") {
		t.Fatalf("show of a stale plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), fl, 0o644)

	// bad input: exit 2, the file and what is wrong with it named
	edited := strings.Replace(string(b), `"eu-central-1": 75`, `"eu-central-1": 76`, 1)
	if edited == string(b) {
		t.Fatalf("no weight to edit in the saved plan:\n%s", b)
	}
	os.WriteFile("edited.plan", []byte(edited), 0o644)
	os.WriteFile("cut.plan", b[:len(b)/2], 0o644)
	os.WriteFile("digest.plan", []byte(strings.Replace(string(b), saved.Digest, "sha256:0123", 1)), 0o644)
	for _, c := range []struct{ file, want string }{
		{"edited.plan", "saved plan edited.plan: digest: the plan does not match the digest it was saved with"},
		{"cut.plan", "saved plan cut.plan: not a plan `lifeboat failover plan --out` wrote: the file ends before the plan does (truncated?)"},
		{"digest.plan", `saved plan digest.plan: digest: "sha256:0123" is not sha256:<64 hex digits>: the file was edited`},
		{"fleet.yaml", "saved plan fleet.yaml: not a plan `lifeboat failover plan --out` wrote"},
		{"missing.plan", "missing.plan: no such file or directory"},
	} {
		r = cli(t, nil, "failover", "show", c.file)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("show %s: exit %d, want 2 and %q\n%s%s", c.file, r.code, c.want, r.stdout, r.stderr)
		}
	}
	// run --plan refuses the edited file the same way, changing nothing
	before, _ := os.ReadFile(filepath.Join(dir, "weights.json"))
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--plan", "edited.plan", "--signals", "warm.json", "--reason", "test")
	if after, _ := os.ReadFile(filepath.Join(dir, "weights.json")); r.code != 2 || string(after) != string(before) || !strings.Contains(r.stderr, "edited.plan: digest") {
		t.Fatalf("run --plan of an edited plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
