//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// Tests of issue 18 §1–§3 through the built binary, one process per command, on the file
// router and a file state store (see failover_live_test.go for HAProxy and live signals).

// journalRecords reads every record of every run in the file state store, oldest run first.
func journalRecords(t *testing.T, dir string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "state", "failover", "runs", "*", "*.json"))
	slices.Sort(files)
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, rec)
	}
	return out
}

// faultDir is failoverDir with the binary built first (the build runs in the module, not in
// the test's directory).
func faultDir(t *testing.T) string {
	testbed.LifeboatBinary(t)
	return failoverDir(t)
}

// stateStore is where a test's fleets keep their lock and journal: the file store, or a bucket
// on versitygw (the S3 emulator).
type stateStore struct {
	name, url string
	env       []string
	put       func(t *testing.T, key string, data []byte)
}

func stateStores(t *testing.T) []func(t *testing.T, dir string) stateStore {
	testbed.LifeboatBinary(t)
	gw := emulators.SharedVersityGW(t) // found from the module, before a test moves into its directory
	return []func(t *testing.T, dir string) stateStore{
		func(t *testing.T, dir string) stateStore {
			return stateStore{name: "file", url: "file://./state", put: func(t *testing.T, key string, data []byte) {
				p := filepath.Join(dir, "state", filepath.FromSlash(key))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}}
		},
		func(t *testing.T, dir string) stateStore {
			if err := gw.Bucket(context.Background(), "failover-state"); err != nil {
				t.Fatal(err)
			}
			url := gw.URL("failover-state", testbed.FreshPrefix("fo18"))
			return stateStore{name: "s3", url: url,
				env: []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"},
				put: func(t *testing.T, key string, data []byte) {
					st, err := providers.Open(context.Background(), url, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")})
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					if _, err := st.Write(context.Background(), key, bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data))}); err != nil {
						t.Fatal(err)
					}
				}}
		},
	}
}

// useState points fleet.yaml (and fleets) at the store.
func useState(t *testing.T, dir string, st stateStore, files ...string) {
	for _, f := range append([]string{"fleet.yaml"}, files...) {
		p := filepath.Join(dir, f)
		os.WriteFile(p, []byte(strings.Replace(readFile(t, p), "state: file://./state", "state: "+st.url, 1)), 0o644)
	}
}

// A forged journal (a start record whose step sends 100 % of eu-only to us-east-1) is refused
// by resume (exit 3, the router byte for byte as it was); status and abort still run. On the
// file store and on versitygw.
func TestFailoverForgedJournalRefused(t *testing.T) {
	for _, open := range stateStores(t) {
		dir := faultDir(t)
		st := open(t, dir)
		t.Run(st.name, func(t *testing.T) { forgedJournal(t, dir, st) })
	}
}

func forgedJournal(t *testing.T, dir string, st stateStore) {
	useState(t, dir, st)
	run := time.Now().UTC().Format("20060102T150405.000Z") + "-f0f0f0"
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	start := `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}}, "states": {}}`
	rec := fmt.Sprintf(`{"seq": 0, "run": %q, "kind": "start", "time": %q, "holder": "mallory", "token": 1,
  "event": {"kind": "evacuate", "region": "eu-west-1"},
  "plan": {"event": {"kind": "evacuate", "region": "eu-west-1"}, "refused": false, "complete": true, "reason": "",
    "steps": [{"weights": {"eu-only": {"us-east-1": 100, "eu-west-1": 0, "eu-central-1": 0}}, "predicted_queue_wait_ms": {}, "drain": []}],
    "shed": {}, "start": %s, "final": %s},
  "baseline": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
  "expires": %q}`, run, time.Now().UTC().Format(time.RFC3339Nano), start, start, exp)
	st.put(t, "failover/runs/"+run+"/000000.json", []byte(rec))
	before := readFile(t, filepath.Join(dir, "weights.json"))

	r := cli(t, st.env, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code != 3 || !strings.Contains(r.stderr, "residency") || !strings.Contains(r.stderr, "us-east-1") {
		t.Fatalf("resume of a forged journal: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "weights.json")); got != before {
		t.Fatalf("the router changed on a refused resume:\n%s", got)
	}
	r = cli(t, st.env, "failover", "status", "--fleet", "fleet.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, run) {
		t.Fatalf("status after the refused resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, st.env, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "warm.json", "--yes")
	if r.code != 0 {
		t.Fatalf("abort after the refused resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "weights.json")); got != before {
		t.Fatalf("the router left its baseline:\n%s", got)
	}
}

// Two fleets share one state store (the file store, and versitygw): fleet B never reports,
// resumes or aborts fleet A's run.
func TestFailoverFleetsShareStateStore(t *testing.T) {
	for _, open := range stateStores(t) {
		dir := faultDir(t)
		st := open(t, dir)
		t.Run(st.name, func(t *testing.T) { fleetsShareStore(t, dir, st) })
	}
}

func fleetsShareStore(t *testing.T, dir string, st stateStore) {
	fleetB := strings.NewReplacer("llama-demo", "llama-other", "weights.json", "weights-b.json").Replace(cliFleet)
	os.WriteFile(filepath.Join(dir, "fleet-b.yaml"), []byte(fleetB), 0o644)
	weightsB := strings.NewReplacer(`"eu-west-1": {"weight": 50}`, `"eu-west-1": {"weight": 70}`, `"eu-central-1": {"weight": 50}`, `"eu-central-1": {"weight": 30}`).Replace(cliWeights)
	os.WriteFile(filepath.Join(dir, "weights-b.json"), []byte(weightsB), 0o644)
	useState(t, dir, st, "fleet-b.yaml")

	r := cli(t, st.env, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "fleet A")
	if r.code != 0 {
		t.Fatalf("fleet A's run: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, st.env, "failover", "status", "--fleet", "fleet-b.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "No failover run") {
		t.Fatalf("fleet B's status reports fleet A's run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, st.env, "failover", "resume", "--fleet", "fleet-b.yaml", "--signals", "warm.json")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing to resume") {
		t.Fatalf("fleet B's resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, st.env, "failover", "abort", "--fleet", "fleet-b.yaml", "--signals", "warm.json", "--yes")
	if r.code != 3 || !strings.Contains(r.stderr, "no failover is open") {
		t.Fatalf("fleet B's abort: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "weights-b.json")); got != weightsB {
		t.Fatalf("fleet B's router changed:\n%s", got)
	}
	// a router reload on B: fleet A's finished run is still not B's to re-assert
	r = cli(t, st.env, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"done": true`) || !strings.Contains(r.stdout, `"fleet": "sha256:`) {
		t.Fatalf("fleet A's status: exit %d\n%s", r.code, r.stdout)
	}
}

// partialFleet caps spill at 30 %: evacuating eu-west-1 leaves 20 % of eu-only and 10 % of
// global on it.
func partialFleet(t *testing.T) string {
	dir := faultDir(t)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(strings.Replace(cliFleet, "spill_cap_percent: 60", "spill_cap_percent: 30", 1)), 0o644)
	return dir
}

// An evacuation that cannot place everything: plan exits 3 with complete false, shed and
// reason; run refuses it without acceptance; --allow-partial applies it and still exits 3 with
// a verdict line; status says held; the half-evacuated region then stays out of a second
// evacuation.
func TestFailoverPartialOutcome(t *testing.T) {
	dir := partialFleet(t)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "-o", "json")
	var plan struct {
		Complete *bool              `json:"complete"`
		Rule     string             `json:"rule"`
		Reason   string             `json:"reason"`
		ShedRaw  map[string]float64 `json:"shed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, r.stdout)
	}
	if r.code != 3 || plan.Complete == nil || *plan.Complete || plan.Rule != "spill_cap" || !strings.Contains(plan.Reason, "eu-only") || plan.ShedRaw["eu-only"] != 20 {
		t.Fatalf("partial plan: exit %d %+v\n%s", r.code, plan, r.stdout)
	}
	if !strings.Contains(r.stderr, "VERDICT: HELD for safety (spill_cap)") {
		t.Fatalf("no verdict line on stderr: %s", r.stderr)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 3 || !strings.HasPrefix(lines[len(lines)-1], "VERDICT: HELD for safety (spill_cap)") {
		t.Fatalf("text plan: exit %d\n%s", r.code, r.stdout)
	}
	before := readFile(t, filepath.Join(dir, "weights.json"))
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 3 || !strings.Contains(r.stderr, "--allow-partial") {
		t.Fatalf("unaccepted partial run: exit %d\n%s", r.code, r.stderr)
	}
	if readFile(t, filepath.Join(dir, "weights.json")) != before {
		t.Fatal("an unaccepted partial plan changed the router")
	}
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes", "--allow-partial", "--reason", "accepted")
	if r.code != 3 || !strings.Contains(r.stdout, "VERDICT: HELD for safety (spill_cap)") || !strings.Contains(r.stdout, "20.0% of eu-only") {
		t.Fatalf("accepted partial run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if !strings.Contains(r.stdout, "held: ") || strings.Contains(r.stdout, "— done") {
		t.Fatalf("status of a partial run: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	if !strings.Contains(r.stdout, `"complete": false`) {
		t.Fatalf("status JSON of a partial run:\n%s", r.stdout)
	}
	// eu-west-1 is half-evacuated and stays out: evacuating eu-central-1 has nowhere to put
	// eu-only, and never moves it back into eu-west-1.
	mid := readFile(t, filepath.Join(dir, "weights.json"))
	r = cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-central-1", "--signals", "warm.json", "--yes", "--allow-partial")
	if r.code != 3 || !strings.Contains(r.stderr, "eu-west-1 taken out by the open failover") {
		t.Fatalf("evacuating eu-central-1 next: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if readFile(t, filepath.Join(dir, "weights.json")) != mid {
		t.Fatal("the second evacuation changed the router")
	}
}

// A hold decided by an assumed inflow says so next to the verdict, with the measurement that
// would settle it.
func TestFailoverAssumptionDecidedHold(t *testing.T) {
	faultDir(t)
	sig := `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {"us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 350},
             "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 350},
             "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 350}}}`
	os.WriteFile("assumed.json", []byte(sig), 0o644)
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "assumed.json")
	if r.code != 3 || !strings.Contains(r.stdout, "VERDICT:") || !strings.Contains(r.stdout, "decided by an assumption: eu-central-1: prefill inflow not measured") || !strings.Contains(r.stdout, "vllm:prompt_tokens_total") {
		t.Fatalf("plan held on an assumption: exit %d\n%s", r.code, r.stdout)
	}
	r = cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "assumed.json", "-o", "json")
	if !strings.Contains(r.stdout, `"decided_by_assumption"`) {
		t.Fatalf("plan JSON:\n%s", r.stdout)
	}
}

// A failback that stops short of the baseline (the returning region's predicted queue wait
// crosses spill_start_ms half-way) is refused without acceptance, ends held for safety (exit 3)
// with what is left when accepted, and status says held, never done.
func TestFailoverFailbackShortOfBaseline(t *testing.T) {
	dir := faultDir(t)
	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes")
	if r.code != 0 {
		t.Fatalf("evacuation: exit %d\n%s", r.code, r.stderr)
	}
	back := `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {"us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 2, "prefill_tokens_per_s": 9600},
             "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 140, "running": 0, "calm_seconds": 3600},
             "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 1, "prefill_tokens_per_s": 60000}}}`
	os.WriteFile("back.json", []byte(back), 0o644)
	evacuated := readFile(t, filepath.Join(dir, "weights.json"))
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "back.json", "--yes", "--hold-timeout", "0s")
	if r.code != 3 || !strings.Contains(r.stderr, "stops short of the target") || !strings.Contains(r.stderr, "--allow-partial") {
		t.Fatalf("unaccepted short failback: exit %d\n%s", r.code, r.stderr)
	}
	if readFile(t, filepath.Join(dir, "weights.json")) != evacuated {
		t.Fatal("an unaccepted short failback changed the router")
	}
	r = cli(t, nil, "failover", "restore", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "back.json", "--yes", "--allow-partial", "--hold-timeout", "0s")
	if r.code != 3 || !strings.Contains(r.stdout, "VERDICT: HELD for safety (headroom)") || !strings.Contains(r.stdout, "target 50/50") {
		t.Fatalf("accepted short failback: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	if !strings.Contains(r.stdout, "restore eu-west-1 — held: stops short of the target") {
		t.Fatalf("status of a short failback:\n%s", r.stdout)
	}
}
