package failover

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"lifeboat/fleet/router"
)

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
	s, err := e.begin(ctx, "failover resume "+peek, o.Reason, peek, len(precs), takeSilent)
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
	plan.Complete = !plan.Refused && plan.Hold == "" && len(plan.Shed) == 0 && len(plan.Blocked) == 0
	// A run that covered some classes (--class, --skip-blocked) resumes those only: every
	// comparison, re-assert and write is restricted to them.
	// --override given to resume names stop conditions only (the CLI checks): they join the
	// run's own overrides, each journaled below.
	var extra []Rule
	for _, r := range o.Overrides {
		if !slices.Contains(plan.Overrides, r) && !slices.Contains(extra, r) {
			extra = append(extra, r)
		}
	}
	o.Event, o.Overrides, o.Immediate, o.resumed = plan.Event, append(slices.Clone(plan.Overrides), extra...), plan.Immediate, true
	o.Classes, o.SkipBlocked = plan.Classes, false
	h, err := e.history(ctx)
	if err != nil {
		return out, err
	}
	s.kept = s.kept.Merge(h.kept)
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
	sig, err := e.preflight(ctx)
	if err != nil {
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
	for _, r := range extra {
		if _, err := s.j.Append(ctx, Record{Kind: RecOverride, Reason: o.Reason, Detail: fmt.Sprintf("rule %s bypassed by %s (on resume)", r, s.j.Holder)}); err != nil {
			return out, err
		}
	}
	s.lastRead = &cur
	if v.InFlight >= 0 {
		replanned, err := e.resumeInFlight(s, o, h, plan, v, cur, sig, out)
		if err != nil || replanned != nil {
			return out, err
		}
	} else if v.LastApplied >= 0 {
		if target := plan.Scope(plan.After(v.LastApplied)); len(e.diff(target, cur)) > 0 {
			if _, err := e.reassert(s, o, h, v.LastApplied, cur, target); err != nil {
				return out, err
			}
		}
	}
	next := max(v.InFlight, v.LastApplied) + 1
	return e.steps(s, o, plan, next, h, out)
}

// resumeInFlight settles the step whose intent was journaled and whose result was not, from the
// router as it reads now, under the lock:
//   - the router reads as that intent: the previous holder's own write landed; its result is
//     journaled (nothing is written again) and the run goes on;
//   - the step can be made from here: it is checked (checkBefore) and applied; a conditional write
//     that finds the router changed meanwhile towards the intent is that same write landing late,
//     and the step is finished from there (applyStep);
//   - the step would move more than step_percent from here (the router restarted or reloaded
//     from its configuration during the step): the rest of the run is planned again from the
//     router as it reads, with every rule of a new plan (step_percent from here, residency,
//     headroom...), journaled (replan) and carried out. A replan is returned (non-nil) when the
//     run went on with it: out then says how it ended.
func (e *Executor) resumeInFlight(s *session, o RunOptions, h failoverState, plan *Plan, v RunView, cur router.RouterState, sig map[string]RegionSignal, out *Outcome) (*Plan, error) {
	ctx := s.ctx
	k := v.InFlight
	target := plan.Scope(plan.After(k))
	if len(e.diff(target, cur)) == 0 {
		return nil, e.settleLanded(s, plan, k, cur, out)
	}
	in := e.Input(ctx, cur, sig, h, o)
	in.Event = plan.Event
	vs := CheckStep(in, plan.Steps[k])
	if i := slices.IndexFunc(vs, func(v Violation) bool { return v.Rule == RuleStep }); i >= 0 {
		return e.replan(s, o, h, plan, k, cur, sig, vs[i], out)
	}
	if held, stop, err := e.checkBefore(s, o, plan, k, h, &cur, true); err != nil || held != "" {
		if err == nil && len(stop) > 0 {
			out.Held = fmt.Sprintf("before step %d/%d: %s", k+1, len(plan.Steps), held)
			err = fmt.Errorf("%w before step %d/%d: %s; nothing more was written (when it clears, `lifeboat failover resume` evaluates it again and goes on; `lifeboat failover resume --override %s` goes on past it, journaled; or `lifeboat failover abort`)",
				ErrHeld, k+1, len(plan.Steps), held, stop[0])
		} else if err == nil {
			out.Held = held
			err = fmt.Errorf("%w at step %d of %d: %s (fix it and run `lifeboat failover resume` again, or `lifeboat failover abort`)", ErrHeld, k+1, len(plan.Steps), held)
		}
		return nil, err
	}
	if err := e.applyStep(s, plan, k, cur, true); err != nil {
		return nil, err
	}
	out.Steps++
	return nil, nil
}

// settleLanded journals the result of step k, which the router already reads as (now): the
// previous holder's write, made under its token, landed before or while this one took over.
func (e *Executor) settleLanded(s *session, plan *Plan, k int, now router.RouterState, out *Outcome) error {
	step := k
	before := plan.Scope(plan.After(k - 1))
	e.log().Info("the router already reads as the interrupted step's intent: the previous holder's write landed; recording its result", "step", fmt.Sprintf("%d/%d", k+1, len(plan.Steps)))
	if _, err := s.j.Append(s.ctx, Record{Kind: RecResult, Step: &step, Before: &before, After: &now,
		Detail: "the router read as this step's journaled intent when resume took over: the previous holder's write landed (nothing written again)"}); err != nil {
		return err
	}
	if _, err := s.observe(s.ctx); err != nil { // the next write is conditional on this version
		return err
	}
	s.lastRead = &now
	out.Steps++
	return nil
}

// replan plans the rest of the run again from the router as it reads now (cur), under the lock:
// the step in flight cannot be made from here within step_percent (v). The new plan is made by
// the planner with every rule, journaled (RecReplan) before its first change, and carried out. A
// plan from here that is refused is journaled as a hold on the step in flight (the run's own plan
// stays in force) and refused.
func (e *Executor) replan(s *session, o RunOptions, h failoverState, old *Plan, k int, cur router.RouterState, sig map[string]RegionSignal, v Violation, out *Outcome) (*Plan, error) {
	ctx := s.ctx
	ro := o
	ro.Event, ro.Classes, ro.Immediate = old.Event, old.Classes, old.Immediate // ro.Overrides: the run's, and resume's own
	next := MakePlan(e.Input(ctx, cur, sig, h, ro))
	why := fmt.Sprintf("step %d of %d cannot be made from the router as it reads now (%s): the router restarted or reloaded during the step; the rest of the run is planned again from here", k+1, len(old.Steps), v)
	if next.Refused {
		step := k
		why += "; and the plan from here is refused: " + next.Reason
		if _, err := s.j.Append(ctx, Record{Kind: RecHold, Step: &step, Detail: why, Violations: []Violation{v}}); err != nil {
			return nil, err
		}
		out.Held = why
		return next, fmt.Errorf("%w: %s", ErrRefused, why)
	}
	if _, err := s.j.Append(ctx, Record{Kind: RecReplan, Detail: why, Plan: next}); err != nil {
		return nil, err
	}
	e.log().Warn("re-planning", "why", why, "steps", len(next.Steps))
	out.Plan = next
	if o.Plan != nil {
		o.Plan(next)
	}
	res, err := e.steps(s, ro, next, 0, h, out)
	if res != nil {
		*out = *res
	}
	return next, err
}

// validateJournaled checks a journaled plan and baseline against this fleet before resume or
// re-assert applies any of it. The journal is input like any other: a plan this fleet's planner
// could not have made — a class or region the fleet does not have, weight outside a class's
// eligible regions, a total that changes, a weight out of the driver's range — is refused
// (ErrRefused, a refusal) and nothing is applied.
func (e *Executor) validateJournaled(run string, plan *Plan, baseline router.Weights) error {
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
	check := func(label string, w router.Weights, st router.States, totals bool) error {
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
				case v != router.Ready && v != router.Drain && v != router.Maint:
					return bad("%s: class %s region %s has state %q", label, c, r, v)
				case v != router.Maint && !slices.Contains(elig, r):
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
