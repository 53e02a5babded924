package failover

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
)

// Run plans the event from the live router and signals (preflight: the warm prober on every
// region), then carries it out under the lock.
func (e *Executor) Run(ctx context.Context, o RunOptions) (*Outcome, error) {
	if err := e.enforceTrust(ctx, o.Event.Kind); err != nil {
		return nil, err
	}
	take := takeNone
	if o.Event.Kind == Abort {
		take = takeDead // undoing a dead run's changes is what abort is for
	}
	s, err := e.begin(ctx, "failover "+o.Event.String(), o.Reason, "", 0, take)
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
	s.kept = s.kept.Merge(h.kept)
	if (o.Event.Kind == Restore || o.Event.Kind == Abort) && h.baseline == nil {
		return nil, fmt.Errorf("%w: %w (the journal has no baseline to go back to)", ErrRefused, ErrNoneOpen)
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
	if o.Saved != nil {
		if changed := e.savedPlanChanges(o.Saved, plan); len(changed) > 0 {
			why := fmt.Sprintf("saved plan %s no longer holds: %s; nothing changed. Review the plan as it is now: lifeboat failover plan %s --out %s", o.SavedName, strings.Join(changed, "; "), o.Event.Flags(), o.SavedName)
			if o.Plan != nil {
				o.Plan(plan)
			}
			_, _ = s.j.Append(ctx, Record{Kind: RecRefused, Event: &o.Event, Reason: o.Reason, Detail: why, Plan: plan})
			return &Outcome{Run: run, Plan: plan, Final: rs}, fmt.Errorf("%w: %s", ErrRefused, why)
		}
		plan = o.Saved
	}
	if o.Saved == nil && o.Event.Kind == Restore && plan.Hold != "" && len(plan.Steps) == 0 && o.HoldTimeout > 0 {
		plan, err = e.awaitDwell(s, o, h, plan)
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
			if o.Event.Kind == Abort {
				out.Instead = finishInstead(h.out, Event{})
			}
			return out, fmt.Errorf("%w: %s", ErrRefused, plan.Verdict())
		}
		out.Complete = true
		return out, nil
	}
	if !plan.Complete && !o.AllowPartial && !(o.SkipBlocked && plan.OnlyBlocked()) && o.Confirm == nil {
		why := plan.Verdict() + "; nothing changed (accept a plan that cannot complete with --allow-partial, or answer its prompt)"
		_, _ = s.j.Append(ctx, Record{Kind: RecRefused, Event: &o.Event, Reason: o.Reason, Detail: why, Plan: plan})
		out.Held = why
		return out, fmt.Errorf("%w: %s", ErrIncomplete, why)
	}
	if o.Confirm != nil && !o.Confirm(plan) {
		return out, errors.New("cancelled: nothing changed")
	}
	if e.BeforeChange != nil {
		if err := e.BeforeChange(run, s.j.Token); err != nil {
			return out, fmt.Errorf("before run %s changes anything: %w", run, err)
		}
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
func (e *Executor) awaitDwell(s *session, o RunOptions, h failoverState, plan *Plan) (*Plan, error) {
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
		if err := wait.Sleep(ctx, e.Fleet.Failover.StepInterval); err != nil {
			return nil, err
		}
		var err error
		if sig, err = e.Signals.Signals(ctx, plan.Rule == RuleWarm); err != nil {
			return nil, err
		}
		rs, err := s.observe(ctx) // the plan is made from it: the first write is conditional on it
		if err != nil {
			return nil, err
		}
		plan = MakePlan(e.Input(ctx, rs, sig, h, o))
	}
	return plan, nil
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
			e.log().Info(fmt.Sprintf("waiting step_interval %s until %s before step %d/%d", pol.StepInterval, e.now().Add(pol.StepInterval).Format(waitClock), k+1, len(plan.Steps)))
			if err := wait.Sleep(ctx, pol.StepInterval); err != nil {
				return out, err
			}
		}
		if k > 0 && plan.Event.Kind != Abort {
			req, err := s.abortRequested(ctx)
			if err != nil {
				return out, err
			}
			if req != nil {
				return e.honourAbort(s, o, h, req, out)
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
		// The rules are checked again from the second step on (and on a resume's first); the
		// stop conditions before every write, the first one included.
		if held, stop, err := e.checkBefore(s, o, plan, k, h, &cur, k > 0 || o.resumed); err != nil || held != "" {
			if err == nil && o.RollbackOnFail && plan.Event.Kind != Abort && (k > 0 || o.resumed) {
				// the way back is not held by the conditions that turned it back
				ro := o
				ro.Overrides = append(slices.Clone(o.Overrides), stop...)
				return e.rollback(s, ro, h, held, out)
			}
			if err == nil && plan.Event.Kind == Abort {
				// resume goes on back to the baseline; aborting again is the same way
				out.Held, out.Instead = held, finishInstead(h.out, Event{})
				err = fmt.Errorf("%w at step %d of %d of the way back to the baseline: %s", ErrHeld, k+1, len(plan.Steps), held)
			} else if err == nil && len(stop) > 0 {
				out.Held = fmt.Sprintf("before step %d/%d: %s", k+1, len(plan.Steps), held)
				err = fmt.Errorf("%w before step %d/%d: %s; nothing more was written (when it clears, `lifeboat failover resume` evaluates it again and goes on; `lifeboat failover resume --override %s` goes on past it, journaled; or `lifeboat failover abort`)",
					ErrHeld, k+1, len(plan.Steps), held, stop[0])
			} else if err == nil {
				out.Held = held
				err = fmt.Errorf("%w at step %d of %d: %s (fix it and run `lifeboat failover resume`, or `lifeboat failover abort`)", ErrHeld, k+1, len(plan.Steps), held)
			} else if errors.Is(err, ErrDrift) {
				out.Held = err.Error()
			}
			return out, err
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
	detail := plan.Hold
	if detail == "" && !plan.Complete {
		detail = plan.Verdict() // short of the target: a --skip-blocked run left classes untouched
	}
	if _, err = s.j.Append(ctx, Record{Kind: RecDone, Detail: detail, After: &fin, Closed: closed}); err != nil {
		return out, err
	}
	if !plan.Complete {
		out.Held = plan.Verdict()
		if plan.Event.Kind == Abort {
			out.Instead = finishInstead(h.out, Event{})
		}
		return out, fmt.Errorf("%w: %s", ErrIncomplete, plan.Verdict())
	}
	out.Complete = true
	return out, nil
}

// checkDrift compares the router as read now with what this run last read back; a difference
// is journaled as a hold naming the drift and returned as ErrHeld and ErrDrift.
func (e *Executor) checkDrift(s *session, plan *Plan, k int, cur router.RouterState) error {
	if s.lastRead == nil {
		return nil
	}
	d := e.diff(plan.Scope(*s.lastRead), cur) // the classes the run covers: the others are not its own
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

// checkBefore checks step k before it is written: with rules, the rules from fresh signals
// and the router's current state; always, the fleet's stop conditions in the step's scope. It
// returns the hold reason ("" to go on) and the names of the stop conditions that hold it,
// re-trying for o.HoldTimeout.
func (e *Executor) checkBefore(s *session, o RunOptions, plan *Plan, k int, h failoverState, cur *router.RouterState, rules bool) (string, []Rule, error) {
	ctx := s.ctx
	deadline := e.now().Add(o.HoldTimeout)
	for {
		var vs []Violation
		if rules {
			sig, err := e.Signals.Signals(ctx, false)
			if err != nil {
				return "", nil, err
			}
			in := e.Input(ctx, *cur, sig, h, o)
			in.Event = plan.Event
			vs = CheckStep(in, plan.Steps[k])
		}
		stop, err := e.checkStop(ctx, o, plan, k, *cur)
		if err != nil {
			return "", nil, err
		}
		var names []Rule
		for _, r := range stop {
			vs = append(vs, r.Violation())
			names = append(names, Rule(r.Name))
		}
		if len(vs) == 0 {
			return "", nil, nil
		}
		why := vs[0].String()
		if !vs[0].StopCondition() {
			names = nil // the rules hold it: a stop condition failing too is on the record
		}
		step := k
		if _, err := s.j.Append(ctx, Record{Kind: RecHold, Step: &step, Detail: why, Violations: vs}); err != nil {
			return "", nil, err
		}
		e.log().Warn("hold", "step", k+1, "why", why)
		if !e.now().Before(deadline) {
			return why, names, nil
		}
		if err := wait.Sleep(ctx, e.Fleet.Failover.StepInterval); err != nil {
			return "", nil, err
		}
		if *cur, err = e.readRouter(ctx); err != nil {
			return "", nil, err
		}
		if err := e.checkDrift(s, plan, k, *cur); err != nil {
			return "", nil, err
		}
	}
}

// stopChecker is e.Stop, or the fleet's own; nil when the fleet has no stop conditions.
func (e *Executor) stopChecker() *StopChecker {
	e.stopOnce.Do(func() {
		if e.Stop == nil && len(e.Fleet.StopConditions) > 0 {
			e.Stop = &StopChecker{Fleet: e.Fleet, Now: e.Now}
		}
	})
	return e.Stop
}

// checkStop evaluates the stop conditions in the scope of step k (what it changes from cur),
// logs and hands on every result, and returns those that hold the run.
func (e *Executor) checkStop(ctx context.Context, o RunOptions, plan *Plan, k int, cur router.RouterState) ([]StopResult, error) {
	c := e.stopChecker()
	if c == nil {
		return nil, nil
	}
	rs, err := c.Check(ctx, stepScope(cur, plan.Steps[k]), o.Overrides)
	if err != nil {
		return nil, err
	}
	var held []StopResult
	for _, r := range rs {
		step := k
		r.Step = &step
		switch {
		case r.Holds():
			held = append(held, r)
			e.log().Warn("stop condition fails", "step", k+1, "condition", r.Name, "region", r.Region, "why", r.Why)
		case r.DryRun && !r.Pass:
			e.log().Warn("stop condition fails (dry_run: reported, never holds)", "step", k+1, "condition", r.Name, "region", r.Region, "why", r.Why)
		default:
			e.log().Info("stop condition", "step", k+1, "condition", r.Name, "region", r.Region, "why", r.Why)
		}
		if e.OnStop != nil {
			e.OnStop(r)
		}
	}
	return held, nil
}

// waitClock is how the wait lines name the time they wait until: the UTC clock.
const waitClock = "15:04:05Z"

// waitDrain waits until every region withdrawn in st runs fewer than drain_running_below
// requests, or drain_timeout passes.
func (e *Executor) waitDrain(s *session, st *Step, k int) error {
	ctx := s.ctx
	pol := e.Fleet.Failover
	deadline := e.now().Add(pol.DrainTimeout)
	poll := min(max(pol.StepInterval/4, 100*time.Millisecond), 5*time.Second)
	detail := ""
	e.log().Info(fmt.Sprintf("draining %s until %s (drain_timeout %s) or until its in-flight requests fall under drain_running_below %d, before step %d",
		strings.Join(st.Withdraw, ", "), deadline.Format(waitClock), pol.DrainTimeout, pol.DrainRunningBelow, k+1))
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
			detail = fmt.Sprintf("drain_timeout %s passed with %s", pol.DrainTimeout, strings.Join(busy, ", "))
			break
		}
		e.log().Info("draining", "busy", strings.Join(busy, ", "))
		if err := wait.Sleep(ctx, poll); err != nil {
			return err
		}
	}
	step := k
	_, err := s.j.Append(ctx, Record{Kind: RecDrainWait, Step: &step, Detail: detail})
	return err
}

// preflight reads every region's signals with the warm prober, as run does before planning:
// a resume after Ctrl-C or kill -9 is a new process that has probed nothing yet.
func (e *Executor) preflight(ctx context.Context) (map[string]RegionSignal, error) {
	from := "live: the warm prober, /health, /metrics"
	if d, ok := e.Signals.(interface{ Describe() string }); ok {
		from = d.Describe()
	}
	e.log().Info("preflight: reading every region's signals (" + from + ")")
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

// LiveInput reads the router, the journal's history and fresh signals (with the warm prober)
// into a planner input, as Run would plan — for `failover plan` without --signals.
func (e *Executor) LiveInput(ctx context.Context, o RunOptions) (PlanInput, error) {
	h, err := e.history(ctx)
	if err != nil {
		return PlanInput{}, err
	}
	if (o.Event.Kind == Restore || o.Event.Kind == Abort) && h.baseline == nil {
		// As run refuses it: a plan of a restore with nothing to restore would show a hold (a
		// dwell it cannot observe) for a run that can only be refused.
		return PlanInput{}, fmt.Errorf("%w: %w (the journal has no baseline to go back to)", ErrRefused, ErrNoneOpen)
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
