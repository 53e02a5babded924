package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const cliFleet = `model: {name: llama-demo, manifest: m.json}
regions:
  us-east-1: {replica: ./r, capacity: {replicas: 6, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 25, step_interval: 10ms, spill_cap_percent: 60, drain_timeout: 1s}
state: file://./state
`

const cliSignals = `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {"us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 2, "prefill_tokens_per_s": 9600},
             "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 30, "running": 0, "prefill_tokens_per_s": 6400},
             "eu-central-1": {"warm": %s, "healthy": true, "queue_wait_ms": 10, "running": 1, "prefill_tokens_per_s": 6400}}}`

const cliWeights = `{"version": 1, "classes": {"eu-only": {"eu-west-1": {"weight": 50}, "eu-central-1": {"weight": 50}}, "global": {"us-east-1": {"weight": 60}, "eu-west-1": {"weight": 40}}}}`

func failoverDir(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(cliFleet), 0o644)
	os.WriteFile(filepath.Join(dir, "warm.json"), []byte(strings.Replace(cliSignals, "%s", "true", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "cold.json"), []byte(strings.Replace(cliSignals, "%s", "false", 1)), 0o644)
	os.WriteFile(filepath.Join(dir, "weights.json"), []byte(cliWeights), 0o644)
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	t.Chdir(dir)
	return dir
}

func TestFailoverPlanCLI(t *testing.T) {
	failoverDir(t)
	r := lifeboat(t, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"event", "refused", "reason", "steps", "shed", "exit_code"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("plan -o json lacks %q: %s", k, r.stdout)
		}
	}
	steps := doc["steps"].([]any)
	first := steps[0].(map[string]any)
	for _, k := range []string{"weights", "predicted_queue_wait_ms", "drain"} {
		if _, ok := first[k]; !ok {
			t.Errorf("step lacks %q", k)
		}
	}
	if ev := doc["event"].(map[string]any); ev["kind"] != "evacuate" || ev["region"] != "eu-west-1" {
		t.Errorf("event %v", ev)
	}
	r = lifeboat(t, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "STEP") || !strings.Contains(r.stdout, "eu-central-1") {
		t.Fatalf("text plan: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// refused: the EU-only class's other region is cold
	r = lifeboat(t, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "cold.json")
	if r.code != 3 || !strings.Contains(r.stdout, "REFUSED (residency)") || !strings.Contains(r.stdout, "eu-only") {
		t.Fatalf("refused plan: exit %d\n%s", r.code, r.stdout)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"failover", "plan", "--fleet", "fleet.yaml"}, 2, "give --region REGION"},
		{[]string{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "mars-1", "--signals", "warm.json"}, 2, "mars-1: not in"},
		{[]string{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--override", "residency"}, 2, "can never be overridden"},
		{[]string{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "nope.json"}, 2, "--signals"},
		{[]string{"failover", "bogus"}, 2, "unknown command"},
	} {
		r := lifeboat(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
}

func TestFailoverRunStatusCLI(t *testing.T) {
	dir := failoverDir(t)
	r := lifeboat(t, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "cold.json", "--yes")
	if r.code != 3 {
		t.Fatalf("refused run exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "weights.json")); string(b) != cliWeights {
		t.Fatal("a refused run changed the router")
	}
	// without --yes and no "yes" on stdin nothing happens
	r = lifeboat(t, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json")
	if r.code == 0 || !strings.Contains(r.stderr, "cancelled") {
		t.Fatalf("unconfirmed run: %d %s", r.code, r.stderr)
	}
	r = lifeboat(t, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "test")
	if r.code != 0 || !strings.Contains(r.stdout, "Final weights") {
		t.Fatalf("run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = lifeboat(t, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"drift": []`) {
		t.Fatalf("status: %d %s %s", r.code, r.stdout, r.stderr)
	}
	// drift: edit the router behind the journal's back
	b, _ := os.ReadFile(filepath.Join(dir, "weights.json"))
	os.WriteFile(filepath.Join(dir, "weights.json"), []byte(strings.Replace(string(b), `"weight": 100`, `"weight": 99`, 1)), 0o644)
	// status names the drift and the command that re-applies the journal; it says what expires.
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	const resume = "lifeboat failover resume --fleet fleet.yaml"
	if r.code != 1 || !strings.Contains(r.stdout, "DRIFT") || !strings.Contains(r.stdout, "re-apply the journal") || !strings.Contains(r.stdout, "\n    "+resume+"\n") {
		t.Fatalf("drift: exit %d, want 1 naming %q\n%s", r.code, resume, r.stdout)
	}
	if !strings.Contains(r.stdout, "failover expires at ") || strings.Contains(r.stdout, "  expires:") {
		t.Errorf("status says what expires? want \"failover expires at\"\n%s", r.stdout)
	}
	// and -o json carries the same fix
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	var doc struct {
		Drift    []string `json:"drift"`
		DriftFix struct {
			Why      string   `json:"why"`
			Commands []string `json:"commands"`
		} `json:"drift_fix"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 1 || len(doc.Drift) == 0 ||
		!strings.HasPrefix(doc.DriftFix.Why, "re-apply the journal") || !slices.Equal(doc.DriftFix.Commands, []string{resume}) {
		t.Fatalf("status -o json with drift: exit %d (%v) %+v\n%s", r.code, err, doc, r.stdout)
	}
	// resume, as named (with this test's signals file for the live prober), re-asserts a
	// finished run's final state the router no longer holds
	r = cli(t, nil, append(strings.Fields(resume)[1:], "--signals", "warm.json")...)
	if r.code != 0 || !strings.Contains(r.stdout, "re-asserted") {
		t.Fatalf("resume of a finished run with drift: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = lifeboat(t, "failover", "status", "--fleet", "fleet.yaml")
	if r.code != 0 || strings.Contains(r.stdout, "DRIFT") {
		t.Fatalf("status after the re-assert: exit %d %s", r.code, r.stdout)
	}
	r = lifeboat(t, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing to resume") {
		t.Fatalf("resume of a finished run: %d %s", r.code, r.stderr)
	}
	r = lifeboat(t, "failover", "unlock", "--fleet", "fleet.yaml", "--id", "nope")
	if r.code != 3 {
		t.Fatalf("unlock of a wrong id: %d %s", r.code, r.stderr)
	}
}
