package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"lifeboat/providers"
)

// Errors the CLI maps to exit codes.
var (
	// ErrRefused: the plan was refused for safety (exit 3); nothing changed.
	ErrRefused = errors.New("refused for safety")
	// ErrHeld: a check failed between steps and the run holds (exit 1).
	ErrHeld = errors.New("failover held")
	// ErrDrift: the router does not route as the journal says (exit 1).
	ErrDrift = errors.New("router drift")
	// ErrExpired: the failover passed failover.expires (resume refuses; restore it).
	ErrExpired = errors.New("failover expired")
	// ErrNothingToResume: the latest run finished (or there is none).
	ErrNothingToResume = errors.New("nothing to resume")
	// ErrIncomplete: the plan cannot reach its target (traffic it cannot place, a failback that
	// stops short): held for safety (exit 3), with the rule and what is left.
	ErrIncomplete = errors.New("held for safety")
)

// Executor carries out plans on a router under the lock, journaling every change.
type Executor struct {
	Fleet   *Fleet
	Store   providers.Store // the fleet's state store: lock and journal
	Router  Driver
	Signals SignalSource
	Log     *slog.Logger // progress; nil: discard
	Holder  string       // who runs this (user@host pid N); empty: derived
	LockTTL time.Duration
	Now     func() time.Time
	// OnRecord is called after each journal record is written (tests crash here).
	OnRecord func(Record)
	// AfterApply is called after a step's change is read back, before its result is
	// journaled (tests crash here too: applied but not recorded).
	AfterApply func(step int)

	// notes are the router's notes (NotingDriver) as last logged.
	notes struct {
		sync.Mutex
		last string
	}
}

// RunOptions are a run's choices.
type RunOptions struct {
	Event          Event
	Immediate      bool
	Overrides      []Rule
	Reason         string
	RollbackOnFail bool
	// HoldTimeout is how long a failed check is re-tried (every step_interval) before the run
	// stops held; 0 stops at once.
	HoldTimeout time.Duration
	// Confirm is shown the plan before the first change; false cancels. Nil: go ahead.
	Confirm func(*Plan) bool
	// Plan, when set, is shown the plan once made (whether it proceeds or not).
	Plan func(*Plan)
	// AllowPartial applies a plan that cannot reach its target (Plan.Complete false) without
	// Confirm: the operator accepted it (--allow-partial). Without it and without Confirm such
	// a plan is refused and nothing changes.
	AllowPartial bool

	resumed bool // steps: check the first step too (resume and re-assert pick up someone's plan)
}

// Outcome is how a run ended.
type Outcome struct {
	Run   string      `json:"run"`
	Plan  *Plan       `json:"plan"`
	Steps int         `json:"steps_applied"`
	Held  string      `json:"held,omitempty"`
	Final RouterState `json:"final"`
	// Complete: the run reached its plan's target (false when it holds, or its plan could not
	// complete: see Plan.Shed and Plan.Reason).
	Complete bool `json:"complete"`
	// Reasserted: resume re-applied the journaled state of a run the router had forgotten.
	Reasserted bool `json:"reasserted,omitempty"`
}

func (e *Executor) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

func (e *Executor) holder() string {
	if e.Holder != "" {
		return e.Holder
	}
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s pid %d", name, host, os.Getpid())
}

// lockTTL is the executor's LockTTL, else the fleet's failover.lock_ttl.
func (e *Executor) lockTTL() time.Duration {
	if e.LockTTL > 0 {
		return e.LockTTL
	}
	if e.Fleet != nil && e.Fleet.Failover.LockTTL > 0 {
		return e.Fleet.Failover.LockTTL
	}
	return DefaultLockTTL
}

func (e *Executor) locker() *Locker { return &Locker{Store: e.Store, TTL: e.lockTTL(), Now: e.Now} }

// session is one process's hold on the lock, renewed in the background.
type session struct {
	e *Executor
	// mu guards lock and is held across a whole Renew (store write, then the update of lock) and
	// a whole Check: a Check between Renew's write and its update would compare the store's new
	// revision with the old one and wrongly conclude that the lock was lost.
	mu   sync.Mutex
	lock *Lock
	// leaseMu guards lease, the holder's own deadline on the monotonic clock (the start of the
	// last successful acquire or renewal + TTL − TTL/4): fence reads it without waiting for a
	// renewal's store write.
	leaseMu sync.Mutex
	lease   time.Time
	// seen is the router's version as this run last read it back (or read it to plan): every
	// router write is conditional on it. Only the run's goroutine touches it.
	seen RouterVersion
	// lastRead is what this run last read back from the router (after its last write, or when
	// it took over the run); a router that reads otherwise later has drifted.
	lastRead *RouterState
	j        *Journal
	ctx      context.Context
	cancel   context.CancelCauseFunc
	done     chan struct{}
}

// begin takes the lock (wait: watch a held one until it may be taken over, as resume does) and
// starts its renewal; run "" names a new run by the lock's fencing token. A take-over of a dead or
// silent holder's lock is journaled first.
func (e *Executor) begin(ctx context.Context, operation, reason, run string, next int, wait bool) (*session, error) {
	l := e.locker()
	l.Wait = wait
	l.Watching = func(held Lock, d time.Duration) {
		e.log().Info("the failover lock is held; watching its record before taking it over (any renewal means its holder is alive)",
			"lock", held.ID, "holder", held.Holder, "token", held.Token, "for", d.String())
	}
	lk, err := l.Acquire(ctx, e.holder(), operation, reason)
	if err != nil {
		return nil, err
	}
	if run == "" {
		run = NewRunID(lk.Token, e.now())
	}
	sctx, cancel := context.WithCancelCause(ctx)
	s := &session{e: e, lock: lk, lease: lk.lease, ctx: sctx, cancel: cancel, done: make(chan struct{})}
	s.j = &Journal{Store: e.Store, Run: run, Holder: lk.Holder, Token: lk.Token, Fleet: e.fleetID(), next: next, Now: e.Now, OnRecord: e.OnRecord, fence: s.fence}
	ttl := l.ttl()
	go func() {
		defer close(s.done)
		t := time.NewTicker(ttl / 5)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if err := s.fence(); err != nil {
					cancel(err) // the lease ran out on this host's clock: stop whatever the run does
					return
				}
				s.mu.Lock()
				err := l.Renew(sctx, s.lock) // updates *s.lock only on success
				lease := s.lock.lease
				s.mu.Unlock()
				if err != nil {
					if errors.Is(err, ErrLockLost) {
						cancel(err)
						return
					}
					e.log().Warn("lock renewal failed; retrying (the run goes on until its own lease runs out)", "err", err)
					continue
				}
				s.leaseMu.Lock()
				s.lease = lease
				s.leaseMu.Unlock()
			}
		}
	}()
	if prev := lk.tookOver; prev != nil {
		detail := fmt.Sprintf("took over lock %s of %s (token %d, %s) with token %d: %s", prev.ID, prev.Holder, prev.Token, prev.Operation, lk.Token, lk.why)
		e.log().Warn("failover lock taken over", "detail", detail)
		if _, err := s.j.Append(sctx, Record{Kind: RecTakeover, Reason: reason, Detail: detail}); err != nil {
			s.end()
			return nil, err
		}
	}
	return s, nil
}

// fence is checked immediately before every router call: the lock was not found lost, and its
// lease has not run out on this host's monotonic clock, whether or not the last renewal answered.
func (s *session) fence() error {
	if c := context.Cause(s.ctx); c != nil && errors.Is(c, ErrLockLost) {
		return c
	}
	s.leaseMu.Lock()
	lease := s.lease
	s.leaseMu.Unlock()
	if !time.Now().Before(lease) {
		return fmt.Errorf("%w: token %d: its lease ran out on this host's clock (no renewal succeeded within lock_ttl minus the safety margin); nothing more is written", ErrLockLost, s.j.Token)
	}
	return nil
}

// checkLock verifies that the lock is still ours in the store and by its own lease (fencing,
// before each step's intent), never in the middle of a renewal.
func (s *session) checkLock(ctx context.Context) error {
	if err := s.fence(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.lock
	cur.lease = time.Now().Add(time.Hour) // the lease is the session's (fence, above)
	return s.e.locker().Check(ctx, &cur)
}

// observe reads the router and remembers its version: the next write is conditional on it.
func (s *session) observe(ctx context.Context) (RouterState, error) {
	rs, v, err := s.e.readVersioned(ctx)
	if err == nil {
		s.seen = v
	}
	return rs, err
}

// end stops renewal and releases the lock (with a fresh context: release even when cancelled).
func (s *session) end() {
	s.cancel(nil)
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.e.locker().Release(ctx, s.lock); err != nil {
		s.e.log().Warn("lock not released", "err", err)
	}
}

func (s *session) err(err error) error {
	if c := context.Cause(s.ctx); c != nil && errors.Is(c, ErrLockLost) {
		return c
	}
	return err
}

// failoverState is what the journal says about the open failover.
type failoverState struct {
	baseline    Weights
	transitions map[string]int
	// out are the regions the open failover evacuated and has not restored.
	out []string
}

func (e *Executor) fleetID() string { return FleetDigest(e.Fleet) }

// outAfter is the set of regions out of service once event ev runs, from the open failover's.
func outAfter(out []string, ev Event) []string {
	set := slices.Clone(out)
	switch ev.Kind {
	case Evacuate:
		if !slices.Contains(set, ev.Region) {
			set = append(set, ev.Region)
		}
	case Restore:
		set = slices.DeleteFunc(set, func(r string) bool { return r == ev.Region })
	}
	slices.Sort(set)
	return set
}

// history reads the journal: the open failover's baseline (nil when none is open) and each
// region's changes in the last hour.
func (e *Executor) history(ctx context.Context) (failoverState, error) {
	st := failoverState{transitions: map[string]int{}}
	runs, err := Runs(ctx, e.Store)
	if err != nil {
		return st, err
	}
	hourAgo := e.now().Add(-time.Hour)
	baselineKnown := false
	for i := len(runs) - 1; i >= 0; i-- {
		// A bad object (junk, too large, a gap) ends what is read of its run and is reported,
		// never the end of an abort: the planner goes back to the baseline of the records before
		// it, checked against the live router as always.
		j, err := ScanRun(ctx, e.Store, runs[i])
		if err != nil {
			return st, err
		}
		for _, b := range j.Bad {
			e.log().Warn("journal: bad object skipped", "object", b.Key, "why", b.Err)
		}
		recs := j.Records
		if !ofFleet(recs, e.fleetID()) {
			continue
		}
		started := false
		for _, r := range recs {
			switch {
			case r.Kind == RecStart && !baselineKnown:
				st.baseline, st.out, started = r.Baseline, r.Out, true
			case r.Kind == RecDone && r.Closed && started:
				st.baseline, st.out = nil, nil
			case r.Kind == RecResult && r.Time.After(hourAgo) && r.Before != nil && r.After != nil:
				for reg := range changedRegions(*r.Before, *r.After) {
					st.transitions[reg]++
				}
			}
		}
		baselineKnown = baselineKnown || started
		if baselineKnown && (len(recs) == 0 || recs[len(recs)-1].Time.Before(hourAgo)) {
			break // runs are ordered by fencing token: older ones ended before this one began
		}
	}
	return st, nil
}

// latestStarted returns this fleet's newest run that began changing the router (refused runs
// are skipped: they changed nothing).
func (e *Executor) latestStarted(ctx context.Context) (string, []Record, error) {
	return latestStartedOf(ctx, e.Store, e.fleetID())
}

// scanLatestStarted is latestStarted for readers that report rather than refuse (status): the
// fleet's newest run with a start among its valid records (else its newest run), and every bad
// object seen on the way.
func scanLatestStarted(ctx context.Context, s providers.Store, fleet string) (RunJournal, []*BadRecordError, error) {
	runs, err := Runs(ctx, s)
	if err != nil {
		return RunJournal{}, nil, err
	}
	var bad []*BadRecordError
	var newest RunJournal
	for i := len(runs) - 1; i >= 0; i-- {
		j, err := ScanRun(ctx, s, runs[i])
		if err != nil {
			return RunJournal{}, bad, err
		}
		bad = append(bad, j.Bad...)
		if fleet != "" && !ofFleet(j.Records, fleet) {
			continue
		}
		if newest.Run == "" {
			newest = j
		}
		for _, r := range j.Records {
			if r.Kind == RecStart {
				return j, bad, nil
			}
		}
	}
	return newest, bad, nil
}

func latestStarted(ctx context.Context, s providers.Store) (string, []Record, error) {
	return latestStartedOf(ctx, s, "")
}

// latestStartedOf is latestStarted among the runs of the fleet with this digest ("": any).
func latestStartedOf(ctx context.Context, s providers.Store, fleet string) (string, []Record, error) {
	runs, err := Runs(ctx, s)
	if err != nil {
		return "", nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		recs, err := ReadRun(ctx, s, runs[i])
		if err != nil {
			return "", nil, err
		}
		if fleet != "" && !ofFleet(recs, fleet) {
			continue
		}
		for _, r := range recs {
			if r.Kind == RecStart {
				return runs[i], recs, nil
			}
		}
	}
	return "", nil, nil
}

func changedRegions(a, b RouterState) map[string]bool {
	out := map[string]bool{}
	for c := range b.Weights {
		for _, r := range unionStrings(a.Weights[c], b.Weights[c]) {
			if a.Weights[c][r] != b.Weights[c][r] || a.States.Get(c, r) != b.States.Get(c, r) {
				out[r] = true
			}
		}
	}
	return out
}

func unionStrings(ms ...map[string]int) []string {
	set := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Input builds a planner input from the live router and signals.
func (e *Executor) Input(ctx context.Context, rs RouterState, sig map[string]RegionSignal, h failoverState, o RunOptions) PlanInput {
	in := InputFromFleet(e.Fleet)
	in.Weights, in.States, in.Signals = rs.Weights, rs.States, sig
	in.Baseline, in.Transitions, in.Out = h.baseline, h.transitions, h.out
	in.Event, in.Immediate, in.Overrides = o.Event, o.Immediate, o.Overrides
	in.MaxWeight = e.Router.MaxWeight()
	return in
}

// readRouter reads the router and checks that its topology keeps every class in its regions.
func (e *Executor) readRouter(ctx context.Context) (RouterState, error) {
	rs, _, err := e.readVersioned(ctx)
	return rs, err
}

// logNotes logs what the router reports beyond weights and states (NotingDriver), whenever it
// differs from what was last logged.
func (e *Executor) logNotes() {
	n, ok := e.Router.(NotingDriver)
	if !ok {
		return
	}
	notes := n.Notes()
	e.notes.Lock()
	defer e.notes.Unlock()
	if s := strings.Join(notes, "\n"); s != e.notes.last {
		e.notes.last = s
		for _, note := range notes {
			e.log().Info("router reports", "router", e.Router.String(), "note", note)
		}
	}
}

// readVersioned is readRouter with the router's version of each class.
func (e *Executor) readVersioned(ctx context.Context) (RouterState, RouterVersion, error) {
	rs, v, err := ReadVersion(ctx, e.Router)
	e.logNotes()
	if err != nil {
		return rs, nil, fmt.Errorf("read %s: %w", e.Router, err)
	}
	if rs.States == nil {
		rs.States = States{}
	}
	if err := checkTopology(e.Fleet.Tenants, rs); err != nil {
		return rs, nil, fmt.Errorf("%s: %w", e.Router, err)
	}
	// Only the fleet's classes are planned; the router may hold others.
	for c := range rs.Weights {
		if _, ok := e.Fleet.Tenants[c]; !ok {
			delete(rs.Weights, c)
		}
	}
	for c, elig := range e.Fleet.Tenants {
		for r := range rs.Weights[c] {
			if !slices.Contains(elig, r) {
				delete(rs.Weights[c], r) // cut off and weight 0 (checked above): not a region of this class
			}
		}
	}
	return rs, v, nil
}

// Run plans the event from the live router and signals (preflight: the warm prober on every
// region), then carries it out under the lock.
func (e *Executor) Run(ctx context.Context, o RunOptions) (*Outcome, error) {
	s, err := e.begin(ctx, "failover "+o.Event.String(), o.Reason, "", 0, false)
	if err != nil {
		return nil, err
	}
	defer s.end()
	out, err := e.run(s, o, s.j.Run)
	return out, s.err(err)
}

func (e *Executor) run(s *session, o RunOptions, run string) (*Outcome, error) {
	ctx := s.ctx
	h, err := e.history(ctx)
	if err != nil {
		return nil, err
	}
	if (o.Event.Kind == Restore || o.Event.Kind == Abort) && h.baseline == nil {
		return nil, fmt.Errorf("%w: no failover is open (the journal has no baseline to go back to)", ErrRefused)
	}
	rs, err := s.observe(ctx)
	if err != nil {
		return nil, err
	}
	if h.baseline == nil {
		h.baseline = rs.Weights.Clone()
	}
	sig, err := e.preflight(ctx)
	if err != nil {
		return nil, err
	}
	plan := MakePlan(e.Input(ctx, rs, sig, h, o))
	if o.Event.Kind == Restore && plan.Hold != "" && len(plan.Steps) == 0 && o.HoldTimeout > 0 {
		plan, sig, err = e.awaitDwell(s, o, h, plan)
		if err != nil {
			return nil, err
		}
	}
	if o.Plan != nil {
		o.Plan(plan)
	}
	out := &Outcome{Run: run, Plan: plan, Final: rs}
	if plan.Refused {
		_, _ = s.j.Append(ctx, Record{Kind: RecRefused, Event: &o.Event, Reason: o.Reason, Detail: plan.Reason, Plan: plan})
		return out, fmt.Errorf("%w: %s", ErrRefused, plan.Reason)
	}
	if len(plan.Steps) == 0 {
		if !plan.Complete {
			return out, fmt.Errorf("%w: %s", ErrRefused, plan.Verdict())
		}
		out.Complete = true
		return out, nil
	}
	if !plan.Complete && !o.AllowPartial && o.Confirm == nil {
		why := plan.Verdict() + "; nothing changed (accept a plan that cannot complete with --allow-partial, or answer its prompt)"
		_, _ = s.j.Append(ctx, Record{Kind: RecRefused, Event: &o.Event, Reason: o.Reason, Detail: why, Plan: plan})
		out.Held = why
		return out, fmt.Errorf("%w: %s", ErrIncomplete, why)
	}
	if o.Confirm != nil && !o.Confirm(plan) {
		return out, errors.New("cancelled: nothing changed")
	}
	exp := e.now().Add(e.Fleet.Failover.Expires)
	if _, err := s.j.Append(ctx, Record{Kind: RecStart, Event: &o.Event, Reason: o.Reason, Plan: plan, Baseline: h.baseline, Expires: &exp, Overrides: o.Overrides, Out: outAfter(h.out, o.Event)}); err != nil {
		return out, err
	}

	for _, r := range o.Overrides {
		if _, err := s.j.Append(ctx, Record{Kind: RecOverride, Reason: o.Reason, Detail: fmt.Sprintf("rule %s bypassed by %s", r, s.j.Holder)}); err != nil {
			return out, err
		}
	}
	start := plan.Start.Clone()
	s.lastRead = &start
	return e.steps(s, o, plan, 0, h, out)
}

// awaitDwell observes the regions until the failback may start or the hold timeout passes: a
// new process has seen the region calm for 0 s, so it watches it (signals every step_interval,
// the warm prober again while the region is not warm) for failback_dwell, saying how far it is
// on the progress log, and gives up at once when the dwell cannot end before the timeout.
func (e *Executor) awaitDwell(s *session, o RunOptions, h failoverState, plan *Plan) (*Plan, map[string]RegionSignal, error) {
	ctx := s.ctx
	deadline := e.now().Add(o.HoldTimeout)
	dwell := e.Fleet.Failover.FailbackDwell
	var sig map[string]RegionSignal
	for plan.Hold != "" && len(plan.Steps) == 0 && e.now().Before(deadline) {
		if plan.Rule == RuleDwell && sig != nil {
			if c := sig[o.Event.Region].CalmSeconds; c != nil {
				need := dwell - time.Duration(*c*float64(time.Second))
				if left := deadline.Sub(e.now()); need > left {
					plan.Hold += fmt.Sprintf("; %s more would be needed and --hold-timeout leaves %s", need.Round(time.Second), left.Round(time.Second))
					break
				}
			}
		}
		e.log().Info("observing before failback", "region", o.Event.Region, "why", plan.Hold, "gives_up_in", deadline.Sub(e.now()).Round(time.Second).String())
		if err := sleep(ctx, e.Fleet.Failover.StepInterval); err != nil {
			return nil, nil, err
		}
		var err error
		if sig, err = e.Signals.Signals(ctx, plan.Rule == RuleWarm); err != nil {
			return nil, nil, err
		}
		rs, err := s.observe(ctx) // the plan is made from it: the first write is conditional on it
		if err != nil {
			return nil, nil, err
		}
		plan = MakePlan(e.Input(ctx, rs, sig, h, o))
	}
	return plan, sig, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// steps carries out plan.Steps[from:], checking each against fresh signals first. After each
// step_interval it reads the router again: a router that no longer reads as this run last read
// it back (a restart, a reload, another hand) holds the run with a named drift, never a jump
// from the foreign state to the next target.
func (e *Executor) steps(s *session, o RunOptions, plan *Plan, from int, h failoverState, out *Outcome) (*Outcome, error) {
	ctx := s.ctx
	pol := e.Fleet.Failover
	for k := from; k < len(plan.Steps); k++ {
		st := plan.Steps[k]
		if k > 0 {
			if err := sleep(ctx, pol.StepInterval); err != nil {
				return out, err
			}
		}
		cur, err := e.readRouter(ctx)
		if err != nil {
			return out, err
		}
		if err := e.checkDrift(s, plan, k, cur); err != nil {
			out.Held = err.Error()
			return out, err
		}
		if k > 0 || o.resumed {
			if held, err := e.checkBefore(s, o, plan, k, h, &cur); err != nil || held != "" {
				if err == nil && o.RollbackOnFail && plan.Event.Kind != Abort {
					return e.rollback(s, o, h, held, out)
				}
				if err == nil {
					out.Held = held
					err = fmt.Errorf("%w at step %d of %d: %s (fix it and run `lifeboat failover resume`, or `lifeboat failover abort`)", ErrHeld, k+1, len(plan.Steps), held)
				} else if errors.Is(err, ErrDrift) {
					out.Held = err.Error()
				}
				return out, err
			}
		}
		if st.WaitForDrain {
			if err := e.waitDrain(s, st, k); err != nil {
				return out, err
			}
		}
		if err := e.apply(s, plan, k, cur); err != nil {
			return out, err
		}
		out.Steps++
	}
	fin, err := e.readRouter(ctx)
	if err != nil {
		return out, err
	}
	out.Final = fin
	closed := (plan.Event.Kind == Abort || plan.Event.Kind == Restore) && h.baseline != nil && fin.Weights.Equal(h.baseline)
	if _, err = s.j.Append(ctx, Record{Kind: RecDone, Detail: plan.Hold, After: &fin, Closed: closed}); err != nil {
		return out, err
	}
	if !plan.Complete {
		out.Held = plan.Verdict()
		return out, fmt.Errorf("%w: %s", ErrIncomplete, plan.Verdict())
	}
	out.Complete = true
	return out, nil
}

// checkDrift compares the router as read now with what this run last read back; a difference
// is journaled as a hold naming the drift and returned as ErrHeld and ErrDrift.
func (e *Executor) checkDrift(s *session, plan *Plan, k int, cur RouterState) error {
	if s.lastRead == nil {
		return nil
	}
	d := e.diff(*s.lastRead, cur)
	if len(d) == 0 {
		return nil
	}
	why := fmt.Sprintf("drift: %s changed since this run last read it back (%s)", e.Router, strings.Join(d, "; "))
	step := k
	if _, err := s.j.Append(s.ctx, Record{Kind: RecHold, Step: &step, Detail: why, Before: s.lastRead, After: &cur}); err != nil {
		return err
	}
	e.log().Warn("hold", "step", k+1, "why", why)
	next := "`lifeboat failover resume` re-asserts what this run last applied and goes on"
	if k == 0 {
		next = "`lifeboat failover resume` checks the first step against the router as it is now"
	}
	return fmt.Errorf("%w before step %d of %d: %w: %s; nothing was written over it. See who changed it (`lifeboat failover status`), then %s, or `lifeboat failover abort`",
		ErrHeld, k+1, len(plan.Steps), ErrDrift, why, next)
}

// checkBefore re-reads signals and checks step k from the router's current state; it returns
// the hold reason ("" to go on), re-trying for o.HoldTimeout.
func (e *Executor) checkBefore(s *session, o RunOptions, plan *Plan, k int, h failoverState, cur *RouterState) (string, error) {
	ctx := s.ctx
	deadline := e.now().Add(o.HoldTimeout)
	for {
		sig, err := e.Signals.Signals(ctx, false)
		if err != nil {
			return "", err
		}
		in := e.Input(ctx, *cur, sig, h, o)
		in.Event = plan.Event
		vs := CheckStep(in, plan.Steps[k])
		if len(vs) == 0 {
			return "", nil
		}
		why := vs[0].String()
		step := k
		if _, err := s.j.Append(ctx, Record{Kind: RecHold, Step: &step, Detail: why, Violations: vs}); err != nil {
			return "", err
		}
		e.log().Warn("hold", "step", k+1, "why", why)
		if !e.now().Before(deadline) {
			return why, nil
		}
		if err := sleep(ctx, e.Fleet.Failover.StepInterval); err != nil {
			return "", err
		}
		if *cur, err = e.readRouter(ctx); err != nil {
			return "", err
		}
		if err := e.checkDrift(s, plan, k, *cur); err != nil {
			return "", err
		}
	}
}

// rollback plans the way back to the baseline from here and carries it out.
func (e *Executor) rollback(s *session, o RunOptions, h failoverState, why string, out *Outcome) (*Outcome, error) {
	ctx := s.ctx
	rs, err := e.readRouter(ctx)
	if err != nil {
		return out, err
	}
	sig, err := e.Signals.Signals(ctx, false)
	if err != nil {
		return out, err
	}
	ro := o
	ro.Event = Event{Kind: Abort}
	ro.Immediate = false
	back := MakePlan(e.Input(ctx, rs, sig, h, ro))
	if _, err := s.j.Append(ctx, Record{Kind: RecRollback, Detail: why, Plan: back}); err != nil {
		return out, err
	}
	e.log().Warn("rolling back", "why", why, "steps", len(back.Steps))
	if back.Refused || len(back.Steps) == 0 {
		out.Held = why
		return out, fmt.Errorf("%w: %s; and the rollback cannot start: %s%s", ErrHeld, why, back.Reason, back.Hold)
	}
	out.Plan = back
	res, err := e.steps(s, ro, back, 0, h, out)
	if err == nil {
		err = fmt.Errorf("%w: %s; rolled back", ErrHeld, why)
	}
	return res, err
}

// waitDrain waits until every region withdrawn in st runs fewer than drain_running_below
// requests, or drain_timeout passes.
func (e *Executor) waitDrain(s *session, st *Step, k int) error {
	ctx := s.ctx
	pol := e.Fleet.Failover
	deadline := e.now().Add(pol.DrainTimeout)
	poll := min(max(pol.StepInterval/4, 100*time.Millisecond), 5*time.Second)
	detail := ""
	for {
		sig, err := e.Signals.Signals(ctx, false)
		if err != nil {
			return err
		}
		busy := []string{}
		for _, r := range st.Withdraw {
			if rs := sig[r]; rs.Healthy && rs.Running != nil && *rs.Running >= pol.DrainRunningBelow {
				busy = append(busy, fmt.Sprintf("%s %d running", r, *rs.Running))
			}
		}
		if len(busy) == 0 {
			detail = "in-flight requests under drain_running_below"
			break
		}
		if !e.now().Before(deadline) {
			detail = fmt.Sprintf("drain_timeout %s passed with %v", pol.DrainTimeout, busy)
			break
		}
		e.log().Info("draining", "busy", busy)
		if err := sleep(ctx, poll); err != nil {
			return err
		}
	}
	step := k
	_, err := s.j.Append(ctx, Record{Kind: RecDrainWait, Step: &step, Detail: detail})
	return err
}

// apply journals the intent, changes the router, reads it back and journals the result.
func (e *Executor) apply(s *session, plan *Plan, k int, before RouterState) error {
	ctx := s.ctx
	target := plan.After(k)
	if err := s.checkLock(ctx); err != nil {
		return err
	}
	step := k
	if _, err := s.j.Append(ctx, Record{Kind: RecIntent, Step: &step, Before: &before, Target: &target}); err != nil {
		return err
	}
	e.log().Info("applying", "step", fmt.Sprintf("%d/%d", k+1, len(plan.Steps)), "weights", plan.Steps[k].Weights, "drain", plan.Steps[k].Drain, "withdraw", plan.Steps[k].Withdraw)
	after, err := e.applyAndReadBack(s, target)
	if err != nil {
		_, _ = s.j.Append(ctx, Record{Kind: RecFailed, Step: &step, Detail: err.Error()})
		return err
	}
	s.lastRead = &after
	if e.AfterApply != nil {
		e.AfterApply(k)
	}
	_, err = s.j.Append(ctx, Record{Kind: RecResult, Step: &step, Before: &before, After: &after})
	return err
}

// applyAndReadBack writes target conditionally on the router's version this run last saw, the
// lease checked immediately before every router call, then reads back (the next write's version).
func (e *Executor) applyAndReadBack(s *session, target RouterState) (RouterState, error) {
	ctx := s.ctx
	if s.seen == nil {
		if err := s.fence(); err != nil {
			return RouterState{}, err
		}
		if _, err := s.observe(ctx); err != nil {
			return RouterState{}, err
		}
	}
	if err := ApplyIf(ctx, e.Router, target, s.seen, s.fence); err != nil {
		return RouterState{}, fmt.Errorf("apply to %s: %w", e.Router, err)
	}
	if err := s.fence(); err != nil {
		return RouterState{}, err
	}
	after, err := s.observe(ctx)
	if err != nil {
		return after, err
	}
	if d := e.diff(target, after); len(d) > 0 {
		return after, fmt.Errorf("%w: %s reads back differently from what was applied: %v", ErrDrift, e.Router, d)
	}
	return after, nil
}

// diff compares as the driver routes: where weight 0 is the drain (Caddy), a ready region with
// weight 0 and a drained one are the same.
func (e *Executor) diff(want, got RouterState) []string {
	if ZeroWeightIsDrain(e.Router) {
		return Diff(normalizeZeroDrain(want), normalizeZeroDrain(got))
	}
	return Diff(want, got)
}

// Resume continues this fleet's latest run from its journal, read under the lock (never a view
// taken before another operator's run or abort finished): it probes every region as run does,
// re-applies the last intended state (routers forget runtime changes on reload), then carries
// out the remaining steps with the same checks. A finished run whose router no longer routes as
// it left it is re-asserted. Whatever the journal says is input: every state resume would apply
// is first re-validated against this fleet (validateJournaled) and checked like a step
// (CheckStep) from the router as it is now.
func (e *Executor) Resume(ctx context.Context, o RunOptions) (*Outcome, error) {
	// The journal is read again once the lock is ours (resume acts on that view only); this
	// first look names the run a take-over of a dead holder's lock is journaled in.
	peek, precs, err := e.latestStarted(ctx)
	if err != nil {
		return nil, err
	}
	s, err := e.begin(ctx, "failover resume "+peek, o.Reason, peek, len(precs), true)
	if err != nil {
		return nil, err
	}
	defer s.end()
	out, err := e.resume(s, o)
	return out, s.err(err)
}

func (e *Executor) resume(s *session, o RunOptions) (*Outcome, error) {
	ctx := s.ctx
	run, recs, err := e.latestStarted(ctx)
	if err != nil {
		return nil, err
	}
	v := ViewRun(run, recs, e.now())
	if run == "" || v.Start == nil {
		return nil, fmt.Errorf("%w: the journal holds no run of this fleet", ErrNothingToResume)
	}
	s.j.Run, s.j.next, s.j.Fleet = run, len(recs), e.fleetID()
	plan := v.Plan
	out := &Outcome{Run: v.Run, Plan: plan, Steps: v.Applied}
	if err := e.validateJournaled(run, plan, v.Start.Baseline); err != nil {
		return out, err
	}
	// Judged from the plan itself, not from a journaled flag (older journals carry none).
	plan.Complete = !plan.Refused && plan.Hold == "" && len(plan.Shed) == 0
	o.Event, o.Overrides, o.Immediate, o.resumed = plan.Event, plan.Overrides, plan.Immediate, true
	h, err := e.history(ctx)
	if err != nil {
		return out, err
	}
	h.baseline = v.Start.Baseline
	cur, err := s.observe(ctx)
	if err != nil {
		return out, err
	}
	out.Final = cur
	want, _ := v.Expected()
	if v.Done && len(e.diff(want, cur)) == 0 {
		return out, fmt.Errorf("%w: run %s finished at %s, and the router routes as it left it", ErrNothingToResume, run, v.Last.Time.Format(time.RFC3339))
	}
	if v.Expired && !v.Done || v.Expired && v.Done && !v.Closed {
		return out, fmt.Errorf("%w: run %s expired at %s; fail back with `lifeboat failover restore` or abort", ErrExpired, run, v.Start.Expires.Format(time.RFC3339))
	}
	if _, err := e.preflight(ctx); err != nil {
		return out, err
	}
	if v.Done {
		// The run finished and the router forgot (a reload, a restart): put back its final state.
		if _, err := s.j.Append(ctx, Record{Kind: RecResume, Reason: o.Reason, Detail: fmt.Sprintf("re-asserting the final state of finished run %s: the router reads otherwise", v.Run)}); err != nil {
			return out, err
		}
		after, err := e.reassert(s, o, h, v.LastApplied, cur, want)
		if err != nil {
			return out, err
		}
		out.Final, out.Reasserted = after, true
		if _, err := s.j.Append(ctx, Record{Kind: RecDone, Detail: v.Held, After: &after, Closed: v.Closed}); err != nil {
			return out, err
		}
		if v.Held != "" {
			out.Held = v.Held
			return out, fmt.Errorf("%w: run %s re-asserted, and it still ends short of its target: %s", ErrIncomplete, run, v.Held)
		}
		out.Complete = true
		return out, nil
	}
	if _, err := s.j.Append(ctx, Record{Kind: RecResume, Reason: o.Reason, Detail: fmt.Sprintf("taking over run %s at step %d of %d", v.Run, v.NextStep+1, len(plan.Steps))}); err != nil {
		return out, err
	}
	s.lastRead = &cur
	if v.InFlight >= 0 {
		// The intent was written, the result was not: check it again from the router as it is
		// now, apply it again (idempotent) and record its one result.
		if held, err := e.checkBefore(s, o, plan, v.InFlight, h, &cur); err != nil || held != "" {
			if err == nil {
				out.Held = held
				err = fmt.Errorf("%w at step %d of %d: %s (fix it and run `lifeboat failover resume` again, or `lifeboat failover abort`)", ErrHeld, v.InFlight+1, len(plan.Steps), held)
			}
			return out, err
		}
		if err := e.apply(s, plan, v.InFlight, cur); err != nil {
			return out, err
		}
		out.Steps++
	} else if v.LastApplied >= 0 {
		if target := plan.After(v.LastApplied); len(e.diff(target, cur)) > 0 {
			if _, err := e.reassert(s, o, h, v.LastApplied, cur, target); err != nil {
				return out, err
			}
		}
	}
	next := max(v.InFlight, v.LastApplied) + 1
	return e.steps(s, o, plan, next, h, out)
}

// preflight reads every region's signals with the warm prober, as run does before planning:
// a resume after Ctrl-C or kill -9 is a new process that has probed nothing yet.
func (e *Executor) preflight(ctx context.Context) (map[string]RegionSignal, error) {
	e.log().Info("preflight: reading every region's signals (live: the warm prober, /health, /metrics)")
	sig, err := e.Signals.Signals(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	for _, r := range slices.Sorted(maps.Keys(sig)) {
		if !sig[r].Warm {
			e.log().Info("preflight: not a receiver", "region", r, "why", sig[r].Why)
		}
	}
	return sig, nil
}

// reassert puts back a state the journal says this run reached (step, the index of its last
// result) that the router no longer holds: checked first as one immediate step from the router
// as it is now (residency, totals, warm, headroom... — step_percent and the drain wait do not
// apply: the run already ramped there), then under the lock, intent first, applied and read back.
func (e *Executor) reassert(s *session, o RunOptions, h failoverState, step int, cur, target RouterState) (RouterState, error) {
	ctx := s.ctx
	sig, err := e.Signals.Signals(ctx, false)
	if err != nil {
		return cur, err
	}
	in := e.Input(ctx, cur, sig, h, o)
	in.Immediate = true
	// A drift may have changed a class's total (someone's edit): putting back the journaled
	// total (validated against the run's start by validateJournaled) is the point.
	vs := slices.DeleteFunc(CheckStep(in, stepTo(e.Fleet, target)), func(v Violation) bool { return v.Rule == RuleTotals && v.Region == "" })
	if len(vs) > 0 {
		why := vs[0].String()
		_, _ = s.j.Append(ctx, Record{Kind: RecHold, Step: &step, Detail: "re-assert: " + why, Violations: vs})
		return cur, fmt.Errorf("%w: re-asserting the journaled state of step %d: %s (fix it and run `lifeboat failover resume` again, or `lifeboat failover abort`)", ErrHeld, step+1, why)
	}
	if err := s.checkLock(ctx); err != nil {
		return cur, err
	}
	if _, err := s.j.Append(ctx, Record{Kind: RecReassertIntent, Step: &step, Before: &cur, Target: &target}); err != nil {
		return cur, err
	}
	e.log().Info("re-asserting", "step", step+1, "drift", e.diff(target, cur))
	after, err := e.applyAndReadBack(s, target)
	if err != nil {
		_, _ = s.j.Append(ctx, Record{Kind: RecFailed, Step: &step, Detail: err.Error()})
		return cur, err
	}
	s.lastRead = &after
	_, err = s.j.Append(ctx, Record{Kind: RecReassert, Step: &step, Before: &cur, After: &after})
	return after, err
}

// stepTo is the step that sets every class of the fleet to target (complete vectors and states).
func stepTo(f *Fleet, target RouterState) *Step {
	st := &Step{Weights: Weights{}, States: States{}}
	for c, elig := range f.Tenants {
		if vec, ok := target.Weights[c]; ok {
			st.Weights[c] = maps.Clone(vec)
		}
		for _, r := range elig {
			st.States.Set(c, r, target.States.Get(c, r))
		}
	}
	return st
}

// validateJournaled checks a journaled plan and baseline against this fleet before resume or
// re-assert applies any of it. The journal is input like any other: a plan this fleet's planner
// could not have made — a class or region the fleet does not have, weight outside a class's
// eligible regions, a total that changes, a weight out of the driver's range — is refused
// (ErrRefused, exit 3) and nothing is applied.
func (e *Executor) validateJournaled(run string, plan *Plan, baseline Weights) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: the journal of run %s %s; nothing applied (this fleet's planner never makes such a plan: check who can write the state store, then `lifeboat failover abort` or fix the router by hand)", ErrRefused, run, fmt.Sprintf(format, args...))
	}
	if plan == nil {
		return bad("carries no plan")
	}
	if len(plan.Steps) > maxPlanSteps {
		return bad("has %d steps (at most %d)", len(plan.Steps), maxPlanSteps)
	}
	switch plan.Event.Kind {
	case Evacuate, Restore:
		if e.Fleet.Regions[plan.Event.Region] == nil {
			return bad("names region %q, which the fleet does not define", plan.Event.Region)
		}
	case Spill, Abort:
	default:
		return bad("names event %q", plan.Event.Kind)
	}
	maxW := e.Router.MaxWeight()
	check := func(label string, w Weights, st States, totals bool) error {
		for _, c := range slices.Sorted(maps.Keys(w)) {
			elig, ok := e.Fleet.Tenants[c]
			if !ok {
				return bad("%s: class %q is not a tenant class of %s", label, c, e.Fleet.File)
			}
			for _, r := range slices.Sorted(maps.Keys(w[c])) {
				v := w[c][r]
				if v < 0 || (maxW > 0 && v > maxW) {
					return bad("%s: class %s weight %d on %s is outside the driver's range 0..%d (%s)", label, c, v, r, maxW, RuleTotals)
				}
				if v > 0 && !slices.Contains(elig, r) {
					return bad("%s would send class %s (weight %d) to %s, outside its eligible regions %v (%s)", label, c, v, r, elig, RuleResidency)
				}
			}
			if totals && w.Total(c) != plan.Start.Weights.Total(c) {
				return bad("%s: class %s totals %d, the run started at %d (%s)", label, c, w.Total(c), plan.Start.Weights.Total(c), RuleTotals)
			}
		}
		for _, c := range slices.Sorted(maps.Keys(st)) {
			elig, ok := e.Fleet.Tenants[c]
			if !ok {
				return bad("%s: class %q is not a tenant class of %s", label, c, e.Fleet.File)
			}
			for _, r := range slices.Sorted(maps.Keys(st[c])) {
				switch v := st[c][r]; {
				case v != Ready && v != Drain && v != Maint:
					return bad("%s: class %s region %s has state %q", label, c, r, v)
				case v != Maint && !slices.Contains(elig, r):
					return bad("%s: class %s region %s is %s, outside its eligible regions %v (%s)", label, c, r, v, elig, RuleResidency)
				}
			}
		}
		return nil
	}
	if err := check("start", plan.Start.Weights, plan.Start.States, false); err != nil {
		return err
	}
	if err := check("baseline", baseline, nil, false); err != nil {
		return err
	}
	for k := range plan.Steps {
		if plan.Steps[k] == nil {
			return bad("step %d is empty", k+1)
		}
		after := plan.After(k)
		if err := check(fmt.Sprintf("step %d", k+1), after.Weights, after.States, true); err != nil {
			return err
		}
	}
	return nil
}

// RunView is what a run's journal says.
type RunView struct {
	Run         string  `json:"run"`
	Start       *Record `json:"-"`
	Plan        *Plan   `json:"plan,omitempty"`
	Last        *Record `json:"-"`
	Applied     int     `json:"steps_applied"`
	LastApplied int     `json:"last_applied"` // step index of the last result, -1 none
	InFlight    int     `json:"in_flight"`    // step with an intent and no result, -1 none
	NextStep    int     `json:"next_step"`
	Done        bool    `json:"done"`
	Closed      bool    `json:"closed"` // done, and the failover is over (back at the baseline)
	// Complete: done, and the run reached its plan's target (false: it ended held, see Held).
	Complete  bool     `json:"complete"`
	Refused   bool     `json:"refused"`
	Held      string   `json:"held,omitempty"`
	Failed    string   `json:"failed,omitempty"`
	Expired   bool     `json:"expired"`
	Results   []int    `json:"-"` // step index of every result record, in order
	Overrides []string `json:"overrides,omitempty"`
}

// ViewRun reads a run's records.
func ViewRun(run string, recs []Record, now time.Time) RunView {
	v := RunView{Run: run, LastApplied: -1, InFlight: -1}
	for i := range recs {
		r := &recs[i]
		v.Last = r
		switch r.Kind {
		case RecStart:
			v.Start, v.Plan = r, r.Plan
		case RecRollback:
			v.Plan, v.LastApplied, v.InFlight = r.Plan, -1, -1
		case RecRefused:
			v.Refused, v.Done, v.Plan = true, true, r.Plan
		case RecIntent:
			v.InFlight = *r.Step
			v.Held, v.Failed = "", ""
		case RecResult:
			v.LastApplied, v.InFlight = *r.Step, -1
			v.Applied++
			v.Results = append(v.Results, *r.Step)
		case RecHold:
			v.Held = r.Detail
		case RecFailed:
			v.Failed = r.Detail
		case RecDone:
			v.Done, v.Closed, v.Held = true, r.Closed, r.Detail
		case RecOverride:
			v.Overrides = append(v.Overrides, r.Detail)
		}
	}
	v.NextStep = max(v.InFlight, v.LastApplied) + 1
	v.Complete = v.Done && !v.Refused && v.Held == ""
	if v.Start != nil && v.Start.Expires != nil && !now.Before(*v.Start.Expires) {
		v.Expired = true
	}
	return v
}

// Expected is the router state the journal says should be in place, and whether a change
// was in flight (an intent without its result).
func (v RunView) Expected() (RouterState, bool) {
	if v.Plan == nil {
		return RouterState{}, false
	}
	if v.InFlight >= 0 {
		return v.Plan.After(v.InFlight), true
	}
	return v.Plan.After(v.LastApplied), false
}

// Status reads the latest run and the router; ErrDrift when the router is not where the
// journal says.
type Status struct {
	RunView
	Event    *Event      `json:"event,omitempty"`
	Holder   string      `json:"holder,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	Started  *time.Time  `json:"started,omitempty"`
	Expires  *time.Time  `json:"expires,omitempty"`
	Lock     *Lock       `json:"lock,omitempty"`
	Router   RouterState `json:"router"`
	Expected RouterState `json:"expected"`
	Drift    []string    `json:"drift"`
	Journal  []Record    `json:"journal"`
	// JournalErrors name the journal objects that are not valid records (read up to them);
	// LockError says the lock object is corrupt and how to break it.
	JournalErrors []string `json:"journal_errors"`
	LockError     string   `json:"lock_error,omitempty"`
}

// Status reports the latest run, the lock and the router, with drift.
func (e *Executor) Status(ctx context.Context) (*Status, error) {
	j, bad, err := scanLatestStarted(ctx, e.Store, e.fleetID())
	if err != nil {
		return nil, err
	}
	run, recs := j.Run, j.Records
	st := &Status{RunView: ViewRun(run, recs, e.now()), Journal: recs, Drift: []string{}, JournalErrors: []string{}}
	for _, b := range bad {
		st.JournalErrors = append(st.JournalErrors, b.Error())
	}
	var corrupt *LockCorruptError
	if lk, ok, err := e.locker().Read(ctx); errors.As(err, &corrupt) {
		st.LockError = corrupt.Error()
	} else if err != nil {
		return nil, err
	} else if ok && !lk.Released { // held until released or taken over: its expiry is another clock's
		st.Lock = &lk
	}
	if st.Start != nil {
		st.Event, st.Holder, st.Reason, st.Started, st.Expires = st.Start.Event, st.Start.Holder, st.Start.Reason, &st.Start.Time, st.Start.Expires
	}
	rs, err := e.readRouter(ctx)
	if err != nil {
		return st, err
	}
	st.Router = rs
	if st.Plan != nil && !st.Refused {
		want, inflight := st.RunView.Expected()
		st.Expected = want
		d := e.diff(want, rs)
		if inflight && len(d) > 0 {
			// mid-change: either side of the change is not drift
			if prev := st.Plan.After(st.InFlight - 1); len(e.diff(prev, rs)) == 0 {
				d = nil
			}
		}
		st.Drift = append(st.Drift, d...)
	}
	return st, nil
}

// latestRun is this fleet's newest run (refused ones too); "" when there is none.
func (e *Executor) latestRun(ctx context.Context) (string, []Record, error) {
	runs, err := Runs(ctx, e.Store)
	if err != nil {
		return "", nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		recs, err := ReadRun(ctx, e.Store, runs[i])
		if err != nil {
			return "", nil, err
		}
		if ofFleet(recs, e.fleetID()) {
			return runs[i], recs, nil
		}
	}
	return "", nil, nil
}

// Unlock breaks the lock with the exact id and journals it.
func (e *Executor) Unlock(ctx context.Context, id, reason string) (Lock, error) {
	by := e.holder()
	lk, err := e.locker().Break(ctx, id, by)
	var corrupt *LockCorruptError
	if errors.As(err, &corrupt) && id == corrupt.ID() {
		lk, err = e.locker().BreakCorrupt(ctx, id, by, e.tokenFloor(ctx))
	}
	if err != nil {
		return lk, err
	}
	// Journaled in the newest run, past every object there (a junk one included).
	runs, err := Runs(ctx, e.Store)
	if err == nil && len(runs) > 0 {
		var rj RunJournal
		run := runs[len(runs)-1]
		if rj, err = ScanRun(ctx, e.Store, run); err != nil {
			return lk, fmt.Errorf("lock %s released, but not journaled: %w", lk.ID, err)
		}
		j := &Journal{Store: e.Store, Run: run, Holder: by, Token: lk.Token, next: rj.Next, Now: e.Now}
		_, err = j.Append(ctx, Record{Kind: RecUnlock, Reason: reason, Detail: fmt.Sprintf("lock %s of %s (since %s, token %d) broken by %s", lk.ID, lk.Holder, lk.Since.Format(time.RFC3339), lk.Token, by)})
	}
	return lk, err
}

// tokenFloor is the fencing token a replacement of a corrupt lock takes: past the newest run's
// (its id starts with the token it was taken with) and every token its records carry.
func (e *Executor) tokenFloor(ctx context.Context) int64 {
	runs, err := Runs(ctx, e.Store)
	if err != nil || len(runs) == 0 {
		return 1
	}
	run := runs[len(runs)-1]
	floor := runOrder(run)
	if j, err := ScanRun(ctx, e.Store, run); err == nil {
		for _, r := range j.Records {
			floor = max(floor, r.Token)
		}
	}
	return max(floor, 0) + 1
}

// ResultCounts counts result records per step index (a test and audit aid: each step applied
// once).
func (v RunView) ResultCounts() map[int]int {
	out := map[int]int{}
	for _, k := range v.Results {
		out[k]++
	}
	return out
}

// LiveInput reads the router, the journal's history and fresh signals (with the warm prober)
// into a planner input, as Run would plan — for `failover plan` without --signals.
func (e *Executor) LiveInput(ctx context.Context, o RunOptions) (PlanInput, error) {
	h, err := e.history(ctx)
	if err != nil {
		return PlanInput{}, err
	}
	rs, err := e.readRouter(ctx)
	if err != nil {
		return PlanInput{}, err
	}
	sig, err := e.Signals.Signals(ctx, true)
	if err != nil {
		return PlanInput{}, err
	}
	return e.Input(ctx, rs, sig, h, o), nil
}
