//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/failover"
	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// drillBaseline is the router's weights before every drill of these tests.
var drillBaseline = router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 50, "eu-west-1": 30, "eu-central-1": 20},
}

const tokenizer = "model/tokenizer.json"

// crashRig is a three-region fleet of engine-sim candidates on local replicas, the file router
// at drillBaseline, and a state store (a directory unless state is set).
type crashRig struct {
	dir, fleet, drill, weights, state string
	env                               []string      // the drill processes' environment (TMPDIR: the rig)
	original                          []byte        // the archive's tokenizer before any drill
	drv                               router.Driver // the router, when not the file at weights
}

func newCrashRig(t *testing.T, state string, env []string, stepInterval, drill string) *crashRig {
	t.Helper()
	l, m := fixture(t, sample.Options{})
	dir := t.TempDir()
	rig := &crashRig{dir: dir, fleet: filepath.Join(dir, "fleet.yaml"), drill: filepath.Join(dir, "drill.yaml"), weights: filepath.Join(dir, "weights.json"),
		env: append([]string{"TMPDIR=" + dir}, env...)}
	if state == "" {
		state = "file://" + filepath.Join(dir, "state")
		if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rig.state = state
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %s}\nregions:\n", m)
	for _, n := range []string{"us-east-1", "eu-west-1", "eu-central-1", "archive"} {
		rep := filepath.Join(dir, "replicas", n)
		if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", rep, "--quiet"); r.code != 0 {
			t.Fatalf("replicate: %s", r.stderr)
		}
		fmt.Fprintf(&b, "  %s:\n    replica: %s\n    capacity: {replicas: 4, prefill_tokens_per_s: 8000}\n", n, rep)
		if n == "archive" {
			continue // verified, never booted, in no class: a fault there stays for the whole drill
		}
		b.WriteString("    launcher: {kind: exec, command: \"lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}\"}\n")
	}
	fmt.Fprintf(&b, `tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, eu-central-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 20, step_interval: %s, spill_cap_percent: 60, drain_timeout: 2s, failback_dwell: 200ms, max_transitions_per_hour: 1000, assumed_utilization_percent: 20}
state: %q
sla: {rto: 5m}
`, stepInterval, state)
	if err := os.WriteFile(rig.fleet, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := (&filerouter.Router{Path: rig.weights}).Apply(context.Background(), router.RouterState{Weights: drillBaseline.Clone()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rig.drill, []byte(drill), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if rig.original, err = os.ReadFile(rig.tokenizerPath()); err != nil {
		t.Fatal(err)
	}
	return rig
}

func (r *crashRig) tokenizerPath() string {
	return filepath.Join(r.dir, "replicas", "archive", tokenizer)
}

// driver is the rig's router: the weights file, or what useHAProxy set.
func (r *crashRig) driver() router.Driver {
	if r.drv != nil {
		return r.drv
	}
	return &filerouter.Router{Path: r.weights}
}

// useHAProxy puts a real HAProxy (its Runtime API) in the file router's place, at drillBaseline:
// a backend per class, a server per region (no traffic goes through it; the drill's and the
// on-call's executors set its weights).
func (r *crashRig) useHAProxy(t *testing.T) {
	t.Helper()
	if _, err := emulators.HAProxyBinary(); err != nil {
		t.Skipf("haproxy: %v", err)
	}
	var cfg strings.Builder
	cfg.WriteString("defaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n")
	for _, class := range []string{"eu-only", "global"} {
		fmt.Fprintf(&cfg, "\nbackend be_%s\n  balance roundrobin\n", strings.ReplaceAll(class, "-", "_"))
		for _, region := range slices.Sorted(maps.Keys(drillBaseline[class])) {
			fmt.Fprintf(&cfg, "  server %s 127.0.0.1:1 weight %d\n", region, drillBaseline[class][region])
		}
	}
	h := emulators.StartHAProxy(t, cfg.String())
	b, err := os.ReadFile(r.fleet)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "router: {driver: file, path: weights.json}",
		fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu_only, global: be_global}}", h.Socket), 1)
	if err := os.WriteFile(r.fleet, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	fl, err := fleet.Read(r.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if r.drv, err = fleet.OpenRouter(fl); err != nil {
		t.Fatal(err)
	}
	if rs := r.router(t); !rs.Weights.Equal(drillBaseline) {
		t.Fatalf("HAProxy does not start at the drill's baseline: %v", rs.Weights)
	}
}

func (r *crashRig) router(t *testing.T) router.RouterState {
	t.Helper()
	rs, err := r.driver().Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (r *crashRig) cli(t *testing.T, args ...string) result {
	t.Helper()
	return cli(t, r.env, args...)
}

// start runs `lifeboat drill run` in the background; its stderr is collected in a file.
func (r *crashRig) start(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	logf := filepath.Join(t.TempDir(), "drill.stderr")
	f, err := os.Create(logf)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testbed.LifeboatBinary(t), append([]string{"drill", "run", r.drill}, args...)...)
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		f.Close()
	})
	return cmd, logf
}

// waitMidEvacuation waits until the drill has injected its fault (the archive's tokenizer is
// corrupted: killDrill skips the verify step, which would find and repair it, so the fault stays
// for the whole drill) and the evacuation has moved the router off the baseline.
func (r *crashRig) waitMidEvacuation(t *testing.T, cmd *exec.Cmd, logf string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		tok, err := os.ReadFile(r.tokenizerPath())
		if rs, rerr := r.driver().Read(context.Background()); rerr == nil && !rs.Weights.Equal(drillBaseline) && err == nil && !bytes.Equal(tok, r.original) {
			return
		}
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)); bytes.Contains(st, []byte(") Z ")) {
			break // the drill ended before
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(logf)
	t.Fatalf("the drill never got mid-evacuation with its fault injected:\n%s", b)
}

// engineSims are the engine-sim processes started for this rig (their command names its dir).
func (r *crashRig) engineSims() []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		st, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
			continue
		}
		if s := string(b); strings.Contains(s, "engine-sim") && strings.Contains(s, r.dir) {
			out = append(out, strings.ReplaceAll(s, "\x00", " "))
		}
	}
	return out
}

// records reads the drill records of the state store.
func (r *crashRig) records(t *testing.T, open func(ctx context.Context, url string) (providers.Store, error)) []map[string]any {
	t.Helper()
	ctx := context.Background()
	s, err := open(ctx, r.state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []map[string]any
	err = s.List(ctx, "drills/active", func(o providers.Object) error {
		if strings.Count(strings.TrimPrefix(o.Key, "drills/active/"), "/") > 0 {
			return nil
		}
		var b bytes.Buffer
		if err := s.Read(ctx, o.Key, providers.ReadOptions{}, func(rd io.Reader) error { _, err := b.ReadFrom(rd); return err }); err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileStoreOpen(ctx context.Context, url string) (providers.Store, error) {
	return providers.Open(ctx, url, providers.Options{})
}

const crashDrill = `name: crash
fleet: fleet.yaml
lose: eu-west-1
hold: 200ms
lock_ttl: 2s
failback_timeout: 30s
traffic: {requests: 2, interval: 0, max_tokens: 2}
faults:
  - {kind: corrupt-file, region: archive, path: model/tokenizer.json}
`

// killDrill is crashDrill for the rigs that stop the drill mid-evacuation (waitMidEvacuation):
// without the verify step, which hashes the archive (a store with no checksums), finds the
// corrupt tokenizer and repairs it before the evacuation, the planted fault is still there to be
// put back when the drill is killed.
var killDrill = strings.Replace(crashDrill, "hold: 200ms", "hold: 200ms\nskip: [verify]", 1)

// TestDrillKilledMidRunCleanup: a drill killed with SIGKILL after injecting its fault and while
// its evacuation is under way leaves the router failed over and the tokenizer deleted; the next
// drill refuses to start (naming the clean-up); `drill cleanup` returns the router to the
// baseline by a ramped abort, puts the tokenizer back byte for byte, stops the dead drill's
// candidates and closes its record in the state store.
func TestDrillKilledMidRunCleanup(t *testing.T) {
	rig := newCrashRig(t, "", nil, "400ms", killDrill)
	cmd, logf := rig.start(t, "--approve-all")
	rig.waitMidEvacuation(t, cmd, logf)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
	if rig.router(t).Weights.Equal(drillBaseline) {
		t.Fatal("the router is at the baseline right after the kill: the test did not kill mid-evacuation")
	}
	recs := rig.records(t, fileStoreOpen)
	if len(recs) != 1 || recs[0]["closed"] != nil {
		t.Fatalf("want one open drill record in the state store, got %v", recs)
	}
	// the next drill refuses to start over the leftovers, and names the clean-up
	r := rig.cli(t, "drill", "run", rig.drill, "--approve-all")
	if r.code != 3 || !strings.Contains(r.stderr, "lifeboat drill cleanup "+rig.drill) {
		t.Fatalf("a drill over a dead drill's leftovers: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = rig.cli(t, "drill", "cleanup", rig.drill)
	if r.code != 0 {
		t.Fatalf("cleanup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "back at the baseline (abort run") || !strings.Contains(r.stdout, "left behind: nothing") {
		t.Fatalf("cleanup output:\n%s", r.stdout)
	}
	if rs := rig.router(t); !rs.Weights.Equal(drillBaseline) {
		t.Fatalf("the router after the cleanup: %v", router.Diff(router.RouterState{Weights: drillBaseline}, rs))
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer after the cleanup: %v (%d bytes, want %d)", err, len(got), len(rig.original))
	}
	if left := rig.engineSims(); len(left) > 0 {
		t.Fatalf("the dead drill's candidates still run: %v", left)
	}
	recs = rig.records(t, fileStoreOpen)
	if len(recs) != 1 || recs[0]["closed"] == nil || recs[0]["outcome"] != "cleaned up" || len(recs[0]["left"].([]any)) != 0 {
		t.Fatalf("the record after the cleanup: %v", recs)
	}
	// the abort is journaled in the state store: ramped steps, and the failover closed
	st, err := fileStoreOpen(context.Background(), rig.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, jrecs, err := failover.LatestRun(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	v := failover.ViewRun(run, jrecs, time.Now())
	closed := false
	for _, rec := range jrecs {
		closed = closed || (rec.Kind == failover.RecDone && rec.Closed)
	}
	if v.Plan == nil || v.Plan.Event.Kind != failover.Abort || !v.Done || !closed || v.Applied < 1 {
		t.Fatalf("the latest journal run %s after the cleanup: %+v", run, v)
	}
	// nothing left: a second cleanup has nothing to do
	if r := rig.cli(t, "drill", "cleanup", rig.drill); r.code != 0 || !strings.Contains(r.stdout, "nothing to clean up") {
		t.Fatalf("second cleanup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestDrillCleanupLeftBehind: when a fault's original cannot be put back (its copy in the state
// store — versitygw here — is gone), the cleanup still returns the router to the baseline, says
// what it left behind and exits 1, and the closed record lists it.
func TestDrillCleanupLeftBehind(t *testing.T) {
	gw := emulators.SharedVersityGW(t)
	ctx := context.Background()
	if err := gw.Bucket(ctx, "drill-state"); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	state := gw.URL("drill-state", testbed.FreshPrefix("left"))
	open := func(ctx context.Context, url string) (providers.Store, error) {
		return providers.Open(ctx, url, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")})
	}
	rig := newCrashRig(t, state, env, "400ms", killDrill)
	cmd, logf := rig.start(t, "--approve-all")
	rig.waitMidEvacuation(t, cmd, logf)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_, _ = cmd.Process.Wait()
	// the original's copy is lost
	s, err := open(ctx, state)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var copies []string
	_ = s.List(ctx, "drills/active", func(o providers.Object) error {
		if strings.HasSuffix(o.Key, ".orig") {
			copies = append(copies, o.Key)
		}
		return nil
	})
	if len(copies) != 1 {
		t.Fatalf("want the tokenizer's copy in the state store, got %v", copies)
	}
	if err := s.Delete(ctx, copies[0], providers.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := rig.cli(t, "drill", "cleanup", rig.drill)
	if r.code != 1 || !strings.Contains(r.stdout, "left behind: fault corrupt-file archive model/tokenizer.json") {
		t.Fatalf("cleanup with an original that cannot be put back: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rs := rig.router(t); !rs.Weights.Equal(drillBaseline) {
		t.Fatalf("the router after the cleanup: %v", router.Diff(router.RouterState{Weights: drillBaseline}, rs))
	}
	recs := rig.records(t, open)
	if len(recs) != 1 || recs[0]["closed"] == nil || len(recs[0]["left"].([]any)) != 1 {
		t.Fatalf("the record after the cleanup: %v", recs)
	}
	if left := rig.engineSims(); len(left) > 0 {
		t.Fatalf("the dead drill's candidates still run: %v", left)
	}
}

// TestDrillFailsHalfwayRestores: a drill whose evacuation fails halfway (the router stops
// answering after the first ramp step, longer than the drill waits) skips its failback; its
// teardown returns the router to the baseline by a ramped abort and puts the tokenizer back:
// exit 1 for the failed evacuation, nothing left behind.
func TestDrillFailsHalfwayRestores(t *testing.T) {
	drill := strings.Replace(crashDrill, "failback_timeout: 30s", "failback_timeout: 1s", 1) +
		"  - {kind: router-unreachable, duration: 60s, after_step: 1}\n"
	drill = strings.Replace(drill, "lock_ttl: 2s", "lock_ttl: 1s", 1)
	rig := newCrashRig(t, "", nil, "100ms", drill)
	out := filepath.Join(rig.dir, "report")
	r := rig.cli(t, "drill", "run", rig.drill, "--approve-all", "--report", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Steps []struct {
			Name, Status, Detail string
		} `json:"steps"`
		Teardown struct {
			Left             []string `json:"left"`
			FaultsUndone     []string `json:"faults_undone"`
			RouterAtBaseline bool     `json:"router_at_baseline"`
		} `json:"teardown"`
		Runs []string `json:"journal_runs"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	status := map[string]string{}
	for _, s := range rep.Steps {
		status[s.Name] = s.Status + ": " + s.Detail
	}
	if !strings.HasPrefix(status["evacuate"], "failed") || !strings.HasPrefix(status["failback"], "skipped") || !strings.HasPrefix(status["teardown"], "passed") ||
		!strings.Contains(status["teardown"], "back at the baseline (abort run") {
		t.Fatalf("steps: %v", status)
	}
	if len(rep.Teardown.Left) != 0 || !rep.Teardown.RouterAtBaseline || len(rep.Teardown.FaultsUndone) != 1 || len(rep.Runs) < 1 {
		t.Fatalf("teardown %+v, runs %v", rep.Teardown, rep.Runs)
	}
	if rs := rig.router(t); !rs.Weights.Equal(drillBaseline) {
		t.Fatalf("the router after the drill: %v", router.Diff(router.RouterState{Weights: drillBaseline}, rs))
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer after the drill: %v", err)
	}
	recs := rig.records(t, fileStoreOpen)
	if len(recs) != 1 || recs[0]["outcome"] != "torn down" || len(recs[0]["left"].([]any)) != 0 {
		t.Fatalf("the drill record: %v", recs)
	}
}

// TestDrillRefusesOffBaseline: while an open failover run has the router off the fleet's
// baseline, a drill refuses to start (exit 3), naming the run, and changes nothing; with
// --from-current it runs from the router as found and leaves it so.
func TestDrillRefusesOffBaseline(t *testing.T) {
	rig := newCrashRig(t, "", nil, "100ms", `name: quick
fleet: fleet.yaml
lose: eu-west-1
steps: [verify, teardown]
`)
	// another operator's evacuation, journaled and half applied
	ctx := context.Background()
	st, err := fileStoreOpen(ctx, rig.state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run := failover.NewRunID(1, time.Now())
	j := &failover.Journal{Store: st, Run: run, Holder: "oncall@host pid 1", Token: 1}
	moved := router.Weights{"eu-only": {"eu-west-1": 30, "eu-central-1": 70}, "global": {"us-east-1": 60, "eu-west-1": 20, "eu-central-1": 20}}
	if _, err := j.Append(ctx, failover.Record{Kind: failover.RecStart, Event: &failover.Event{Kind: failover.Evacuate, Region: "eu-west-1"}, Reason: "real incident", Baseline: drillBaseline}); err != nil {
		t.Fatal(err)
	}
	if err := (&filerouter.Router{Path: rig.weights}).Apply(ctx, router.RouterState{Weights: moved}); err != nil {
		t.Fatal(err)
	}
	r := rig.cli(t, "drill", "run", rig.drill)
	if r.code != 3 || !strings.Contains(r.stderr, "not at the fleet's baseline") || !strings.Contains(r.stderr, run) || !strings.Contains(r.stderr, "--from-current") {
		t.Fatalf("a drill off the baseline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if recs := rig.records(t, fileStoreOpen); len(recs) != 0 {
		t.Fatalf("a refused drill recorded %v", recs)
	}
	r = rig.cli(t, "drill", "run", rig.drill, "--from-current")
	if r.code != 0 {
		t.Fatalf("--from-current: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if rs := rig.router(t); !rs.Weights.Equal(moved) {
		t.Fatalf("the router after a --from-current drill: %v", router.Diff(router.RouterState{Weights: moved}, rs))
	}
}

// TestDrillApprovalWithoutTerminal: a drill with approval steps, no terminal and no
// --approve-all is a usage error before anything runs: exit 2, nothing in the history, nothing
// recorded, the router untouched.
func TestDrillApprovalWithoutTerminal(t *testing.T) {
	rig := newCrashRig(t, "", nil, "100ms", strings.Replace(crashDrill, "hold: 200ms", "hold: 200ms\napprove: [evacuate]", 1))
	r := rig.cli(t, "drill", "run", rig.drill)
	if r.code != 2 || !strings.Contains(r.stderr, "--approve-all") || !strings.Contains(r.stderr, "evacuate") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	h := rig.cli(t, "drill", "history", "--fleet", rig.fleet)
	if h.code != 0 || !strings.Contains(h.stdout, "No drill has run yet.") {
		t.Fatalf("history after a refused start: exit %d\n%s%s", h.code, h.stdout, h.stderr)
	}
	if recs := rig.records(t, fileStoreOpen); len(recs) != 0 {
		t.Fatalf("records %v", recs)
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer: %v", err)
	}
}

// TestDrillInterrupted: SIGINT during the evacuation stops the drill; its teardown still returns
// the router to the baseline and puts the tokenizer back; it exits 130 and the history records
// the run as INTERRUPTED.
func TestDrillInterrupted(t *testing.T) {
	rig := newCrashRig(t, "", nil, "400ms", killDrill)
	cmd, logf := rig.start(t, "--approve-all")
	rig.waitMidEvacuation(t, cmd, logf)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	b, _ := os.ReadFile(logf)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, b)
	}
	if rs := rig.router(t); !rs.Weights.Equal(drillBaseline) {
		t.Fatalf("the router after an interrupted drill: %v\n%s", router.Diff(router.RouterState{Weights: drillBaseline}, rs), b)
	}
	if got, err := os.ReadFile(rig.tokenizerPath()); err != nil || !bytes.Equal(got, rig.original) {
		t.Fatalf("the tokenizer after an interrupted drill: %v\n%s", err, b)
	}
	h := rig.cli(t, "drill", "history", "--fleet", rig.fleet, "-o", "json")
	var hv struct {
		Runs []struct {
			Verdict string `json:"verdict"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(h.stdout), &hv); err != nil || len(hv.Runs) != 1 || hv.Runs[0].Verdict != "INTERRUPTED" {
		t.Fatalf("history: %v\n%s%s\n%s", err, h.stdout, h.stderr, b)
	}
	if left := rig.engineSims(); len(left) > 0 {
		t.Fatalf("candidates still run: %v", left)
	}
}
