package failover

import (
	"fmt"
)

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
	if out.Plan != nil {
		// back to the baseline for the classes the run covered only: the others are not its own
		ro.Classes, ro.SkipBlocked = out.Plan.Classes, false
	}
	back := MakePlan(e.Input(ctx, rs, sig, h, ro))
	if _, err := s.j.Append(ctx, Record{Kind: RecRollback, Detail: why, Plan: back}); err != nil {
		return out, err
	}
	e.log().Warn("rolling back", "why", why, "steps", len(back.Steps))
	if back.Refused || len(back.Steps) == 0 {
		// The rollback record is the hold: ViewRun reads it as one (rollbackBlocked), so that
		// status and the operator who asked for the abort read why it stopped where it did.
		out.Plan, out.Held, out.Instead = back, rollbackBlocked(why, back), finishInstead(h.out, o.Event)
		return out, fmt.Errorf("%w: %s; and %w (%s): %s", ErrHeld, why, ErrRollbackBlocked, back.Rule, blockedBy(back))
	}
	out.Plan = back
	res, err := e.steps(s, ro, back, 0, h, out)
	if res != nil && res.Instead != nil {
		res.Instead = finishInstead(h.out, o.Event) // the run's own evacuation too
	}
	if err == nil {
		res.Held = why + "; rolled back to the baseline" // what the verdict line says
		err = fmt.Errorf("%w: %s; %w", ErrHeld, why, ErrRolledBack)
	}
	return res, err
}

// blockedBy is what stops a plan, said once (Plan.Reason repeats Plan.Hold for a held plan).
func blockedBy(p *Plan) string {
	if p.Refused || p.Hold == "" {
		return p.Reason
	}
	return p.Hold
}

// rollbackBlocked is the hold of a run whose way back to the baseline cannot start: why it
// turned back, and what blocks the way back.
func rollbackBlocked(why string, back *Plan) string {
	return fmt.Sprintf("%s; the rollback to the baseline cannot start (%s): %s", why, back.Rule, blockedBy(back))
}
