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
		out.Held = why
		return out, fmt.Errorf("%w: %s; and %w: %s%s", ErrHeld, why, ErrRollbackBlocked, back.Reason, back.Hold)
	}
	out.Plan = back
	res, err := e.steps(s, ro, back, 0, h, out)
	if err == nil {
		res.Held = why + "; rolled back to the baseline" // what the verdict line says
		err = fmt.Errorf("%w: %s; %w", ErrHeld, why, ErrRolledBack)
	}
	return res, err
}
