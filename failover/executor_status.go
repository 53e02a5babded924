package failover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"lifeboat/fleet/router"
)

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
	// RolledBack is the run's own plan as it stood when it turned back to the baseline (a
	// failing check with --rollback-on-fail, an abort request): Plan and Applied are the
	// rollback's from there on.
	RolledBack *RolledBack `json:"rolled_back,omitempty"`
}

// RolledBack is how far a run got before it turned back to its baseline, and why.
type RolledBack struct {
	Event   Event  `json:"event"`
	Applied int    `json:"steps_applied"`
	Steps   int    `json:"steps"`
	Why     string `json:"why"`
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
			if v.RolledBack == nil && v.Plan != nil {
				v.RolledBack = &RolledBack{Event: v.Plan.Event, Applied: v.Applied, Steps: len(v.Plan.Steps), Why: r.Detail}
			}
			v.Plan, v.LastApplied, v.InFlight, v.Applied = r.Plan, -1, -1, 0
			v.Held, v.Failed = "", ""
			if r.Plan != nil && (r.Plan.Refused || len(r.Plan.Steps) == 0) {
				v.Held = rollbackBlocked(r.Detail, r.Plan) // the way back cannot start
			}
		case RecReplan:
			// the rest of the run follows the plan made again from the router: its steps count anew
			v.Plan, v.LastApplied, v.InFlight, v.Applied = r.Plan, -1, -1, 0
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
func (v RunView) Expected() (router.RouterState, bool) {
	if v.Plan == nil {
		return router.RouterState{}, false
	}
	if v.InFlight >= 0 {
		return v.Plan.Scope(v.Plan.After(v.InFlight)), true
	}
	return v.Plan.Scope(v.Plan.After(v.LastApplied)), false
}

// Status reads the latest run and the router; ErrDrift when the router is not where the
// journal says.
type Status struct {
	RunView
	Event    *Event             `json:"event,omitempty"`
	Holder   string             `json:"holder,omitempty"`
	Reason   string             `json:"reason,omitempty"`
	Started  *time.Time         `json:"started,omitempty"`
	Expires  *time.Time         `json:"expires,omitempty"`
	Lock     *Lock              `json:"lock,omitempty"`
	Router   router.RouterState `json:"router"`
	Expected router.RouterState `json:"expected"`
	Drift    []string           `json:"drift"`
	Journal  []Record           `json:"journal"`
	// JournalErrors name the journal objects that are not valid records (read up to them);
	// LockError says the lock object is corrupt and how to break it.
	JournalErrors []string `json:"journal_errors"`
	LockError     string   `json:"lock_error,omitempty"`
	// State is running (the lock is held by a live holder), interrupted (not done, lock free:
	// Ctrl-C, a hold), dead (not done, the lock's holder is a process gone on this host), done,
	// refused, or none.
	State string `json:"state"`
	// HolderDead says why the lock's holder is known dead ("" unknown or alive).
	HolderDead string `json:"holder_dead,omitempty"`
	// RouterError: the router could not be read (the journal and the lock are still shown).
	RouterError string `json:"router_error,omitempty"`
	// ResumeWill says what `lifeboat failover resume` would do with this run ("" nothing).
	ResumeWill string `json:"resume_will,omitempty"`
	// Instead are the other ways out of a held abort or rollback: the commands that finish
	// what the run was undoing (the evacuation of each region the open failover took out).
	Instead []string `json:"instead,omitempty"`
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
		if lk.Owner != nil {
			if dead, why := e.owners().IsGone(lk.Owner); dead {
				st.HolderDead = why
			}
		}
	}
	switch {
	case run == "":
		st.State = "none"
	case st.Refused:
		st.State = "refused"
	case st.Done:
		st.State = "done"
	case st.Lock != nil && st.HolderDead != "":
		st.State = "dead"
	case st.Lock != nil:
		st.State = "running"
	default:
		st.State = "interrupted"
	}
	if st.Start != nil {
		st.Event, st.Holder, st.Reason, st.Started, st.Expires = st.Start.Event, st.Start.Holder, st.Start.Reason, &st.Start.Time, st.Start.Expires
	}
	st.ResumeWill, st.Instead = st.RunView.resumeWill(), st.RunView.instead()
	rs, err := e.readRouter(ctx)
	if err != nil {
		st.RouterError = err.Error()
		return st, err
	}
	st.Router = rs
	if st.Plan != nil && !st.Refused {
		want, inflight := st.RunView.Expected()
		st.Expected = want
		d := e.diff(want, rs)
		if inflight && len(d) > 0 {
			// mid-change: either side of the change is not drift
			if prev := st.Plan.Scope(st.Plan.After(st.InFlight - 1)); len(e.diff(prev, rs)) == 0 {
				d = nil
			}
		}
		st.Drift = append(st.Drift, d...)
	}
	return st, nil
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

// backward reports whether the run's plan now goes back to the baseline: an abort, or a run
// that rolled back.
func (v RunView) backward() bool {
	return v.Plan != nil && v.Plan.Event.Kind == Abort
}

// resumeWill says what `lifeboat failover resume` does with an unfinished run: the same plan
// goes on — for an abort or a rollback, the way back to the baseline, never the run it undid —
// and, while what held it holds, holds again.
func (v RunView) resumeWill() string {
	if v.Run == "" || v.Done || v.Refused || v.Plan == nil {
		return ""
	}
	what := fmt.Sprintf("continues %s from step %d of %d", v.Plan.Event, v.NextStep+1, len(v.Plan.Steps))
	if v.backward() {
		what = fmt.Sprintf("continues the abort (back to the baseline), not the %s it undoes", v.undone())
		if v.NextStep < len(v.Plan.Steps) {
			what += fmt.Sprintf(", from step %d of %d", v.NextStep+1, len(v.Plan.Steps))
		}
	}
	switch {
	case v.backward() && v.Plan.Hold != "" && len(v.Plan.Steps) == 0:
		return "resume " + what + ", which holds while this holds: " + v.Plan.Hold
	case v.Held != "":
		return "resume " + what + ", which holds again while this holds: " + v.Held
	}
	return "resume " + what
}

// undone names what an abort or rollback undoes: the run's own event, or the open failover.
func (v RunView) undone() string {
	if v.RolledBack != nil {
		return v.RolledBack.Event.String()
	}
	return "failover"
}

// instead are the commands that finish the evacuation an abort or rollback was undoing, when
// it is held: the way back is blocked (a dead region cannot take its traffic back), and going
// on with the evacuation is the other way out.
func (v RunView) instead() []string {
	if v.Run == "" || v.Done || !v.backward() || v.Held == "" && (v.Plan == nil || v.Plan.Hold == "") {
		return nil
	}
	var ev Event
	if v.RolledBack != nil {
		ev = v.RolledBack.Event
	}
	var out []string
	if v.Start != nil {
		out = v.Start.Out
	}
	return finishInstead(out, ev)
}
