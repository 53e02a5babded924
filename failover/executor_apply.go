package failover

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
)

// apply journals the intent, changes the router, reads it back and journals the result.
func (e *Executor) apply(s *session, plan *Plan, k int, before router.RouterState) error {
	return e.applyStep(s, plan, k, before, false)
}

// applyStep is apply; inherited says the step's intent was another holder's (resume), whose
// write may still land while this one is made: a conditional write that finds the router
// changed, every class now reading either as the step's intent (that write, landed) or as this
// run read it (before), is that holder's own write, not someone else's edit; the step is
// finished from there (written again conditionally on what the router reads now).
func (e *Executor) applyStep(s *session, plan *Plan, k int, before router.RouterState, inherited bool) error {
	ctx := s.ctx
	target := plan.Scope(plan.After(k)) // never a class the plan does not cover
	if err := s.checkLock(ctx); err != nil {
		return err
	}
	step := k
	if _, err := s.j.Append(ctx, Record{Kind: RecIntent, Step: &step, Before: &before, Target: &target}); err != nil {
		return err
	}
	e.log().Info("applying", "step", fmt.Sprintf("%d/%d", k+1, len(plan.Steps)), "weights", plan.Steps[k].Weights.Text(), "drain", strings.Join(plan.Steps[k].Drain, ","), "withdraw", strings.Join(plan.Steps[k].Withdraw, ","))
	after, err := e.applyAndReadBack(s, target)
	detail := ""
	if err != nil && inherited && errors.Is(err, router.ErrRouterConflict) {
		if now, v, rerr := e.readVersioned(ctx); rerr == nil && e.onlyTowards(before, target, now) {
			detail = "the previous holder's write landed while this one took the step over: finished from there"
			e.log().Info("the router changed to the interrupted step's intent while resume took over: the previous holder's write landed; finishing the step", "step", k+1)
			s.seen = v
			after, err = e.applyAndReadBack(s, target)
		}
	}
	if err != nil {
		_, _ = s.j.Append(ctx, Record{Kind: RecFailed, Step: &step, Detail: err.Error()})
		return err
	}
	s.lastRead = &after
	if e.AfterApply != nil {
		e.AfterApply(k)
	}
	_, err = s.j.Append(ctx, Record{Kind: RecResult, Step: &step, Before: &before, After: &after, Detail: detail})
	return err
}

// onlyTowards says whether every class of target reads in now either as in target or as in
// before: nothing but a write of target (whole classes at a time) happened since before.
func (e *Executor) onlyTowards(before, target, now router.RouterState) bool {
	for c := range target.Weights {
		only := []string{c}
		if len(e.diff(restrictTo(target, only), restrictTo(now, only))) > 0 && len(e.diff(restrictTo(before, only), restrictTo(now, only))) > 0 {
			return false
		}
	}
	return true
}

// applyAndReadBack writes target conditionally on the router's version this run last saw, the
// lease checked immediately before every router call, then reads back (the next write's version).
func (e *Executor) applyAndReadBack(s *session, target router.RouterState) (router.RouterState, error) {
	ctx := s.ctx
	if s.seen == nil {
		if err := s.fence(); err != nil {
			return router.RouterState{}, err
		}
		if _, err := s.observe(ctx); err != nil {
			return router.RouterState{}, err
		}
	}
	target = target.Clone()
	target.Kept = target.Kept.Merge(restrictTo(router.RouterState{Kept: s.kept}, slices.Collect(maps.Keys(target.Weights))).Kept)
	if err := router.ApplyIf(ctx, e.Router, target, s.seen, s.fence); err != nil {
		return router.RouterState{}, fmt.Errorf("apply to %s: %w", e.Router, err)
	}
	if err := s.fence(); err != nil {
		return router.RouterState{}, err
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

// reassert puts back a state the journal says this run reached (step, the index of its last
// result) that the router no longer holds: checked first as one immediate step from the router
// as it is now (residency, totals, warm, headroom... — step_percent and the drain wait do not
// apply: the run already ramped there), then under the lock, intent first, applied and read back.
func (e *Executor) reassert(s *session, o RunOptions, h failoverState, step int, cur, target router.RouterState) (router.RouterState, error) {
	target = restrictTo(target, o.Classes)
	ctx := s.ctx
	sig, err := e.Signals.Signals(ctx, false)
	if err != nil {
		return cur, err
	}
	in := e.Input(ctx, cur, sig, h, o)
	in.Immediate = true
	// A drift may have changed a class's total (someone's edit): putting back the journaled
	// total (validated against the run's start by validateJournaled) is the point.
	st := stepTo(e.Fleet, target, o.Classes)
	vs := slices.DeleteFunc(CheckStep(in, st), func(v Violation) bool { return v.Rule == RuleTotals && v.Region == "" })
	// A re-assert is a router write like any step: the fleet's stop conditions hold it too.
	if c := e.stopChecker(); c != nil {
		rs, err := c.Check(ctx, stepScope(cur, st), o.Overrides)
		if err != nil {
			return cur, err
		}
		for _, r := range rs {
			r.Step = &step
			if r.Holds() {
				vs = append(vs, r.Violation())
				e.log().Warn("stop condition fails", "re-assert of step", step+1, "condition", r.Name, "region", r.Region, "why", r.Why)
			}
			if e.OnStop != nil {
				e.OnStop(r)
			}
		}
	}
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
	e.log().Info("re-asserting", "step", step+1, "drift", strings.Join(e.diff(target, cur), "; "))
	after, err := e.applyAndReadBack(s, target)
	if err != nil {
		_, _ = s.j.Append(ctx, Record{Kind: RecFailed, Step: &step, Detail: err.Error()})
		return cur, err
	}
	s.lastRead = &after
	_, err = s.j.Append(ctx, Record{Kind: RecReassert, Step: &step, Before: &cur, After: &after})
	return after, err
}

// restrictTo is rs restricted to classes (all of rs when empty).
func restrictTo(rs router.RouterState, classes []string) router.RouterState {
	return (&Plan{Classes: classes}).Scope(rs)
}

// stepTo is the step that sets every class of the fleet to target (complete vectors and states);
// a target restricted to some classes (Plan.Scope) sets only those.
func stepTo(f *fleet.Fleet, target router.RouterState, classes []string) *Step {
	st := &Step{Weights: router.Weights{}, States: router.States{}}
	for c, elig := range f.Tenants {
		if len(classes) > 0 && !slices.Contains(classes, c) {
			continue
		}
		if vec, ok := target.Weights[c]; ok {
			st.Weights[c] = maps.Clone(vec)
		}
		for _, r := range elig {
			st.States.Set(c, r, target.States.Get(c, r))
		}
	}
	return st
}
