//go:build integration

package failover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

func TestMain(m *testing.M) {
	if os.Getenv("LIFEBOAT_FAILOVER_CHILD") != "" {
		os.Exit(childRun())
	}
	os.Exit(testbed.Main(m))
}

// testFleetYAML is a five-region fleet with an EU-only and a global class on the file driver.
func testFleetYAML(routerPath, state string) string {
	return fmt.Sprintf(`model: {name: llama-demo, manifest: m.json}
regions:
  us-east-1: {replica: ./r, capacity: {replicas: 6, prefill_tokens_per_s: 8000}}
  us-west-2: {replica: ./r, capacity: {replicas: 2, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  ap-southeast-1: {replica: ./r, capacity: {replicas: 3, prefill_tokens_per_s: 8000}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, us-west-2, eu-west-1, ap-southeast-1]
router: {driver: file, path: %q}
failover:
  step_percent: 25
  step_interval: 10ms
  spill_cap_percent: 60
  drain_timeout: 1s
state: %q
`, routerPath, state)
}

var startWeights = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "us-west-2": 10, "eu-west-1": 30, "ap-southeast-1": 20},
}, States: router.States{}}

func calmSignals(f *fleet.Fleet) map[string]RegionSignal {
	out := map[string]RegionSignal{}
	for name, r := range f.Regions {
		out[name] = RegionSignal{Warm: true, Healthy: true, QueueWaitMS: fptr(10), Running: iptr(0), PrefillTokensPerS: fptr(r.PrefillCapacity() / 5)}
	}
	return out
}

type rig struct {
	dir    string
	fleet  *fleet.Fleet
	router *filerouter.Router
	store  providers.Store
	sig    *StaticSignals
}

func newRig(t testing.TB, state string, store providers.Store) *rig {
	t.Helper()
	dir := t.TempDir()
	if state == "" {
		state = "file://" + filepath.Join(dir, "state")
		os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	}
	path := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(path, []byte(testFleetYAML(filepath.Join(dir, "weights.json"), state)), 0o644)
	data, _ := os.ReadFile(path)
	f, err := fleet.Parse(data, path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, fleet: f, router: &filerouter.Router{Path: f.Router.Config.(*filerouter.Config).Path}}
	if err := r.router.Apply(context.Background(), startWeights); err != nil {
		t.Fatal(err)
	}
	r.store = store
	if store == nil {
		r.store = testbed.OpenStore(t, f.State, testbed.StoreOptions())
	}
	r.sig = &StaticSignals{Regions: calmSignals(f)}
	return r
}

func (r *rig) executor() *Executor {
	return &Executor{Fleet: r.fleet, Store: r.store, Router: r.router, Signals: r.sig, Holder: "test", LockTTL: 5 * time.Second}
}

func evacuate(region string) RunOptions {
	return RunOptions{Event: Event{Kind: Evacuate, Region: region}, Reason: "test"}
}

func TestRunEvacuateFileRouter(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	out, err := r.executor().Run(ctx, evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := r.router.Read(ctx)
	if len(router.Diff(out.Plan.Final, got)) > 0 || got.Weights["eu-only"]["eu-central-1"] != 100 || got.States.Get("global", "eu-west-1") != router.Maint {
		t.Fatalf("router %+v, plan final %+v", got, out.Plan.Final)
	}
	checkJournal(t, r.store, out.Plan)
	st, err := r.executor().Status(ctx)
	if err != nil || len(st.Drift) != 0 || !st.Done {
		t.Fatalf("status %v %+v", err, st.RunView)
	}
	// drift: someone edits the router behind the journal's back
	edit := got.Clone()
	edit.Weights["global"]["us-east-1"]--
	edit.Weights["global"]["us-west-2"]++
	r.router.Apply(ctx, edit)
	st, err = r.executor().Status(ctx)
	if err != nil || len(st.Drift) != 2 {
		t.Fatalf("drift not seen: %v %v", err, st.Drift)
	}
}

// checkJournal: start, then per step an intent before exactly one result, each carrying the
// fencing token, then done.
func checkJournal(t *testing.T, s providers.Store, plan *Plan) {
	t.Helper()
	ctx := testbed.Ctx(t)
	run, recs, err := latestStarted(ctx, s)
	if err != nil || run == "" {
		t.Fatalf("journal: %v", err)
	}
	v := ViewRun(run, recs, time.Now())
	if !v.Done {
		t.Errorf("run not done: last %s", v.Last.Kind)
	}
	counts := v.ResultCounts()
	for k := range plan.Steps {
		if counts[k] != 1 {
			t.Errorf("step %d has %d results (want exactly 1): %v", k, counts[k], counts)
		}
	}
	intentSeen := map[int]bool{}
	for _, rec := range recs {
		if rec.Token <= 0 {
			t.Errorf("record %d without a fencing token", rec.Seq)
		}
		switch rec.Kind {
		case RecIntent:
			intentSeen[*rec.Step] = true
		case RecResult:
			if !intentSeen[*rec.Step] {
				t.Errorf("result of step %d before its intent", *rec.Step)
			}
		}
	}
}

func TestRefusedPlanChangesNothing(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	sig := calmSignals(r.fleet)
	sig["eu-central-1"] = RegionSignal{Healthy: true, Why: "LOADING"}
	r.sig.Regions = sig
	v0, _ := r.router.Version()
	_, err := r.executor().Run(ctx, evacuate("eu-west-1"))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "eu-only") {
		t.Fatalf("want a refusal naming eu-only, got %v", err)
	}
	if v1, _ := r.router.Version(); v1 != v0 {
		t.Fatalf("router version %d → %d on a refused plan", v0, v1)
	}
	if lk, _, _ := (&Locker{Store: r.store}).Read(ctx); !lk.Released {
		t.Fatal("lock not released after a refusal")
	}
}

func TestLockHeldAndUnlock(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	lk, err := (&Locker{Store: r.store, TTL: time.Hour}).Acquire(ctx, "alice@host pid 1", "failover evacuate us-east-1", "drill")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.executor().Run(ctx, evacuate("eu-west-1"))
	var held *LockHeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "alice@host pid 1") || !strings.Contains(err.Error(), lk.ID) {
		t.Fatalf("want the holder named, got %v", err)
	}
	if _, err := r.executor().Unlock(ctx, "wrong", "x"); err == nil {
		t.Fatal("unlock with the wrong id succeeded")
	}
	if _, err := r.executor().Unlock(ctx, lk.ID, "alice's laptop died"); err != nil {
		t.Fatal(err)
	}
	if err := (&Locker{Store: r.store}).Check(ctx, lk); !errors.Is(err, ErrLockLost) {
		t.Fatalf("the broken holder still passes the fence: %v", err)
	}
	out, err := r.executor().Run(ctx, evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	run, recs, _ := latestStarted(ctx, r.store)
	if recs[0].Token != lk.Token+1 {
		t.Errorf("fencing token %d after %d", recs[0].Token, lk.Token)
	}
	_ = run
	_ = out
}

// The lock and journal on every provider: exclusive create, held, expired take-over with a
// higher token, release; a full run and a resume with the state there.
func TestLockAndJournalOnEveryStore(t *testing.T) {
	for _, b := range testbed.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := testbed.Ctx(t)
			store := b.Open(t, testbed.FreshPrefix("failover"), nil)
			l := &Locker{Store: store, TTL: 300 * time.Millisecond}
			a, err := l.Acquire(ctx, "a", "op", "r")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Acquire(ctx, "b", "op", "r"); !errors.As(err, new(*LockHeldError)) {
				t.Fatalf("second acquire: %v", err)
			}
			if err := l.Renew(ctx, a); err != nil {
				t.Fatal(err)
			}
			// a stops renewing: a taker that watches its record unchanged for the TTL takes over
			c, err := (&Locker{Store: store, TTL: 300 * time.Millisecond, Wait: true}).Acquire(ctx, "c", "op", "r")
			if err != nil || c.Token != a.Token+1 {
				t.Fatalf("take-over of an expired lock: %v %+v", err, c)
			}
			if err := l.Renew(ctx, a); !errors.Is(err, ErrLockLost) {
				t.Fatalf("the old holder renewed: %v", err)
			}
			if err := l.Release(ctx, c); err != nil {
				t.Fatal(err)
			}
			j := &Journal{Store: store, Run: "r1", Token: c.Token}
			if _, err := j.Append(ctx, Record{Kind: RecStart}); err != nil {
				t.Fatal(err)
			}
			stale := &Journal{Store: store, Run: "r1", Token: a.Token}
			if _, err := stale.Append(ctx, Record{Kind: RecIntent}); !errors.Is(err, ErrLockLost) {
				t.Fatalf("a second writer of record 0: %v", err)
			}
			store2 := b.Open(t, testbed.FreshPrefix("failover-run"), nil)
			r := newRig(t, "", store2)
			// interrupt the run after its second step (the process-kill version is below)
			stop := 0
			rctx, cancel := context.WithCancel(ctx)
			e := r.executor()
			e.OnRecord = func(rec Record) {
				if rec.Kind == RecResult {
					if stop++; stop == 2 {
						cancel()
					}
				}
			}
			if _, err := e.Run(rctx, evacuate("eu-west-1")); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run: %v", err)
			}
			out, err := r.executor().Resume(ctx, RunOptions{Reason: "resume"})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := r.router.Read(ctx)
			if d := router.Diff(out.Plan.Final, got); len(d) > 0 {
				t.Fatalf("resume did not converge: %v", d)
			}
			checkJournal(t, store2, out.Plan)
		})
	}
}

// childRun is the orchestrator process of the crash and concurrency tests.
func childRun() int {
	fleetPath := os.Getenv("LIFEBOAT_FAILOVER_FLEET")
	data, err := os.ReadFile(fleetPath)
	if err != nil {
		return 2
	}
	f, err := fleet.Parse(data, fleetPath)
	if err != nil {
		return 2
	}
	ctx := context.Background()
	store, err := providers.Open(ctx, f.State, providers.Options{})
	if err != nil {
		return 4
	}
	e := &Executor{Fleet: f, Store: store, Router: &filerouter.Router{Path: f.Router.Config.(*filerouter.Config).Path}, Signals: &StaticSignals{Regions: calmSignals(f)}, LockTTL: 2 * time.Second}
	if n, err := strconv.Atoi(os.Getenv("LIFEBOAT_FAILOVER_CRASH_AT")); err == nil {
		marker := os.Getenv("LIFEBOAT_FAILOVER_MARKER")
		e.OnRecord = func(rec Record) {
			if rec.Seq == n {
				os.WriteFile(marker, []byte(rec.Kind), 0o644)
				time.Sleep(time.Hour) // the parent SIGKILLs us here
			}
		}
	}
	if n, err := strconv.Atoi(os.Getenv("LIFEBOAT_FAILOVER_CRASH_APPLIED")); err == nil {
		marker := os.Getenv("LIFEBOAT_FAILOVER_MARKER")
		e.AfterApply = func(step int) {
			if step == n {
				os.WriteFile(marker, []byte("applied, not journaled"), 0o644)
				time.Sleep(time.Hour)
			}
		}
	}
	if hold := os.Getenv("LIFEBOAT_FAILOVER_HOLD_UNTIL"); hold != "" {
		// Keep the lock (the run is between steps) until the parent says every rival has tried.
		after := e.AfterApply
		e.AfterApply = func(step int) {
			if after != nil {
				after(step)
			}
			for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(hold); err == nil {
					return
				}
			}
		}
	}
	var runErr error
	if os.Getenv("LIFEBOAT_FAILOVER_CHILD") == "resume" {
		_, runErr = e.Resume(ctx, RunOptions{Reason: "resume"})
	} else {
		_, runErr = e.Run(ctx, evacuate("eu-west-1"))
	}
	var held *LockHeldError
	switch {
	case runErr == nil:
		return 0
	case errors.As(runErr, &held):
		return 3
	}
	fmt.Fprintln(os.Stderr, runErr)
	return 1
}

func child(t *testing.T, mode, fleetPath string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIFEBOAT_FAILOVER_CHILD="+mode, "LIFEBOAT_FAILOVER_FLEET="+fleetPath)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// SIGKILL the orchestrator right after each journal record in turn; a resume (after the dead
// holder's lock expires) always converges to the plan's final state with every step applied
// exactly once.
func TestCrashAtEveryJournalPoint(t *testing.T) {
	ref := newRig(t, "", nil)
	plan, err := ref.executor().Run(testbed.Ctx(t), evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ := latestStarted(testbed.Ctx(t), ref.store)
	t.Logf("%d journal records, %d steps", len(recs), len(plan.Plan.Steps))
	var points []string
	for n := 0; n < len(recs)-1; n++ {
		points = append(points, fmt.Sprintf("LIFEBOAT_FAILOVER_CRASH_AT=%d", n))
	}
	for k := range plan.Plan.Steps {
		points = append(points, fmt.Sprintf("LIFEBOAT_FAILOVER_CRASH_APPLIED=%d", k))
	}
	for _, point := range points {
		t.Run(strings.TrimPrefix(point, "LIFEBOAT_FAILOVER_"), func(t *testing.T) {
			t.Parallel() // each waits out the dead holder's lock
			r := newRig(t, "", nil)
			fleetPath := filepath.Join(r.dir, "fleet.yaml")
			marker := filepath.Join(r.dir, "marker")
			cmd := child(t, "run", fleetPath, point, "LIFEBOAT_FAILOVER_MARKER="+marker)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the child never reached the journal point")
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			kind, _ := os.ReadFile(marker)
			// the dead holder's lock runs out (TTL 2s), then resume takes over
			var res *exec.Cmd
			for try := 0; ; try++ {
				res = child(t, "resume", fleetPath)
				err := res.Run()
				if err == nil {
					break
				}
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || try > 40 {
					t.Fatalf("resume after a kill at %s (%s): %v", point, kind, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			got, _ := r.router.Read(testbed.Ctx(t))
			if d := router.Diff(plan.Plan.Final, got); len(d) > 0 {
				t.Fatalf("killed at %s (%s): resume did not converge: %v", point, kind, d)
			}
			checkJournal(t, r.store, plan.Plan)
		})
	}
}

// Eight orchestrators at once on one state store: exactly one proceeds, the others exit 3.
func TestEightConcurrentRuns(t *testing.T) {
	r := newRig(t, "", nil)
	fleetPath := filepath.Join(r.dir, "fleet.yaml")
	// The winner holds its lock after its first step until the other seven have exited, so
	// that all eight really overlap however slowly the machine starts them.
	release := filepath.Join(r.dir, "release")
	exits := make(chan int, 8)
	for range 8 {
		c := child(t, "run", fleetPath, "LIFEBOAT_FAILOVER_HOLD_UNTIL="+release)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := c.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			exits <- code
		}()
	}
	codes := map[int]int{}
	for range 7 {
		select {
		case code := <-exits:
			codes[code]++
		case <-time.After(3 * time.Minute): // a second winner would hold on too
		}
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for exited(codes) < 8 {
		codes[<-exits]++
	}
	if codes[0] != 1 || codes[3] != 7 {
		t.Fatalf("exit codes %v: want one 0 and seven 3", codes)
	}
	runs, _ := Runs(testbed.Ctx(t), r.store)
	if len(runs) != 1 {
		t.Fatalf("%d runs journaled, want 1", len(runs))
	}
}

func exited(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Evacuate, then fail back: restore waits for the dwell, then returns to the baseline ramped;
// the failover is closed. Abort of a second evacuation returns to the baseline too.
func TestRestoreAndAbort(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	if _, err := r.executor().Run(ctx, evacuate("eu-west-1")); err != nil {
		t.Fatal(err)
	}
	// not calm yet: the restore holds (refused now, exit 3) and changes nothing
	v0, _ := r.router.Version()
	_, err := r.executor().Run(ctx, RunOptions{Event: Event{Kind: Restore, Region: "eu-west-1"}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "failback_dwell") {
		t.Fatalf("restore before the dwell: %v", err)
	}
	if v1, _ := r.router.Version(); v1 != v0 {
		t.Fatal("a held restore changed the router")
	}
	calm := calmSignals(r.fleet)
	for name, s := range calm {
		s.CalmSeconds = fptr(3600)
		calm[name] = s
	}
	r.sig.Regions = calm
	out, err := r.executor().Run(ctx, RunOptions{Event: Event{Kind: Restore, Region: "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := r.router.Read(ctx)
	if !got.Weights.Equal(startWeights.Weights) || got.States.Get("eu-only", "eu-west-1") != router.Ready {
		t.Fatalf("restore did not return to the baseline: %+v", got)
	}
	for k, st := range out.Plan.Steps {
		for c, vec := range st.Weights {
			moved := 0
			prev := out.Plan.After(k - 1).Weights[c]
			for reg, v := range vec {
				moved += max(0, v-prev[reg])
			}
			if lim := max(1, 100*r.fleet.Failover.StepPercent/100); moved > lim {
				t.Errorf("restore step %d moves %d of class %s", k+1, moved, c)
			}
		}
	}
	_, recs, _ := latestStarted(ctx, r.store)
	if last := recs[len(recs)-1]; last.Kind != RecDone || !last.Closed {
		t.Fatalf("the failover is not closed: %+v", last)
	}
	// abort: evacuate again, then abort ramped back to the baseline
	if _, err := r.executor().Run(ctx, evacuate("eu-central-1")); err != nil {
		t.Fatal(err)
	}
	ab, err := r.executor().Run(ctx, RunOptions{Event: Event{Kind: Abort}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = r.router.Read(ctx)
	if !got.Weights.Equal(startWeights.Weights) || len(ab.Plan.Steps) < 2 {
		t.Fatalf("abort: %d steps, router %+v", len(ab.Plan.Steps), got)
	}
	// nothing open any more: abort and restore are refused
	if _, err := r.executor().Run(ctx, RunOptions{Event: Event{Kind: Abort}}); !errors.Is(err, ErrRefused) {
		t.Fatalf("abort with no failover open: %v", err)
	}
}

// --rollback-on-fail: a receiver that stops being warm between steps makes the run step back
// to the baseline instead of holding where it is.
func TestRollbackOnFail(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	calls := 0
	r.sig.Func = func(preflight bool) map[string]RegionSignal {
		calls++
		s := calmSignals(r.fleet)
		if !preflight && calls > 1 {
			// eu-central-1's queue explodes after the first step
			c := s["eu-central-1"]
			c.QueueWaitMS = fptr(5000)
			s["eu-central-1"] = c
		}
		return s
	}
	o := evacuate("eu-west-1")
	o.RollbackOnFail = true
	out, err := r.executor().Run(ctx, o)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("want a rollback, got %v", err)
	}
	got, _ := r.router.Read(ctx)
	// eu-central-1 may not take load, so the rollback moves the eu-only share back to eu-west-1
	if got.Weights["eu-only"]["eu-west-1"] != 50 || got.Weights["eu-only"]["eu-central-1"] != 50 {
		t.Fatalf("after the rollback %v (plan %+v)", got.Weights, out.Plan.Event)
	}
	_, recs, _ := latestStarted(ctx, r.store)
	kinds := []string{}
	for _, rec := range recs {
		kinds = append(kinds, rec.Kind)
	}
	if !strings.Contains(strings.Join(kinds, ","), "hold,rollback") {
		t.Fatalf("journal %v", kinds)
	}
}

// An override is journaled; an expired failover is not resumed and status says so.
func TestOverrideJournaledAndExpiry(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	o := evacuate("eu-west-1")
	o.Overrides = []Rule{RuleStep}
	o.Reason = "capacity test"
	cancelAt := 0
	rctx, cancel := context.WithCancel(ctx)
	e := r.executor()
	e.OnRecord = func(rec Record) {
		if rec.Kind == RecResult {
			cancelAt++
			cancel() // stop after the first step: a run left open
		}
	}
	out, _ := e.Run(rctx, o)
	if len(out.Plan.Steps) != 2 { // step_percent overridden: everything in one step, then the withdraw
		t.Fatalf("%d steps with step_percent overridden", len(out.Plan.Steps))
	}
	_, recs, _ := latestStarted(ctx, r.store)
	found := false
	for _, rec := range recs {
		found = found || (rec.Kind == RecOverride && strings.Contains(rec.Detail, "step_percent") && rec.Reason == "capacity test")
	}
	if !found {
		t.Fatal("the override is not in the journal")
	}
	later := r.executor()
	later.Now = func() time.Time { return time.Now().Add(r.fleet.Failover.Expires + time.Hour) }
	if _, err := later.Resume(ctx, RunOptions{}); !errors.Is(err, ErrExpired) {
		t.Fatalf("resume of an expired failover: %v", err)
	}
	st, err := later.Status(ctx)
	if err != nil || !st.Expired {
		t.Fatalf("status of an expired failover: %v %+v", err, st.RunView)
	}
}

// The lock is renewed while a run lasts longer than its TTL (and the renewal shares nothing
// unguarded with the run: this test is meant for -race).
func TestLockRenewedDuringRun(t *testing.T) {
	r := newRig(t, "", nil)
	ctx := testbed.Ctx(t)
	r.fleet.Failover.StepInterval = time.Second
	e := r.executor()
	// renewed every 500 ms; the run takes ≥ 2 s. Wide margins: under -race beside the whole
	// suite (load 18 on 2 cores), a 240 ms lease once ran out between two renewals.
	e.LockTTL = 1500 * time.Millisecond
	var expiries []time.Time
	e.OnRecord = func(rec Record) {
		if lk, ok, _ := (&Locker{Store: r.store}).Read(ctx); ok && !lk.Released {
			expiries = append(expiries, lk.Expires)
		}
	}
	if _, err := e.Run(ctx, evacuate("eu-west-1")); err != nil {
		t.Fatalf("a run longer than the lock TTL: %v", err)
	}
	if len(expiries) < 2 || !expiries[len(expiries)-1].After(expiries[0]) {
		t.Fatalf("the lock was not renewed: %v", expiries)
	}
}
