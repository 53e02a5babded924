package failover

import (
	"context"
	"errors"
	"time"
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
		case RecRollback, RecReplan:
			v.Plan, v.LastApplied, v.InFlight = r.Plan, -1, -1
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
func (v RunView) Expected() (RouterState, bool) {
	if v.Plan == nil {
		return RouterState{}, false
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
	Event    *Event      `json:"event,omitempty"`
	Holder   string      `json:"holder,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	Started  *time.Time  `json:"started,omitempty"`
	Expires  *time.Time  `json:"expires,omitempty"`
	Lock     *Lock       `json:"lock,omitempty"`
	Router   RouterState `json:"router"`
	Expected RouterState `json:"expected"`
	Drift    []string    `json:"drift"`
	Journal  []Record    `json:"journal"`
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
			if dead, why := e.owners().gone(lk.Owner); dead {
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
