package main

import (
	"context"
	"errors"

	"lifeboat/drills"
	"lifeboat/failover"
	"lifeboat/fleet/router"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/verify"
)

// Exit codes, the same for every command (docs/exit-codes.md). The domain packages name classes
// of outcome (refused, held, unreachable…) with their error values; exitTable below is the one
// place that turns a class into a number.
const (
	exitOK          = 0
	exitProblem     = 1 // a check found a problem
	exitUsage       = 2 // bad input or usage
	exitRefused     = 3 // refused for safety
	exitUnreachable = 4 // a dependency stayed unreachable
	// exitInterrupted is 128+SIGINT, what a shell reports for a program Ctrl-C ended: the run
	// stopped before it could say anything about the rest (SIGTERM exits 143, 128+15).
	exitInterrupted = 130
)

// exitRule is one row of exitTable: the errors a class covers and its exit code.
type exitRule struct {
	name  string // the class, as docs/exit-codes.md's "From an error to its code" names it
	code  int
	match func(error) bool
}

// isAny matches an error that is any of targets.
func isAny(targets ...error) func(error) bool {
	return func(err error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
}

// exitTable is the one mapping from an error to the exit status, first match wins. An explicit
// code (exitError) comes before it; an error no row matches — not found, denied, misconfigured,
// invalid input, anything unclassified — is bad input (2). A run that a signal ended exits
// 128+signo whatever its error says (see finish). docs/exit-codes.md says all this and lists the
// rows in this order (TestExitCodesDocMatchesTheTable).
var exitTable = []exitRule{
	{"manifest not signed by an accepted key (trust:)", exitRefused, isAny(signature.ErrUntrusted)},
	{"failover lock held by another run", exitRefused, func(err error) bool {
		var held *failover.LockHeldError
		return errors.As(err, &held)
	}},
	{"failover refused for safety", exitRefused, isAny(failover.ErrRefused, router.ErrRouterTopology,
		failover.ErrExpired, failover.ErrLockLost, router.ErrRouterConflict, failover.ErrTokenExhausted,
		failover.ErrIncomplete, failover.ErrBadJournal, failover.ErrLockCorrupt)},
	{"drill file invalid", exitUsage, isAny(drills.ErrInvalidDrill)},
	{"saved failover plan unreadable or edited", exitUsage, isAny(failover.ErrNotSavedPlan)},
	{"drill refused (not at baseline, leftovers, another drill running)", exitRefused,
		isAny(drills.ErrNotAtBaseline, drills.ErrLeftovers, drills.ErrDrillRunning)},
	{"a check found a problem", exitProblem, isAny(errProblem, verify.ErrFailed)},
	{"interrupted", exitInterrupted, func(err error) bool {
		return errors.Is(err, context.Canceled) || providers.KindOf(err) == providers.KindCanceled
	}},
	{"failover held, drifted or nothing to resume", exitProblem, isAny(failover.ErrHeld, failover.ErrDrift, failover.ErrNothingToResume)},
	{"router unreachable", exitUnreachable, isAny(router.ErrRouterUnreachable)},
	{"bytes do not match", exitProblem, func(err error) bool { return providers.KindOf(err) == providers.KindContentMismatch }},
	{"a dependency stayed unreachable or timed out", exitUnreachable, func(err error) bool {
		k := providers.KindOf(err)
		return k == providers.KindUnreachable || k == providers.KindTimeout
	}},
}

// exitCode is the exit status of a command that returned err.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	for _, r := range exitTable {
		if r.match(err) {
			return r.code
		}
	}
	return exitUsage
}
