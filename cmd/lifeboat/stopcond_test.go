//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/internal/emulators"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// Issue 31 part 1: stop conditions against a real Prometheus (Debian's package, on loopback)
// scraping an engine simulator and an exporter whose value the test sets.

// exporter serves Prometheus text: one gauge per name, at the value the test sets.
type exporter struct {
	mu     sync.Mutex
	values map[string]float64
}

func (e *exporter) set(name string, v float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.values[name] = v
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for name, v := range e.values {
		fmt.Fprintf(w, "# TYPE %s gauge\n%s %g\n", name, name, v)
	}
}

// stopRig is a failover directory (cliFleet, recorded signals, the file router) whose fleet
// has a Prometheus scraping an exporter (and, with sim, an engine simulator).
type stopRig struct {
	dir  string
	exp  *exporter
	prom *emulators.Prometheus
}

func newStopRig(t *testing.T, sim bool) *stopRig {
	t.Helper()
	testbed.LifeboatBinary(t)
	exp := &exporter{values: map[string]float64{"lifeboat_test_error_ratio": 0.01}}
	hs := httptest.NewServer(exp)
	t.Cleanup(hs.Close)
	targets := []string{strings.TrimPrefix(hs.URL, "http://")}
	if sim {
		l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{NoLoRA: true})
		if err != nil {
			t.Fatal(err)
		}
		m, err := enginesim.Load(context.Background(), l.ModelDir, l.EngineFile, enginesim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		es := httptest.NewServer(enginesim.NewServer(m, enginesim.ServerOptions{}))
		t.Cleanup(es.Close)
		targets = append(targets, strings.TrimPrefix(es.URL, "http://"))
	}
	prom := emulators.StartPrometheus(t, targets...)
	rig := &stopRig{dir: failoverDir(t), exp: exp, prom: prom}
	rig.waitValue(t, "max(lifeboat_test_error_ratio)", 0.01)
	if sim {
		rig.waitValue(t, `max(up{job="t1"})`, 1)
	}
	return rig
}

// fleet writes the fleet file: cliFleet with step_interval, the prometheus section and conds.
func (r *stopRig) fleet(t *testing.T, stepInterval, conds string) {
	t.Helper()
	f := strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: "+stepInterval, 1)
	f += fmt.Sprintf("prometheus: {url: %q, timeout: 3s}\nstop_conditions:\n%s", r.prom.URL, conds)
	if err := os.WriteFile(filepath.Join(r.dir, "fleet.yaml"), []byte(f), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitValue waits until Prometheus answers q with want (the exporter's value, scraped).
func (r *stopRig) waitValue(t *testing.T, q string, want float64) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(r.prom.URL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			last = err.Error()
			continue
		}
		var a struct {
			Data struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&a)
		resp.Body.Close()
		if err == nil && len(a.Data.Result) == 1 && len(a.Data.Result[0].Value) == 2 {
			last = fmt.Sprint(a.Data.Result[0].Value[1])
			if last == fmt.Sprint(want) {
				return
			}
		}
	}
	t.Fatalf("prometheus never answered %s with %v (last: %s)", q, want, last)
}

// routerWeights reads the file router's weights: class → region → weight.
func routerWeights(t *testing.T, dir string) map[string]any {
	t.Helper()
	var doc struct {
		Classes map[string]map[string]struct {
			Weight float64 `json:"weight"`
		} `json:"classes"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "weights.json"))), &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for c, rs := range doc.Classes {
		m := map[string]any{}
		for r, w := range rs {
			m[r] = w.Weight
		}
		out[c] = m
	}
	return out
}

// lastAfter is the router state the journal's last result record read back.
func lastAfter(t *testing.T, dir string) (map[string]any, int) {
	t.Helper()
	var after map[string]any
	n := 0
	for _, rec := range journalRecords(t, dir) {
		if rec["kind"] == "result" {
			after, n = rec["after"].(map[string]any), n+1
		}
	}
	return after, n
}

// A condition that passes lets the run through; crossing max mid-run holds it before the next
// write, exit 1, naming the condition, the value, the threshold and the query, with the router
// exactly as the last completed step left it; status says so; resume holds again while it
// fails and finishes once it clears. An abort that a failing condition holds goes on with
// resume --override NAME, journaled.
func TestStopConditionHoldsMidRun(t *testing.T) {
	rig := newStopRig(t, true)
	rig.fleet(t, "3s", `  - {name: error-ratio, query: 'max(lifeboat_test_error_ratio)', max: 0.05}
  - {name: engine-queue, query: 'max(vllm:num_requests_waiting)', max: 40}
`)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "PASS error-ratio: 0.01 within max 0.05 (query: max(lifeboat_test_error_ratio))") ||
		!strings.Contains(r.stdout, "PASS engine-queue: 0 within max 40 (query: max(vllm:num_requests_waiting))") {
		t.Fatalf("plan: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	cmd, wait := startCLI(t, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "INC-31")
	if !waitForRecord(t, rig.dir, "result", 1) {
		cmd.Process.Kill()
		res := wait()
		t.Fatalf("the run never applied a step: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rig.exp.set("lifeboat_test_error_ratio", 0.083)
	r = wait()
	if r.code != 1 || !strings.Contains(r.stdout, "VERDICT: HELD (exit 1): before step 2/3: stop condition error-ratio: 0.083 > max 0.05 (query: max(lifeboat_test_error_ratio))") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	after, applied := lastAfter(t, rig.dir)
	if applied != 1 || !reflect.DeepEqual(routerWeights(t, rig.dir), after["weights"]) {
		t.Fatalf("the router is not where the last step left it (%d applied):\n%v\n%v", applied, routerWeights(t, rig.dir), after)
	}
	recs := journalRecords(t, rig.dir)
	hold := recs[len(recs)-1]
	v := hold["violations"].([]any)[0].(map[string]any)
	if hold["kind"] != "hold" || v["rule"] != "error-ratio" || v["query"] != "max(lifeboat_test_error_ratio)" || v["value"] != 0.083 || v["threshold"] != "max 0.05" {
		t.Fatalf("hold record %v", hold)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if !strings.Contains(r.stdout, "HELD: stop condition error-ratio: 0.083 > max 0.05") {
		t.Fatalf("status: exit %d\n%s", r.code, r.stdout)
	}
	before := readFile(t, filepath.Join(rig.dir, "weights.json"))
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 1 || !strings.Contains(r.stdout, "stop condition error-ratio: 0.083 > max 0.05") || readFile(t, filepath.Join(rig.dir, "weights.json")) != before {
		t.Fatalf("resume while it fails: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rig.exp.set("lifeboat_test_error_ratio", 0.02)
	rig.waitValue(t, "max(lifeboat_test_error_ratio)", 0.02)
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") {
		t.Fatalf("resume once it clears: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rig.exp.set("lifeboat_test_error_ratio", 0.5)
	rig.waitValue(t, "max(lifeboat_test_error_ratio)", 0.5)
	// a re-assert is a router write too: the router "forgot" the finished run (back at step 1's
	// document), and resume's re-assert is held by the failing condition, nothing written
	done := readFile(t, filepath.Join(rig.dir, "weights.json"))
	os.WriteFile(filepath.Join(rig.dir, "weights.json"), []byte(before), 0o644)
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "stop condition error-ratio: 0.5 > max 0.05") || readFile(t, filepath.Join(rig.dir, "weights.json")) != before {
		t.Fatalf("re-assert while a stop condition fails: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(rig.dir, "weights.json"), []byte(done), 0o644)
	r = cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes", "--reason", "back")
	if r.code != 1 || !strings.Contains(r.stdout, "stop condition error-ratio: 0.5 > max 0.05") {
		t.Fatalf("abort while it fails: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json", "--override", "error-rate")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean error-ratio?") {
		t.Fatalf("resume --override with a typo: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json", "--override", "error-ratio", "--reason", "known bad canary")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") || !strings.Contains(r.stderr, "overridden (--override error-ratio)") {
		t.Fatalf("resume --override: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	baseline := map[string]any{"eu-only": map[string]any{"eu-west-1": 50.0, "eu-central-1": 50.0}, "global": map[string]any{"us-east-1": 60.0, "eu-west-1": 40.0}}
	if w := routerWeights(t, rig.dir); !reflect.DeepEqual(w, baseline) {
		t.Fatalf("router after the abort: %v", w)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if !strings.Contains(r.stdout, "override: rule error-ratio bypassed by") {
		t.Fatalf("status does not show the override: %s", r.stdout)
	}
}

// An empty result holds (on_empty: hold, the default) before the first write, and so does a
// Prometheus that does not answer; a dry run never holds; consecutive_failures holds only after
// that many failing evaluations in a row.
func TestStopConditionEmptyDownDryRunConsecutive(t *testing.T) {
	rig := newStopRig(t, false)
	// the hold is notified with the condition; the Prometheus token (read from the environment,
	// sent to Prometheus, which ignores it) is in no output, journal record or notification
	const token = "pr0m-T0KEN-s3cr3t-9a8b"
	var hook receiver
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { hook.record(req) }))
	defer hs.Close()
	rig.fleet(t, "10ms", `  - {name: absent, query: 'max(lifeboat_test_absent)', max: 1}
notify:
  - {name: oncall, url_env: LB_TEST_STOP_HOOK, format: json}
`)
	fl := readFile(t, "fleet.yaml")
	os.WriteFile("fleet.yaml", []byte(strings.Replace(fl, "timeout: 3s}", "timeout: 3s, bearer_token_env: LB_TEST_PROM_TOKEN}", 1)), 0o644)
	env := []string{"LB_TEST_STOP_HOOK=" + hs.URL, "LB_TEST_PROM_TOKEN=" + token}
	r := cli(t, env, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 1 || !strings.Contains(r.stdout, "before step 1/3: stop condition absent: empty result: the query returned no series (on_empty: hold)") ||
		readFile(t, filepath.Join(rig.dir, "weights.json")) != cliWeights {
		t.Fatalf("empty result: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	hook.mu.Lock()
	bodies := hook.bodies
	hook.mu.Unlock()
	if len(bodies) != 2 || bodies[1]["event"] != "failover.hold" || !strings.Contains(fmtAny(bodies[1]["detail"]), "stop condition absent: empty result") ||
		!strings.Contains(fmtAny(bodies[1]["detail"]), "(query: max(lifeboat_test_absent))") {
		t.Fatalf("hold notification: %v", bodies)
	}
	all, _ := json.Marshal(bodies)
	recs, _ := json.Marshal(journalRecords(t, rig.dir))
	if s := r.stdout + r.stderr + string(all) + string(recs) + cli(t, env, "failover", "status", "--fleet", "fleet.yaml", "-o", "json").stdout; strings.Contains(s, token) {
		t.Fatalf("the Prometheus token leaked:\n%s", s)
	}
	r = cli(t, env, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes")
	if r.code != 0 {
		t.Fatalf("abort of a run that wrote nothing: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	rig.fleet(t, "10ms", `  - {name: canary, query: 'max(lifeboat_test_error_ratio)', max: 0.001, dry_run: true}
`)
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 0 || !strings.Contains(r.stdout, "VERDICT: done") || !strings.Contains(r.stderr, "dry_run: reported, never holds") {
		t.Fatalf("dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--override", "failback_dwell")
	if r.code != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	rig.fleet(t, "10ms", `  - {name: error-ratio, query: 'max(lifeboat_test_error_ratio)', max: 0.005, consecutive_failures: 3, interval: 1s}
`)
	t0 := time.Now()
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 1 || !strings.Contains(r.stdout, "0.01 > max 0.005 (3 evaluations in a row, 1s apart)") || time.Since(t0) < 2*time.Second {
		t.Fatalf("consecutive failures: exit %d after %s\n%s\n%s", r.code, time.Since(t0), r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes")
	if r.code != 0 {
		t.Fatalf("abort: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Prometheus answering an error, or a result that is not an instant vector, holds
	rig.fleet(t, "10ms", `  - {name: broken, query: 'max(lifeboat_test_error_ratio', max: 0.05}
  - {name: ranged, query: 'lifeboat_test_error_ratio[1m]', max: 0.05}
`)
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "FAIL (would hold) broken: no value: prometheus: HTTP 400: bad_data:") ||
		!strings.Contains(r.stdout, `FAIL (would hold) ranged: no value: prometheus: result type "matrix": a stop condition wants an instant vector or a scalar`) {
		t.Fatalf("plan with a PromQL error and a range vector: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 1 || !strings.Contains(r.stdout, "before step 1/3: stop condition broken: no value: prometheus: HTTP 400: bad_data:") {
		t.Fatalf("run with a PromQL error: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r = cli(t, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes"); r.code != 0 {
		t.Fatalf("abort: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	rig.fleet(t, "10ms", `  - {name: error-ratio, query: 'max(lifeboat_test_error_ratio)', max: 0.05}
`)
	rig.prom.Stop()
	before := readFile(t, filepath.Join(rig.dir, "weights.json"))
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json")
	if r.code != 0 || !strings.Contains(r.stdout, "FAIL (would hold) error-ratio: no value: prometheus at "+rig.prom.URL+" did not answer") {
		t.Fatalf("plan with Prometheus down: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 1 || !strings.Contains(r.stdout, "before step 1/3: stop condition error-ratio: no value: prometheus at "+rig.prom.URL+" did not answer") ||
		readFile(t, filepath.Join(rig.dir, "weights.json")) != before {
		t.Fatalf("Prometheus down: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
