package failover

import (
	"context"
	"errors"
	"time"
)

// Outcomes of a run as RecentRuns lists it.
const (
	OutcomeRunning     = "running"     // the lock's holder is writing this run's records
	OutcomeDead        = "dead"        // the lock still names this run's holder, a process gone on this host
	OutcomeInterrupted = "interrupted" // not finished and the lock is free (Ctrl-C, a crash elsewhere): resume or abort
	OutcomeHeld        = "held"        // a check failed (or the plan could not reach its target): held for safety
	OutcomeFailed      = "failed"      // stopped on an error (the router, the store); the lock is free
	OutcomeAborted     = "aborted"     // stepped back to the baseline: an abort request, --rollback-on-fail, or a later abort run
	OutcomeDone        = "done"        // reached its plan's target
	OutcomeRefused     = "refused"     // refused for safety: nothing changed
	OutcomeUnreadable  = "unreadable"  // the journal holds an object that is not a valid record (see Error)
)

// RunSummary is one run of the journal, as `failover status` lists the recent ones.
type RunSummary struct {
	Run   string `json:"run"`
	Event *Event `json:"event,omitempty"`
	// Started is the time of the run's first record, Ended that of the record that finished it
	// (done, refused; nil while it is not finished), Last that of its last record. All three are
	// the writer's wall clock, shown to people.
	Started *time.Time `json:"started,omitempty"`
	Ended   *time.Time `json:"ended,omitempty"`
	Last    *time.Time `json:"last_record,omitempty"`
	Outcome string     `json:"outcome"`
	// Holder is who started the run (user@host pid N); Reason why, as journaled.
	Holder string `json:"holder,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Applied counts the steps of the run's plan applied (Steps in all), RolledBack those of the
	// way back to the baseline after a rollback or an abort request.
	Applied    int `json:"steps_applied"`
	Steps      int `json:"steps"`
	RolledBack int `json:"steps_rolled_back,omitempty"`
	// Detail is the hold, failure or abort text; Error why the journal could not be read past
	// an object (Outcome unreadable: what is above it was read from the records before it).
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// RecentRuns lists this fleet's newest n runs, newest first (by fencing token, see NewRunID).
// A run with an object that is not a valid record is listed as unreadable with the reason, never
// the end of the listing; only the store's own errors (listing, the lock) are returned. The lock
// says which run is running or dead: the one whose records carry the lock's fencing token.
func (e *Executor) RecentRuns(ctx context.Context, n int) ([]RunSummary, error) {
	runs, err := Runs(ctx, e.Store)
	if err != nil {
		return nil, err
	}
	lk, held, err := e.locker().Read(ctx)
	var corrupt *LockCorruptError
	switch {
	case errors.As(err, &corrupt):
		held = false // status reports the corrupt lock itself; no run can be its holder's
	case err != nil:
		return nil, err
	}
	held = held && !lk.Released
	dead := ""
	if held && lk.Owner != nil {
		if d, why := e.owners().IsGone(lk.Owner); d {
			dead = why
		}
	}
	fleet := e.fleetID()
	out := []RunSummary{}
	// laterAbort: the next newer run of this fleet that changed the router was an `abort` (it
	// stepped back to the baseline: an unfinished run before it was aborted, not interrupted).
	laterAbort := false
	for i := len(runs) - 1; i >= 0 && len(out) < n; i-- {
		j, err := ScanRun(ctx, e.Store, runs[i])
		if err != nil {
			out = append(out, RunSummary{Run: runs[i], Outcome: OutcomeUnreadable, Error: err.Error()})
			continue
		}
		if !ofFleet(j.Records, fleet) {
			continue
		}
		s := summarize(j, e.now())
		ours := held && len(j.Records) > 0 && j.Records[len(j.Records)-1].Token == lk.Token
		switch {
		case s.Outcome != "":
		case ours && dead != "":
			s.Outcome, s.Detail = OutcomeDead, dead
		case ours:
			s.Outcome = OutcomeRunning
		case laterAbort:
			s.Outcome = OutcomeAborted
		case s.pending != "":
			s.Outcome = s.pending
		default:
			s.Outcome = OutcomeInterrupted
		}
		if s.Error != "" && s.Outcome != OutcomeRunning && s.Outcome != OutcomeDead {
			s.Outcome = OutcomeUnreadable
		}
		if s.started {
			laterAbort = s.Event != nil && s.Event.Kind == Abort
		}
		out = append(out, s.RunSummary)
	}
	return out, nil
}

// runSummary is a RunSummary being made: pending is the outcome of an unfinished run that no
// process holds (held or failed), started whether the run began changing the router.
type runSummary struct {
	RunSummary
	pending string
	started bool
}

// summarize reads what a run's valid records say; Outcome is left "" for an unfinished run
// (running, dead, interrupted, held and failed depend on the lock and on later runs).
func summarize(j RunJournal, now time.Time) runSummary {
	v := ViewRun(j.Run, j.Records, now)
	s := runSummary{RunSummary: RunSummary{Run: j.Run}}
	if err := j.Err(); err != nil {
		s.Error = err.Error()
	}
	if len(j.Records) == 0 {
		return s
	}
	first, last := j.Records[0], j.Records[len(j.Records)-1]
	s.Started, s.Last, s.Holder = &first.Time, &last.Time, first.Holder
	for _, r := range j.Records {
		if r.Event != nil {
			s.Event, s.Reason, s.Holder = r.Event, r.Reason, r.Holder
			break
		}
	}
	switch {
	case v.Start != nil && v.Start.Plan != nil:
		s.Steps = len(v.Start.Plan.Steps)
	case v.Plan != nil:
		s.Steps = len(v.Plan.Steps)
	}
	s.started = v.Start != nil
	rolledBack := false
	for _, r := range j.Records {
		switch {
		case r.Kind == RecRollback || r.Kind == RecAbortRequest:
			rolledBack = true
			if s.Detail == "" {
				s.Detail = r.Detail
			}
		case r.Kind == RecResult && rolledBack:
			s.RolledBack++
		case r.Kind == RecResult:
			s.Applied++
		}
	}
	switch {
	case v.Refused:
		s.Outcome, s.Ended = OutcomeRefused, &last.Time
		s.Detail = last.Detail
	case v.Done && rolledBack:
		s.Outcome, s.Ended = OutcomeAborted, &last.Time
	case v.Done && v.Held != "":
		s.Outcome, s.Ended, s.Detail = OutcomeHeld, &last.Time, v.Held
	case v.Done:
		s.Outcome, s.Ended = OutcomeDone, &last.Time
	case v.Held != "":
		s.pending, s.Detail = OutcomeHeld, v.Held
	case v.Failed != "":
		s.pending, s.Detail = OutcomeFailed, v.Failed
	}
	return s
}
