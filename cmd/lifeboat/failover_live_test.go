//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/clitest"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// Tests of issue 18 §2–§3 with processes of the built binary that probe real replicas
// (engine-sim, in this process) or race a run between its steps.

// startCLI starts the binary in the background; its stdout and stderr are returned by wait.
func startCLI(t *testing.T, args ...string) (*exec.Cmd, func() result) {
	t.Helper()
	p := clitest.Start(t, clitest.Options{}, args...)
	return p.Cmd, func() result { return res(p.Wait()) }
}

// waitForRecord waits until the journal holds n records of kind (false after 30 s).
func waitForRecord(t *testing.T, dir, kind string, n int) bool {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		seen := 0
		files, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*", "*.json"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"kind": "`+kind+`"`)) {
				seen++
			}
		}
		if seen >= n {
			return true
		}
	}
	return false
}

// A router reset between two steps of a live run (the file router rewritten as a restart or a
// reload leaves it) holds the run with a named drift, exit 1, and nothing written over it;
// resume then re-asserts and finishes.
func TestFailoverDriftBetweenSteps(t *testing.T) {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 1500ms", 1)), 0o644)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// the router restarts from its configuration: the weights before the run
	restarted := strings.Replace(cliWeights, `"version": 1`, `"version": 1000`, 1)
	if err := os.WriteFile(filepath.Join(dir, "weights.json"), []byte(restarted), 0o644); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if r.code != 1 || !strings.Contains(r.stderr, "drift") || !strings.Contains(r.stderr, "before step 2") || !strings.Contains(r.stderr, "lifeboat failover resume") {
		t.Fatalf("run over a restarted router: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "weights.json")); got != restarted {
		t.Fatalf("the run wrote over the restarted router:\n%s", got)
	}
	recs := journalRecords(t, dir)
	if last := recs[len(recs)-1]; last["kind"] != "hold" || !strings.Contains(fmt.Sprint(last["detail"]), "drift") {
		t.Fatalf("last journal record %v", last)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "DRIFT") {
		t.Fatalf("status: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Classes map[string]map[string]struct {
			Weight int    `json:"weight"`
			State  string `json:"state"`
		} `json:"classes"`
	}
	json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "weights.json"))), &doc)
	if doc.Classes["eu-only"]["eu-central-1"].Weight != 100 || doc.Classes["eu-only"]["eu-west-1"].State != "maint" {
		t.Fatalf("router after the resume: %+v", doc.Classes)
	}
}

// liveFleet writes a fleet whose three regions are engine-sim replicas: the failover probes
// them (the warm prober, /health, /metrics) as it would vLLM.
func liveFleet(t *testing.T) string {
	t.Helper()
	testbed.LifeboatBinary(t)
	ctx := context.Background()
	l, err := sample.Generate(ctx, t.TempDir(), sample.Options{NoLoRA: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(ctx, l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url := map[string]string{}
	for _, r := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		hs := httptest.NewServer(enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond}))
		t.Cleanup(hs.Close)
		url[r] = hs.URL
	}
	dir := failoverDir(t)
	fleet := fmt.Sprintf(`model: {name: %s, manifest: m.json}
regions:
  us-east-1: {replica: ./r, endpoint: %q, capacity: {replicas: 6, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
  eu-west-1: {replica: ./r, endpoint: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
  eu-central-1: {replica: ./r, endpoint: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 25, step_interval: 600ms, spill_cap_percent: 60, drain_timeout: 1s, failback_dwell: 2s, assumed_utilization_percent: 20}
state: file://./state
`, m.ServedNames[0], url["us-east-1"], url["eu-west-1"], url["eu-central-1"])
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644)
	return dir
}

// kill -9 mid-run, then resume from a new process: it probes the replicas as run does and
// reaches done (today it held on "not warm (not probed)"). Then restore, from a fresh process,
// observes eu-west-1 for failback_dwell and fails back to the baseline.
func TestFailoverKillResumeRestoreLive(t *testing.T) {
	dir := liveFleet(t)
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--yes", "--reason", "live")
	if !waitForRecord(t, dir, "result", 1) {
		cmd.Process.Kill()
		r := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if r := wait(); r.code != 137 {
		t.Fatalf("killed run: exit %d\n%s", r.code, r.stderr)
	}
	var lk struct {
		ID string `json:"id"`
	}
	json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "state", "failover", "lock.json"))), &lk)
	if r := cli(t, nil, "failover", "unlock", "--fleet", "fleet.yaml", "--id", lk.ID, "--reason", "holder killed"); r.code != 0 {
		t.Fatalf("unlock %q: exit %d %s", lk.ID, r.code, r.stderr)
	}
	r := cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--reason", "after kill -9")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") || !strings.Contains(r.stderr, "preflight") {
		t.Fatalf("resume with live signals: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if w := readFile(t, filepath.Join(dir, "weights.json")); !strings.Contains(w, `"eu-central-1": {`) || !strings.Contains(w, `"state": "maint"`) {
		t.Fatalf("router after the resume:\n%s", w)
	}
	t0 := time.Now()
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--yes", "--reason", "recovered")
	if r.code != 0 || !strings.Contains(r.stderr, "observing before failback") || !strings.Contains(r.stdout, "VERDICT: done") {
		t.Fatalf("restore from a fresh process: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if d := time.Since(t0); d < 2*time.Second {
		t.Fatalf("restore took %s: it did not observe failback_dwell 2s", d)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"closed": true`) {
		t.Fatalf("status after the failback: exit %d\n%s", r.code, r.stdout)
	}
	// a restore that cannot observe the dwell within --hold-timeout says so at once
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--yes")
	if r.code != 0 {
		t.Fatalf("second evacuation: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--yes", "--hold-timeout", "1s")
	if r.code != 3 || !strings.Contains(r.stderr, "failback_dwell") {
		t.Fatalf("restore with a short --hold-timeout: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
