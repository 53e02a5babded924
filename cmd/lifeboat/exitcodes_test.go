package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/providers"
	"lifeboat/verify"
)

// TestExitTable holds the one mapping to DESIGN's contract: every class, wrapped the way the
// commands wrap it, exits with its code.
func TestExitTable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("failover run: step 2: %w", err) }
	cases := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{wrap(&failover.LockHeldError{}), exitRefused},
		{wrap(failover.ErrRefused), exitRefused},
		{wrap(failover.ErrLockLost), exitRefused},
		{wrap(failover.ErrIncomplete), exitRefused},
		{wrap(failover.ErrHeld), exitProblem},
		{wrap(failover.ErrDrift), exitProblem},
		{wrap(failover.ErrRouterUnreachable), exitUnreachable},
		{wrap(drills.ErrInvalidDrill), exitUsage},
		{wrap(drills.ErrLeftovers), exitRefused},
		{wrap(drills.ErrDrillRunning), exitRefused},
		{wrap(verify.ErrFailed), exitProblem},
		{problem("lint found 2 errors"), exitProblem},
		{wrap(context.Canceled), exitInterrupted},
		{wrap(providers.ErrUnreachable), exitUnreachable},
		{wrap(errors.New("no such file")), exitUsage},
		{usageErr("bad flag"), exitUsage},
		{withCode(exitRefused, errors.New("explicit")), exitRefused},
		// a refusal wins over the interruption that ended the run it refused
		{wrap(errors.Join(failover.ErrRefused, context.Canceled)), exitRefused},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
	for _, r := range exitTable {
		if r.name == "" || r.match == nil || r.code < 1 || r.code > exitInterrupted {
			t.Errorf("exit table row %+v: a name, a matcher and a code 1..130", r)
		}
	}
}
