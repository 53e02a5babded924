//go:build integration

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/testbed"
)

// A typo'd region, rule or action is a usage error (exit 2) that suggests the name meant,
// through the fleet's one UnknownRegion and the one did-you-mean ranking (editdistance).
func TestTypoedNamesSayDidYouMean(t *testing.T) {
	faultDir(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"boot region", []string{"boot", "--fleet", "fleet.yaml", "--region", "eu-wst-1"},
			"region eu-wst-1: not in fleet.yaml (regions: eu-central-1, eu-west-1, us-east-1) (did you mean eu-west-1?)"},
		{"restore region", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-wst-1", "--action", "restore", "--signals", "warm.json"},
			"did you mean eu-west-1?"},
		{"override rule", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--override", "max_transitons"},
			`--override: unknown rule "max_transitons"`},
		{"override rule", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--override", "max_transitons"},
			"failback_dwell) (did you mean max_transitions?)"},
		{"action", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--action", "evacaute"},
			`--action "evacaute": want evacuate, restore or spill (did you mean evacuate?)`},
	} {
		r := cli(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 and %q\n%s", c.name, r.code, c.want, r.stderr)
		}
	}
	// nothing close: no guess
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--action", "zzz")
	if r.code != 2 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("--action zzz: exit %d, want 2 and no suggestion\n%s", r.code, r.stderr)
	}
}

// lastCommand is the last line of s without its indent: where a refusal's next command is.
func lastCommand(s string) string { return strings.TrimSpace(lastLine(s)) }

// paste runs a command line as an operator pastes it (bash, the built lifeboat first on PATH).
func paste(t *testing.T, stdin, line string) result {
	t.Helper()
	c := exec.Command("bash", "-c", line)
	c.Env = append(os.Environ(), "PATH="+filepath.Dir(testbed.LifeboatBinary(t))+":"+os.Getenv("PATH"))
	c.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	_ = c.Run()
	return result{code: c.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// Every refusal ends with the next command to try, alone on the last line of stderr, pasteable:
// a run refused for residency names the run that moves what can move (not a plan); abort,
// restore and resume with nothing open point to status.
func TestFailoverRefusalsEndWithTheNextCommand(t *testing.T) {
	dir := faultDir(t)
	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--yes")
	want := "lifeboat failover run --fleet fleet.yaml --region eu-west-1 --skip-blocked --signals cold.json"
	if r.code != 3 || lastCommand(r.stderr) != want {
		t.Fatalf("run refused for residency: exit %d, the last line is not %q:\n%s", r.code, want, r.stderr)
	}
	if readFile(t, filepath.Join(dir, "weights.json")) != cliWeights {
		t.Fatal("a refused run changed the router")
	}
	// pasted (and approved at the prompt), it moves global and leaves eu-only: PARTIAL, exit 3
	p := paste(t, "yes\n", lastCommand(r.stderr))
	if p.code != 3 || !strings.Contains(p.stdout, "step(s) applied") || strings.Contains(p.stdout, " 0 step(s) applied") {
		t.Fatalf("the pasted run: exit %d\n%s\n%s", p.code, p.stdout, p.stderr)
	}
	cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes")

	status := "lifeboat failover status --fleet fleet.yaml"
	faultDir(t) // a state store with no run at all
	for _, args := range [][]string{
		{"failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes"},
		{"failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes"},
		{"failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json"},
	} {
		r := cli(t, nil, args...)
		if r.code == 0 || lastCommand(r.stderr) != status {
			t.Errorf("%s with nothing open: exit %d, the last line is not %q:\n%s", strings.Join(args[:2], " "), r.code, status, r.stderr)
		}
	}
	if p := paste(t, "", status); p.code != 0 {
		t.Errorf("the pasted status: exit %d\n%s", p.code, p.stderr)
	}
}

// A held run (exit 1) ends with the resume that goes on, alone on the last line; pasted, it
// finishes the run. A run rolled back by --rollback-on-fail ends with status.
func TestFailoverHoldsEndWithTheNextCommand(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 1500ms", 1)), 0o644)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// the router restarts from its configuration between two steps: the run holds on drift
	os.WriteFile(filepath.Join(dir, "weights.json"), []byte(strings.Replace(cliWeights, `"version": 1`, `"version": 1000`, 1)), 0o644)
	r := wait()
	resume := "lifeboat failover resume --fleet fleet.yaml --signals warm.json"
	if r.code != 1 || lastCommand(r.stderr) != resume {
		t.Fatalf("held run: exit %d, the last line is not %q:\n%s", r.code, resume, r.stderr)
	}
	if p := paste(t, "", resume); p.code != 0 || !strings.Contains(p.stdout, "VERDICT: done") {
		t.Fatalf("the pasted resume: exit %d\n%s\n%s", p.code, p.stdout, p.stderr)
	}

	// --rollback-on-fail: a check fails, the run steps back to the baseline, and says status
	dir = faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 1500ms", 1)), 0o644)
	cmd, wait = startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cmd.Process.Kill()
	wait()
	// eu-central-1 went cold: the next step fails its check
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "cold.json", "--rollback-on-fail")
	status := "lifeboat failover status --fleet fleet.yaml"
	if r.code != 1 || !strings.Contains(r.stderr, "rolled back") || lastCommand(r.stderr) != status {
		t.Fatalf("rolled back: exit %d, want 1 and the last line %q:\n%s", r.code, status, r.stderr)
	}
	// the verdict says why it held and that it is back
	if !strings.Contains(r.stdout, "VERDICT: HELD (exit 1): warm: eu-only/eu-central-1") || !strings.Contains(r.stdout, "rolled back to the baseline") {
		t.Errorf("rolled back: the verdict does not say why and where it ended:\n%s", r.stdout)
	}
}
