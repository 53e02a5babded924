package routertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"lifeboat/fleet/router"
)

// Harness is what a driver package gives the suite. Every optional part is either given or
// declined with a reason in Skip (keyed by the subtest's name): the subtest is then skipped,
// naming the driver and the reason, never silently.
type Harness struct {
	// Name names the driver in skips and failures ("haproxy").
	Name string
	// Open starts (or resets) a real router for one subtest and returns a driver on it. Each
	// subtest calls it once and owns what it returns.
	Open func(t *testing.T) Setup
	// Unreachable returns a driver configured like Open's but whose router does not answer
	// (stopped, or a closed port or a missing socket). Nil needs Skip["unreachable"].
	Unreachable func(t *testing.T) router.Driver
	// Stalled returns a driver whose router accepts the connection and never answers. Nil needs
	// Skip["stalled"].
	Stalled func(t *testing.T) router.Driver
	// Skip gives, per subtest name, why the driver cannot take it.
	Skip map[string]string
}

// Setup is one subtest's router.
type Setup struct {
	Driver router.Driver
	// State is a state valid for Driver: every class it manages, with at least two regions of
	// one class that can each take traffic. The suite writes variations of it (its weights
	// replaced by multiples of 5, at most Driver.MaxWeight).
	State router.RouterState
	// Classes is each class's eligible regions, as the driver was configured.
	Classes map[string][]string
	// Tamper changes the router behind the driver's back, as another writer would (another
	// admin's edit): it sets at least one weight of a class in State to a value that is not a
	// multiple of 5, so it differs from anything the suite wrote.
	Tamper func(t *testing.T)
	// BreakTopology edits the router so that a region outside a class's eligible list can receive
	// that class's traffic. The driver must then refuse to read it (ErrRouterTopology) or read
	// the region with its weight, so that router.CheckTopology refuses it. Nil needs
	// Skip["topology"].
	BreakTopology func(t *testing.T)
}

// Bounds of the liveness subtests: the context's deadline, and the slack beyond it within which
// a call must have returned (it is checked by waiting for the call, not by timing it).
const (
	callDeadline = 2 * time.Second
	returnSlack  = 30 * time.Second
)

// Run runs the suite on h: every subtest opens its own router.
func Run(t *testing.T, h Harness) {
	if h.Name == "" || h.Open == nil {
		t.Fatal("routertest: a Harness needs Name and Open")
	}
	cases := []struct {
		name string
		fn   func(*testing.T, Harness)
		has  bool
	}{
		{"apply-read-back", applyReadBack, true},
		{"conditional-write", conditionalWrite, true},
		{"stale-version", staleVersion, true},
		{"fence-refusal", fenceRefusal, true},
		{"drain-before-withdraw", drainBeforeWithdraw, true},
		{"topology", topology, true},
		{"unreachable", unreachable, h.Unreachable != nil},
		{"stalled", stalled, h.Stalled != nil},
		{"idempotent", idempotent, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := h.Skip[c.name]; ok {
				if why == "" {
					t.Fatalf("%s: Skip[%q] gives no reason", h.Name, c.name)
				}
				t.Skipf("%s driver: %s", h.Name, why)
			}
			if !c.has {
				t.Fatalf("%s: the harness neither supports %q nor says why not in Skip", h.Name, c.name)
			}
			c.fn(t, h)
		})
	}
}

// ctx is a context that ends with the test (or after a minute).
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// diff is router.Diff, where weight 0 and drain read the same on a ZeroDrainDriver.
func diff(d router.Driver, want, got router.RouterState) []string {
	if router.ZeroWeightIsDrain(d) {
		want, got = router.NormalizeZeroDrain(want), router.NormalizeZeroDrain(got)
	}
	return router.Diff(want, got)
}

// pick is the class and two of its regions the suite moves: the first class (sorted) with two
// regions that take traffic in s.State.
func pick(t *testing.T, h Harness, s Setup) (class, x, y string) {
	t.Helper()
	for _, c := range slices.Sorted(maps.Keys(s.State.Weights)) {
		var live []string
		for _, r := range slices.Sorted(maps.Keys(s.State.Weights[c])) {
			if s.State.Weights[c][r] > 0 && s.State.States.Get(c, r) == router.Ready {
				live = append(live, r)
			}
		}
		if len(live) >= 2 {
			return c, live[len(live)-1], live[0]
		}
	}
	t.Fatalf("%s: Setup.State has no class with two regions taking traffic: %+v", h.Name, s.State)
	return
}

// variant is s.State with every ready region of every class at a weight that is a multiple of 5
// and depends on k, all regions ready but those State holds otherwise.
func variant(s Setup, k int) router.RouterState {
	out := s.State.Clone()
	if out.States == nil {
		out.States = router.States{}
	}
	top := s.Driver.MaxWeight()
	for _, c := range slices.Sorted(maps.Keys(out.Weights)) {
		for i, r := range slices.Sorted(maps.Keys(out.Weights[c])) {
			if out.States.Get(c, r) != router.Ready {
				continue
			}
			w := 5 * (1 + (i+k)%7) // 5..35
			if top > 0 && w > top {
				w = top
			}
			out.Weights[c][r] = w
		}
	}
	return out
}

func open(t *testing.T, h Harness) Setup {
	t.Helper()
	s := h.Open(t)
	if s.Driver == nil {
		t.Fatalf("%s: Open returned no driver", h.Name)
	}
	return s
}

func mustRead(t *testing.T, d router.Driver) router.RouterState {
	t.Helper()
	rs, err := d.Read(ctx(t))
	if err != nil {
		t.Fatalf("%s: read: %v", d, err)
	}
	return rs
}

func mustApply(t *testing.T, d router.Driver, want router.RouterState) {
	t.Helper()
	if err := d.Apply(ctx(t), want); err != nil {
		t.Fatalf("%s: apply %s: %v", d, want.Weights.Text(), err)
	}
}

func wantState(t *testing.T, d router.Driver, what string, want router.RouterState) router.RouterState {
	t.Helper()
	got := mustRead(t, d)
	if df := diff(d, want, got); len(df) > 0 {
		t.Fatalf("%s: %s: read back differs from what was written: %v", d, what, df)
	}
	return got
}

// Read returns exactly what Apply wrote, and ReadVersion reads the same.
func applyReadBack(t *testing.T, h Harness) {
	s := open(t, h)
	d := s.Driver
	wantState(t, d, "the starting state", s.State)
	for k := 1; k <= 2; k++ {
		want := variant(s, k)
		mustApply(t, d, want)
		wantState(t, d, fmt.Sprintf("after apply %d", k), want)
		rs, v, err := router.ReadVersion(ctx(t), d)
		if err != nil {
			t.Fatalf("%s: read version: %v", d, err)
		}
		if df := diff(d, want, rs); len(df) > 0 {
			t.Fatalf("%s: ReadVersion differs from Read: %v", d, df)
		}
		for c := range want.Weights {
			if v[c] == "" {
				t.Fatalf("%s: ReadVersion gave class %s no version: %v", d, c, v)
			}
		}
	}
}

// ReadVersion, another writer's edit, ApplyIf: a conflict, and the router keeps the other
// writer's state.
func conditionalWrite(t *testing.T, h Harness) {
	s := open(t, h)
	if s.Tamper == nil {
		t.Fatalf("%s: Setup.Tamper is required", h.Name)
	}
	d := s.Driver
	a := variant(s, 1)
	mustApply(t, d, a)
	_, v, err := router.ReadVersion(ctx(t), d)
	if err != nil {
		t.Fatalf("%s: read version: %v", d, err)
	}
	s.Tamper(t)
	tampered := mustRead(t, d)
	if len(diff(d, a, tampered)) == 0 {
		t.Fatalf("%s: Tamper changed nothing the driver reads (harness bug)", h.Name)
	}
	err = router.ApplyIf(ctx(t), d, variant(s, 2), v, nil)
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("%s: ApplyIf after another writer's edit: %v, want ErrRouterConflict", d, err)
	}
	t.Logf("conflict: %v", err)
	if got := mustRead(t, d); len(diff(d, tampered, got)) > 0 {
		t.Fatalf("%s: the refused write overwrote the other writer's edit: %v", d, diff(d, tampered, got))
	}
}

// ApplyIf with a version from before this run's own later write is refused too: a holder whose
// version is stale never writes.
func staleVersion(t *testing.T, h Harness) {
	s := open(t, h)
	d := s.Driver
	_, v1, err := router.ReadVersion(ctx(t), d)
	if err != nil {
		t.Fatalf("%s: read version: %v", d, err)
	}
	a := variant(s, 1)
	if err := router.ApplyIf(ctx(t), d, a, v1, nil); err != nil {
		t.Fatalf("%s: ApplyIf with the version just read: %v", d, err)
	}
	wantState(t, d, "after ApplyIf", a)
	err = router.ApplyIf(ctx(t), d, variant(s, 2), v1, nil)
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("%s: ApplyIf with a stale version: %v, want ErrRouterConflict", d, err)
	}
	wantState(t, d, "after the stale write was refused", a)
	// a version this run never read (no entry for the class) is no licence either
	err = router.ApplyIf(ctx(t), d, variant(s, 3), router.RouterVersion{}, nil)
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("%s: ApplyIf without a version: %v, want ErrRouterConflict", d, err)
	}
	wantState(t, d, "after the unversioned write was refused", a)
}

// A fence that refuses stops the write: ApplyIf returns its error and nothing is written.
func fenceRefusal(t *testing.T, h Harness) {
	s := open(t, h)
	d := s.Driver
	start, v, err := router.ReadVersion(ctx(t), d)
	if err != nil {
		t.Fatalf("%s: read version: %v", d, err)
	}
	lost := errors.New("the lease is lost")
	err = router.ApplyIf(ctx(t), d, variant(s, 1), v, func() error { return lost })
	if !errors.Is(err, lost) {
		t.Fatalf("%s: ApplyIf with a refusing fence: %v, want the fence's error", d, err)
	}
	wantState(t, d, "after the fence refused", start)
	fenced := 0
	if err := router.ApplyIf(ctx(t), d, variant(s, 1), v, func() error { fenced++; return nil }); err != nil {
		t.Fatalf("%s: ApplyIf: %v", d, err)
	}
	if fenced == 0 {
		t.Fatalf("%s: ApplyIf wrote without calling the fence", d)
	}
}

// A region drained reads back drained (weight 0, not cut off) before it is withdrawn; withdrawn,
// it reads back cut off; then it comes back.
func drainBeforeWithdraw(t *testing.T, h Harness) {
	s := open(t, h)
	d := s.Driver
	class, x, y := pick(t, h, s)
	want := variant(s, 1)
	mustApply(t, d, want)
	// drain x: no new traffic, kept in the router; y takes its share
	want.Weights[class][y] += want.Weights[class][x]
	want.Weights[class][x] = 0
	want.States.Set(class, x, router.Drain)
	mustApply(t, d, want)
	got := wantState(t, d, "after drain", want)
	if st := got.States.Get(class, x); st != router.Drain && !(router.ZeroWeightIsDrain(d) && st == router.Ready && got.Weights[class][x] == 0) {
		t.Fatalf("%s: drained %s/%s reads %s", d, class, x, st)
	}
	if got.States.Get(class, x) == router.Maint {
		t.Fatalf("%s: drained %s/%s reads cut off before it was withdrawn", d, class, x)
	}
	if !router.ZeroWeightIsDrain(d) {
		// where drain is a state of its own, a drained region keeps its weight for its return
		keep := want.Clone()
		keep.Weights[class][x] = 5
		keep.Weights[class][y] -= 5
		mustApply(t, d, keep)
		wantState(t, d, "drained with its weight kept", keep)
		mustApply(t, d, want)
	}
	// withdraw x: cut off
	want.States.Set(class, x, router.Maint)
	mustApply(t, d, want)
	if got := wantState(t, d, "after withdraw", want); got.States.Get(class, x) != router.Maint {
		t.Fatalf("%s: withdrawn %s/%s reads %s", d, class, x, got.States.Get(class, x))
	}
	// and back
	back := variant(s, 2)
	mustApply(t, d, back)
	wantState(t, d, "after the region came back", back)
}

// A router whose configuration lets a class reach a region outside its list is refused: by the
// driver (ErrRouterTopology), or by the residency check on what the driver reads.
func topology(t *testing.T, h Harness) {
	s := open(t, h)
	if s.BreakTopology == nil {
		t.Fatalf("%s: Setup.BreakTopology is nil and Skip[\"topology\"] gives no reason", h.Name)
	}
	d := s.Driver
	if err := router.CheckTopology(s.Classes, mustRead(t, d)); err != nil {
		t.Fatalf("%s: the starting state already breaks residency: %v", d, err)
	}
	s.BreakTopology(t)
	rs, err := d.Read(ctx(t))
	switch {
	case errors.Is(err, router.ErrRouterTopology):
		t.Logf("the driver refuses: %v", err)
		if err := d.Apply(ctx(t), s.State); !errors.Is(err, router.ErrRouterTopology) {
			t.Fatalf("%s: Apply on a router that breaks residency: %v, want ErrRouterTopology", d, err)
		}
	case err != nil:
		t.Fatalf("%s: read: %v, want ErrRouterTopology or a read the residency check refuses", d, err)
	default:
		err := router.CheckTopology(s.Classes, rs)
		if !errors.Is(err, router.ErrRouterTopology) {
			t.Fatalf("%s: the driver read a router that breaks residency as %s (states %v): the leak is hidden", d, rs.Weights.Text(), rs.States)
		}
		t.Logf("the residency check refuses what the driver reads: %v", err)
	}
}

// bounded runs call with a context that ends after callDeadline and waits for it at most
// returnSlack beyond: a call still running then hangs.
func bounded(t *testing.T, what string, call func(context.Context) error) error {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(c) }()
	select {
	case err := <-done:
		return err
	case <-time.After(callDeadline + returnSlack):
		t.Fatalf("%s: still running %s after its context's deadline passed: it hangs", what, returnSlack)
		return nil
	}
}

// Every call on a router that does not answer fails with ErrRouterUnreachable, within the
// context's deadline.
func unreachable(t *testing.T, h Harness) {
	s := open(t, h)
	d := h.Unreachable(t)
	since := router.RouterVersion{} // a version of every class: the write is not refused unasked
	for c := range s.State.Weights {
		since[c] = "digest:0"
	}
	for _, c := range []struct {
		name string
		call func(context.Context) error
	}{
		{"read", func(c context.Context) error { _, err := d.Read(c); return err }},
		{"read version", func(c context.Context) error { _, _, err := router.ReadVersion(c, d); return err }},
		{"apply", func(c context.Context) error { return d.Apply(c, s.State) }},
		{"apply if", func(c context.Context) error { return router.ApplyIf(c, d, s.State, since, nil) }},
	} {
		err := bounded(t, c.name, c.call)
		if !errors.Is(err, router.ErrRouterUnreachable) {
			t.Fatalf("%s: %s on an unreachable router: %v, want ErrRouterUnreachable", d, c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// A router that accepts the connection and never answers: every call returns with an error when
// its context ends (or the driver's own timeout), and the error says the router did not answer.
func stalled(t *testing.T, h Harness) {
	s := open(t, h)
	d := h.Stalled(t)
	for _, c := range []struct {
		name string
		call func(context.Context) error
	}{
		{"read", func(c context.Context) error { _, err := d.Read(c); return err }},
		{"apply", func(c context.Context) error { return d.Apply(c, s.State) }},
	} {
		err := bounded(t, c.name, c.call)
		if err == nil {
			t.Fatalf("%s: %s on a stalled router succeeded", d, c.name)
		}
		if !errors.Is(err, router.ErrRouterUnreachable) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %s on a stalled router: %v, want ErrRouterUnreachable or the context's end", d, c.name, err)
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// Applying the same state twice succeeds and reads back the same; ApplyIf with the version just
// read succeeds, twice in a row on the versions read back in between.
func idempotent(t *testing.T, h Harness) {
	s := open(t, h)
	d := s.Driver
	want := variant(s, 3)
	mustApply(t, d, want)
	first := wantState(t, d, "after the first apply", want)
	mustApply(t, d, want)
	if df := diff(d, first, mustRead(t, d)); len(df) > 0 {
		t.Fatalf("%s: the same apply twice changed the read-back: %v", d, df)
	}
	for i := range 2 {
		_, v, err := router.ReadVersion(ctx(t), d)
		if err != nil {
			t.Fatalf("%s: read version: %v", d, err)
		}
		if err := router.ApplyIf(ctx(t), d, want, v, nil); err != nil {
			t.Fatalf("%s: ApplyIf %d with the version just read: %v", d, i+1, err)
		}
		wantState(t, d, "after ApplyIf", want)
	}
}

// SilentListener listens on network ("tcp" on loopback, or "unix" in a temporary directory) and
// accepts connections without ever answering: a stalled router, for Harness.Stalled. It returns
// the address (host:port or the socket's path); it closes when the test ends.
func SilentListener(t testing.TB, network string) string {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = t.TempDir() + "/stalled.sock"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read nor answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
