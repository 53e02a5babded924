//go:build integration

package failover

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/internal/testbed"
)

// classPropertyCases is how many random --class / --skip-blocked plans every `go test` run checks.
const classPropertyCases = 20_000

// TestClassPlanProperties: on random fleets, weights, signals and events, with a random --class
// selection and --skip-blocked, no step of a plan ever writes a weight or a state of a class the
// plan does not cover — one outside the selection, or one it left blocked — and those classes end
// exactly where they started; the covered classes are within the selection and disjoint from the
// blocked ones; a plan that left a class blocked is never complete; every step passes every rule
// (checkPlan, re-derived); and a --skip-blocked plan moves its classes all the way.
func TestClassPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 2026))
	counts := map[string]int{}
	for n := 0; n < classPropertyCases; n++ {
		in := randomInput(rng)
		names := slices.Sorted(maps.Keys(in.Classes))
		if rng.IntN(3) > 0 {
			for _, c := range names {
				if rng.IntN(2) == 0 {
					in.Only = append(in.Only, c)
				}
			}
		}
		in.SkipBlocked = rng.IntN(2) == 0
		in.Hint = rng.IntN(4) == 0
		p := MakePlan(in)
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case %d: "+format+"\nevent %v only %v skip %v\nclasses %v\nweights %v\nstates %v\nsignals %s\nplan refused=%v complete=%v rule=%s reason=%s hold=%s covers=%v blocked=%v steps=%d",
				append([]any{n}, append(args, in.Event, in.Only, in.SkipBlocked, in.Classes, in.Weights, in.States, dumpSignals(in.Signals), p.Refused, p.Complete, p.Rule, p.Reason, p.Hold, p.Classes, p.BlockedNames(), len(p.Steps))...)...)
		}
		sel := names
		if len(in.Only) > 0 {
			sel = sortedSet(in.Only)
		}
		covered := func(c string) bool { return p.Covers(c) && !slices.Contains(p.BlockedNames(), c) }
		for _, c := range p.Classes {
			if !slices.Contains(sel, c) {
				fail("covers %s, outside the selection %v", c, sel)
			}
		}
		if (len(in.Only) > 0 || in.SkipBlocked) && !p.Refused && len(p.Classes) == 0 {
			fail("a selected plan says it covers every class")
		}
		if len(p.Blocked) > 0 && p.Complete {
			fail("complete with blocked classes")
		}
		if !in.SkipBlocked && len(p.Blocked) > 0 {
			fail("blocked classes without --skip-blocked")
		}
		if !(p.Refused && in.SkipBlocked) {
			checkPlan(t, in, p) // every step, every rule, re-derived (a refusal had no alternative)
		}
		for k, st := range p.Steps {
			for c := range st.Weights {
				if !covered(c) || !slices.Contains(sel, c) {
					fail("step %d writes weights of %s, a class the plan does not cover", k+1, c)
				}
			}
			for c := range st.States {
				if !covered(c) || !slices.Contains(sel, c) {
					fail("step %d writes states of %s, a class the plan does not cover", k+1, c)
				}
			}
		}
		for c := range in.Classes {
			if covered(c) && slices.Contains(sel, c) {
				continue
			}
			for _, r := range in.Classes[c] {
				if a, b := in.Weights[c][r], p.Final.Weights[c][r]; a != b {
					fail("%s/%s (not covered) ends at weight %d, started at %d", c, r, b, a)
				}
				if a, b := in.States.Get(c, r), p.Final.States.Get(c, r); a != b {
					fail("%s/%s (not covered) ends %s, started %s", c, r, b, a)
				}
			}
		}
		if in.SkipBlocked && !p.Refused && (p.Hold != "" || len(p.Shed) > 0) {
			fail("a --skip-blocked plan stops short within a class it covers")
		}
		switch {
		case p.Refused:
			counts["refused"]++
		case len(p.Blocked) > 0 && len(p.Steps) > 0:
			counts["partial with steps"]++
		case len(in.Only) > 0 && len(p.Steps) > 0:
			counts["--class with steps"]++
		}
		if len(p.CouldMove) > 0 {
			counts["could move"]++
		}
	}
	t.Logf("%d cases: %v", classPropertyCases, counts)
	for _, k := range []string{"partial with steps", "--class with steps", "refused", "could move"} {
		if counts[k] == 0 {
			t.Errorf("the generator never produced %q: the property test is not exercising it", k)
		}
	}
}

// A --skip-blocked run through the http driver against a custom L7 router's control API (real
// processes of the binary, a real HTTP server): with eu-central-1 cold, eu-only is blocked by
// residency and global moves; no write of the run ever touches the eu-only document, and another
// operator's edit of eu-only between the run's steps neither holds the run (it is not the run's
// class) nor is overwritten.
func TestSkipBlockedRunHTTPRouterWritesCoveredClassesOnly(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, _ := binDir(t, d.fleetLine(), "step_interval: 100ms, lock_ttl: 5s")
	cold := strings.Replace(binSignals, `"eu-central-1": {"warm": true`, `"eu-central-1": {"warm": false`, 1)
	if err := os.WriteFile(filepath.Join(dir, "cold.json"), []byte(cold), 0o644); err != nil {
		t.Fatal(err)
	}
	edit := map[string]int{"eu-west-1": 45, "eu-central-1": 55}
	var once sync.Once
	d.setHook(func(r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/global") {
			once.Do(func() { go func() { time.Sleep(20 * time.Millisecond); d.edit("eu-only", edit) }() })
		}
	})
	a := startLB(t, dir, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "cold.json", "--skip-blocked", "--yes", "--reason", "partial")
	if code := a.wait(t, time.Minute); code != 3 || !strings.Contains(a.stdout.String(), "VERDICT: PARTIAL, held for safety (residency)") {
		t.Fatalf("partial run: exit %d\n%s\n%s", code, a.stdout, a.stderr)
	}
	for _, w := range d.log() {
		if strings.HasPrefix(w, "eu-only ") && !strings.Contains(w, "edit by another operator") {
			t.Fatalf("the run wrote the blocked class: %s\n%s", w, strings.Join(d.log(), "\n"))
		}
	}
	if got := d.doc("eu-only"); got.Weights["eu-west-1"] != 45 || got.Weights["eu-central-1"] != 55 {
		t.Fatalf("the other operator's edit of eu-only was overwritten: %+v", got)
	}
	// the http driver cuts a region off by leaving it out of the document
	if got := d.doc("global"); got.Weights["us-east-1"] != 100 || got.Weights["eu-west-1"] != 0 || got.States["eu-west-1"] == router.Ready {
		t.Fatalf("global after the partial run: %+v\n%s", got, strings.Join(d.log(), "\n"))
	}
}

// A --skip-blocked run interrupted after its first step (Ctrl-C) and resumed by a new executor
// carries on for the classes it covered only: another operator's edit of the blocked class in
// between neither holds the resume as drift nor is written over, and the run ends held for
// safety (ErrIncomplete) with the covered class at its target.
func TestResumeOfAPartialRunTouchesItsClassesOnly(t *testing.T) {
	r := newRig(t, "", nil)
	r.sig.Regions["eu-central-1"] = RegionSignal{Warm: false, Healthy: true, QueueWaitMS: fptr(10), Running: iptr(0), Why: "cold"}
	ctx, cancel := context.WithCancel(testbed.Ctx(t))
	defer cancel()
	e := r.executor()
	e.AfterApply = func(step int) {
		if step == 0 {
			cancel() // interrupted after the first change was applied
		}
	}
	o := evacuate("eu-west-1")
	o.SkipBlocked = true
	out, err := e.Run(ctx, o)
	if err == nil || out == nil || out.Plan == nil || !slices.Equal(out.Plan.Classes, []string{"global"}) || !slices.Equal(out.Plan.BlockedNames(), []string{"eu-only"}) {
		t.Fatalf("interrupted partial run: %v %+v", err, out)
	}
	// someone moves the blocked class by hand while the run is interrupted
	cur, _ := r.router.Read(testbed.Ctx(t))
	edit := cur.Clone()
	edit.Weights["eu-only"] = map[string]int{"eu-west-1": 70, "eu-central-1": 30}
	if err := r.router.Apply(testbed.Ctx(t), edit); err != nil {
		t.Fatal(err)
	}
	st, err := r.executor().Status(testbed.Ctx(t))
	if err != nil || len(st.Drift) != 0 {
		t.Fatalf("status of the interrupted run reports the untouched class as drift: %v %v", err, st.Drift)
	}
	res, err := r.executor().Resume(testbed.Ctx(t), RunOptions{Reason: "resume"})
	if !errors.Is(err, ErrIncomplete) || res == nil {
		t.Fatalf("resume of a partial run: %v %+v", err, res)
	}
	got, _ := r.router.Read(testbed.Ctx(t))
	if w := got.Weights["eu-only"]; w["eu-west-1"] != 70 || w["eu-central-1"] != 30 {
		t.Fatalf("resume wrote the class the run did not cover: eu-only %v", w)
	}
	if got.Weights["global"]["eu-west-1"] != 0 || got.States.Get("global", "eu-west-1") != router.Maint {
		t.Fatalf("resume did not finish global: %v %v", got.Weights["global"], got.States["global"])
	}
	checkJournal(t, r.store, out.Plan)
}
