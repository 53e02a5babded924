package failover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/lockowner"
	"lifeboat/internal/base/shell"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
)

// Errors the CLI maps to exit codes.
var (
	// ErrRefused: the plan was refused for safety (a refusal); nothing changed. It is
	// fleet.ErrRefused, which a launcher kind's refusals match too.
	ErrRefused = fleet.ErrRefused
	// ErrHeld: a check failed between steps and the run holds (a problem found).
	ErrHeld = errors.New("failover held")
	// ErrDrift: the router does not route as the journal says (a problem found).
	ErrDrift = errors.New("router drift")
	// ErrExpired: the failover passed failover.expires (resume refuses; restore it).
	ErrExpired = errors.New("failover expired")
	// ErrNothingToResume: the latest run finished (or there is none).
	ErrNothingToResume = errors.New("nothing to resume")
	// ErrIncomplete: the plan cannot reach its target (traffic it cannot place, a failback that
	// stops short): held for safety (a refusal), with the rule and what is left.
	ErrIncomplete = errors.New("held for safety")
	// ErrNoneOpen (with ErrRefused): restore or abort with no open failover to go back from.
	ErrNoneOpen = errors.New("no failover is open")
	// ErrRolledBack (with ErrHeld): a check failed and --rollback-on-fail stepped back.
	ErrRolledBack = errors.New("rolled back")
	// ErrRollbackBlocked (with ErrHeld): a check failed and the way back cannot start either.
	ErrRollbackBlocked = errors.New("the rollback cannot start")
)

// Executor carries out plans on a router under the lock, journaling every change. Its work is
// split by concern, one file each:
//
//	executor.go           the type, its options and outcome, reading the router
//	executor_lease.go     the lock: taking it, renewing it, fencing every write, breaking it
//	executor_history.go   what the journal says: the open failover, transitions, latest runs
//	executor_run.go       run: plan, confirm, then each step checked, drained and applied
//	executor_apply.go     one change: intent, conditional write, read-back, result; re-assert
//	executor_rollback.go  stepping back to the baseline when a check fails
//	executor_resume.go    resume: the journal re-validated, then carried on from it
//	executor_status.go    the view of a run's journal and status
//	executor_runs.go      the recent runs as status lists them: outcome, who, steps
type Executor struct {
	Fleet   *fleet.Fleet
	Store   providers.Store // the fleet's state store: lock and journal
	Router  router.Driver
	Signals SignalSource
	Log     *slog.Logger // progress; nil: discard
	Holder  string       // who runs this (user@host pid N); empty: derived
	LockTTL time.Duration
	Now     func() time.Time
	// Owners judges whether a lock holder's process still runs (nil: this host, for real).
	Owners *lockowner.Checker
	// OnRecord is called, on the run's goroutine, after each journal record is durably written:
	// the fleet's notifications hang here (RunNotifier.Record, hooked by the CLI), and tests use
	// it to watch or crash a run between records. It must not block: a step waits for it.
	OnRecord func(Record)
	// AfterApply is called after a step's change is read back, before its result is
	// journaled (tests crash here too: applied but not recorded).
	AfterApply func(step int)
	// BeforeChange, when set, is told the run id and fencing token of a new run (run, abort,
	// restore) before its start is journaled and before its first router write; an error stops
	// the run with nothing changed. A drill records there which runs are its own, so that its
	// clean-up undoes those and never another operator's.
	BeforeChange func(run string, token int64) error
	// Stop evaluates the fleet's stop conditions before every write; nil: a StopChecker of
	// the fleet's (when it has conditions). OnStop, when set, is told every evaluation (a
	// drill's report lists them).
	Stop   *StopChecker
	OnStop func(StopResult)

	// The fleet's trust: is enforced by Run before a run that moves traffic to the replicas
	// takes the lock (see enforceTrust): OpenSigned reads the manifest and finds its signatures
	// (nil: a local file and its FILE.sigstore.json), Warn is told the warning of require: false
	// (nil: the log). Trusted is the check the caller already made on this fleet's manifest
	// (signature.Policy.Enforce), or the one Run made: it is not made again.
	OpenSigned signature.Opener
	Warn       func(string)
	Trusted    *signature.Enforced

	// notes are the router's notes (NotingDriver) as last logged.
	stopOnce sync.Once
	notes    struct {
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
	// Saved, when set, is the plan `failover plan --out` saved (run --plan): it is applied as it
	// is, and only when the plan made now from the live router and signals is the same in what
	// matters (the start, the steps, the verdict); otherwise the run is refused naming the change.
	Saved *Plan
	// SavedName is the saved plan's file, for messages.
	SavedName string
	// Classes restricts the run to these tenant classes (--class); the others are left exactly
	// as they are on the router. Empty: every class.
	Classes []string
	// SkipBlocked moves every class that can move and leaves the blocked ones untouched, each
	// named with its rule and reason (--skip-blocked). The outcome is short of its target while
	// a class is blocked (ErrIncomplete), never a success.
	SkipBlocked bool

	resumed bool // steps: check the first step too (resume and re-assert pick up someone's plan)
}

// Outcome is how a run ended.
type Outcome struct {
	Run   string             `json:"run"`
	Plan  *Plan              `json:"plan"`
	Steps int                `json:"steps_applied"`
	Held  string             `json:"held,omitempty"`
	Final router.RouterState `json:"final"`
	// Complete: the run reached its plan's target (false when it holds, or its plan could not
	// complete: see Plan.Shed and Plan.Reason).
	Complete bool `json:"complete"`
	// Reasserted: resume re-applied the journaled state of a run the router had forgotten.
	Reasserted bool `json:"reasserted,omitempty"`
	// Instead, for an abort or rollback that cannot reach the baseline, are the commands that
	// finish the evacuation it was undoing instead (see Status.Instead).
	Instead []string `json:"instead,omitempty"`
}

// finishInstead are the commands that finish the evacuations an abort or rollback undoes: of
// the regions the open failover took out, and of the run's own event when it evacuated.
func finishInstead(out []string, ev Event) []string {
	regions := slices.Clone(out)
	if ev.Kind == Evacuate {
		regions = append(regions, ev.Region)
	}
	slices.Sort(regions)
	var cmds []string
	for _, r := range slices.Compact(regions) {
		cmds = append(cmds, "lifeboat failover run --region "+shell.Quote(r))
	}
	return cmds
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

func (e *Executor) fleetID() string { return FleetDigest(e.Fleet) }

// Input builds a planner input from the live router and signals.
func (e *Executor) Input(ctx context.Context, rs router.RouterState, sig map[string]RegionSignal, h failoverState, o RunOptions) PlanInput {
	in := InputFromFleet(e.Fleet)
	in.Weights, in.States, in.Signals = rs.Weights, rs.States, sig
	in.Baseline, in.Transitions, in.Out = h.baseline, h.transitions, h.out
	in.Event, in.Immediate, in.Overrides = o.Event, o.Immediate, o.Overrides
	in.Only, in.SkipBlocked, in.Hint = o.Classes, o.SkipBlocked, true
	in.MaxWeight = e.Router.MaxWeight()
	return in
}

// readRouter reads the router and checks that its topology keeps every class in its regions.
func (e *Executor) readRouter(ctx context.Context) (router.RouterState, error) {
	rs, _, err := e.readVersioned(ctx)
	return rs, err
}

// logNotes logs what the router reports beyond weights and states (NotingDriver), whenever it
// differs from what was last logged.
func (e *Executor) logNotes() {
	n, ok := e.Router.(router.NotingDriver)
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
func (e *Executor) readVersioned(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs, v, err := router.ReadVersion(ctx, e.Router)
	e.logNotes()
	if err != nil {
		return rs, nil, fmt.Errorf("read %s: %w", e.Router, err)
	}
	if rs.States == nil {
		rs.States = router.States{}
	}
	if err := router.CheckTopology(e.Fleet.Tenants, rs); err != nil {
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

// diff compares as the driver routes: where weight 0 is the drain (Caddy), a ready region with
// weight 0 and a drained one are the same.
func (e *Executor) diff(want, got router.RouterState) []string {
	if router.ZeroWeightIsDrain(e.Router) {
		return router.Diff(router.NormalizeZeroDrain(want), router.NormalizeZeroDrain(got))
	}
	return router.Diff(want, got)
}
