//go:build integration

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadEUW1 are signals where eu-west-1 is dead (not warm, not healthy) and the receivers are
// fine: an evacuation of it ramps; a way back to the baseline cannot start.
const deadEUW1 = `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {"us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 2, "prefill_tokens_per_s": 9600},
             "eu-west-1": {"warm": false, "healthy": false, "running": 0},
             "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 1, "prefill_tokens_per_s": 6400}}}`

// The on-call's dead ends of issue 28 §6, through the binary with the file router and the file
// state store: a run evacuating a dead eu-west-1 is asked to abort by a second operator; it
// honours the request, and the way back cannot start (eu-west-1 cannot take traffic back).
//   - the aborting operator reads why (never "without reaching the baseline ()") and both ways
//     out, pasteable: resume (which goes on back to the baseline) and the run that finishes
//     the evacuation instead;
//   - the held run's error says what blocks once (not the clause twice glued together);
//   - status says "steps applied: 1 of 3, then turned back…", never "1 of 0", says what resume
//     will do (continue the abort, which holds), and names the run that finishes the evacuation;
//   - that run, pasted, finishes it.
func TestFailoverHeldAbortNamesBothWaysOut(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 2s", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "dead.json"), []byte(deadEUW1), 0o644)
	_, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "dead.json", "--yes", "--reason", "INC-9 eu-west-1 down")
	if !waitForRecord(t, dir, "result", 1) {
		t.Fatal("the run applied no step")
	}
	ab := cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--reason", "INC-9 wrong region", "--wait", "60s")
	run := wait()
	const resume = "lifeboat failover resume --fleet fleet.yaml"
	const instead = "lifeboat failover run --fleet fleet.yaml --region eu-west-1"

	if ab.code != 1 || strings.Contains(ab.stderr, "()") || !strings.Contains(ab.stderr, "without reaching the baseline: abort requested by") ||
		!strings.Contains(ab.stderr, "the rollback to the baseline cannot start (warm)") ||
		!strings.Contains(ab.stderr, "\n  "+resume+"\n") || !strings.HasSuffix(strings.TrimSpace(ab.stderr), instead) {
		t.Errorf("the aborting operator: exit %d, want 1, why, and both ways out:\n%s", ab.code, ab.stderr)
	}
	if run.code != 1 || !strings.Contains(run.stderr, "Next, once what holds it is fixed, to go on back to the baseline:\n  "+resume+" --signals dead.json\n") ||
		!strings.Contains(run.stderr, "Or, to finish the evacuation instead:\n  "+instead+" --signals dead.json") {
		t.Errorf("the held run: exit %d, want 1 and both ways out:\n%s", run.code, run.stderr)
	}
	// what blocks, once
	if clause := "cannot move toward the target yet"; strings.Count(run.stderr, clause) != 1 {
		t.Errorf("the held run's error says %q %d times:\n%s", clause, strings.Count(run.stderr, clause), run.stderr)
	}

	st := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	for _, want := range []string{
		"  steps applied: 1 of 3, then turned back to the baseline (abort requested by ",
		"0 of 0 step(s) back applied",
		"  resume continues the abort (back to the baseline), not the evacuate eu-west-1 it undoes, which holds while this holds: ",
		"\n    " + resume + "\n",
		"  or finish the evacuation instead:\n    " + instead + "\n",
	} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	if strings.Contains(st.stdout, "of 0\n") || strings.Contains(st.stdout, "continue it with") {
		t.Errorf("status still says 1 of 0, or an unqualified continue:\n%s", st.stdout)
	}

	// resume does what status said: goes on back to the baseline, and holds (non-zero), naming
	// both ways out again
	rs := cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "dead.json")
	if rs.code == 0 || !strings.Contains(rs.stderr, "abort cannot complete") || !strings.Contains(rs.stderr, instead+" --signals dead.json") {
		t.Errorf("resume of the held abort: exit %d\n%s\n%s", rs.code, rs.stdout, rs.stderr)
	}
	// the other way out, pasted, finishes the evacuation
	fin := cli(t, nil, append(strings.Fields(strings.TrimPrefix(instead, "lifeboat ")), "--signals", "dead.json", "--yes", "--reason", "INC-9 finish")...)
	if fin.code != 0 || !strings.Contains(fin.stdout, "VERDICT: done") {
		t.Fatalf("%s: exit %d\n%s\n%s", instead, fin.code, fin.stdout, fin.stderr)
	}
	cells := fileRouterCells(t, filepath.Join(dir, "weights.json"))
	if cells["eu-only"]["eu-west-1"] != "0 maint" || cells["global"]["eu-west-1"] != "0 maint" {
		t.Errorf("eu-west-1 not evacuated: %v", cells)
	}
}

// Ctrl-C (SIGINT) during failover run is a hold like any other: the operator reads where it
// stopped and the pasteable resume and abort, never a bare "context canceled", and the exit is
// 130 (docs/exit-codes.md).
func TestFailoverInterruptNamesResumeAndAbort(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 30s", 1)), 0o644)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-10")
	if !waitForRecord(t, dir, "result", 1) {
		t.Fatal("the run applied no step")
	}
	time.Sleep(200 * time.Millisecond) // into the step_interval wait
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := wait()
	want := "Next, to go on from where it stopped:\n  lifeboat failover resume --fleet fleet.yaml --signals warm.json\nOr, to go back to the baseline:\n  lifeboat failover abort --fleet fleet.yaml --signals warm.json\n"
	if r.code != 130 || !strings.HasSuffix(r.stderr, want) || !strings.Contains(r.stderr, "stopped (interrupted by interrupt) after 1 step(s) applied") {
		t.Fatalf("Ctrl-C during run: exit %d, want 130 ending with\n%s\ngot:\n%s", r.code, want, r.stderr)
	}
	// pasted, resume goes on
	res := cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if res.code != 0 || !strings.Contains(res.stdout, "VERDICT: done") {
		t.Fatalf("resume after Ctrl-C: exit %d\n%s", res.code, res.stderr)
	}
}
