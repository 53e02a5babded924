// The evacuate step: the lost region's traffic moved away by the failover executor, played as
// orchestrator processes that can be killed and resumed, and the orchestrator, router and
// saturation faults judged from the journal.

package drills

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
)

// executorFleet is the fleet with each candidate's endpoint set to where the drill booted it
// (and none for a candidate that did not come up warm: it can take no traffic).
// ensureExecutorFleet sets exFl when no boot step has (a drill of steps [traffic] or
// [evacuate] alone): the fleet file's endpoints then stand. Called before any goroutine reads it.
func (x *run) ensureExecutorFleet() {
	if x.exFl == nil {
		x.exFl = x.executorFleet()
	}
}

func (x *run) executorFleet() *fleet.Fleet {
	fc := *x.Fleet
	fc.Regions = map[string]*fleet.Region{}
	for n, r := range x.Fleet.Regions {
		rc := *r
		if r.Candidate() {
			rc.Endpoint, rc.Signals.Metrics = "", ""
			if inst := x.insts[n]; inst != nil {
				rc.Endpoint = strings.TrimRight(inst.BaseURL(), "/")
			}
		}
		fc.Regions[n] = &rc
	}
	return &fc
}

func (x *run) liveSignals() *failover.LiveSignals {
	if x.signal == nil {
		po := x.Probe
		po.Models = x.models
		x.signal = &failover.LiveSignals{Fleet: x.exFl, Probe: po}
	}
	return x.signal
}

func (x *run) executor(p *process) *failover.Executor {
	ex := &failover.Executor{Fleet: x.exFl, Store: processStore{Store: x.state, p: p}, Router: processRouter(x.router.driver(), p),
		Signals: x.liveSignals(), Log: x.log(), Holder: x.holder(), LockTTL: x.Drill.LockTTL, Now: x.Now, BeforeChange: x.ownRun,
		OpenSigned: x.OpenSigned, Warn: x.Warn, Trusted: x.trusted, OnStop: x.stopCheck}
	return ex
}

// evacuate moves the lost region's traffic away through the executor: ramped, journaled,
// resumed after a killed orchestrator or an unreachable router.
func (x *run) evacuate() (string, error) {
	x.ensureExecutorFleet()
	rs, err := x.base.Read(x.ctx)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", x.base, err)
	}
	x.weightPoint(x.now(), rs)
	x.startSampler()
	ev := x.newEvacuation()
	if err := ev.run(); err != nil {
		return "", err
	}
	x.rep.Runs = append(x.rep.Runs, x.evacRun)
	recs, err := failover.ReadRun(x.ctx, x.state, x.evacRun)
	if err != nil {
		return "", fmt.Errorf("read the journal of run %s: %w", x.evacRun, err)
	}
	x.journalWeights(recs)
	x.recovery(recs)
	v := failover.ViewRun(x.evacRun, recs, x.now())
	x.judgeKills(ev, recs, v)
	x.judgeRouterUnreachable(ev.resumes)
	x.judgeSaturation()
	detail := fmt.Sprintf("run %s: %d step(s) applied", x.evacRun, v.Applied)
	if ev.resumes > 0 {
		detail += fmt.Sprintf(", resumed %d time(s)", ev.resumes)
	}
	if x.rep.SLA.RecoverySeconds == nil {
		why := "the journal shows no moment where every class was on warm receivers: " + x.rep.SLA.Blocked
		if x.rep.Plan != nil && x.rep.Plan.Hold != "" {
			why += "; the plan stopped short: " + x.rep.Plan.Hold
		}
		return detail, errors.New(why)
	}
	return detail + fmt.Sprintf("; recovered in %.2fs (RTO %s)", *x.rep.SLA.RecoverySeconds, x.Runner.rto()), nil
}

// evacuation is the evacuation's orchestrator processes: the first, and each that resumes the
// run after the one before was killed or lost the router.
type evacuation struct {
	x         *run
	opts      failover.RunOptions
	killAfter int  // kill-mid-ramp: the process dies after applying this step (1-based); 0 never
	killFired bool // it did
	killedAt  time.Time
	resumes   int
	lockWait  time.Duration // spent waiting for a dead process's lock to expire
}

func (x *run) newEvacuation() *evacuation {
	ev := &evacuation{x: x, opts: failover.RunOptions{Event: failover.Event{Kind: failover.Evacuate, Region: x.Drill.Lose}, Reason: "drill " + x.Drill.Name,
		HoldTimeout: 10 * x.Fleet.Failover.StepInterval, Plan: func(pl *failover.Plan) { x.rep.Plan = pl }}}
	if kills := x.faultsOf(effectOrchestrator); len(kills) > 0 {
		ev.killAfter = kills[0].AfterStep
	}
	return ev
}

// attempt is one orchestrator process: it runs (or resumes) the evacuation, and dies as SIGKILL
// would — nothing more reaches the store or the router, its lock stays held — right after
// applying step killAfter, before journaling it. killed says it died here.
func (ev *evacuation) attempt(resume bool) (out *failover.Outcome, killed bool, err error) {
	x := ev.x
	p := &process{}
	ex := x.executor(p)
	ctx, cancel := context.WithCancel(x.ctx)
	defer cancel()
	if ev.killAfter > 0 {
		ex.AfterApply = func(step int) {
			if !ev.killFired && step == ev.killAfter-1 {
				ev.killFired, killed, ev.killedAt = true, true, x.now()
				p.dead.Store(true)
				cancel()
			}
		}
	}
	if !resume {
		out, err = ex.Run(ctx, ev.opts)
		return out, killed, err
	}
	out, err = ex.Resume(ctx, failover.RunOptions{Reason: "drill " + x.Drill.Name + ": orchestrator restarted"})
	if errors.Is(err, failover.ErrNothingToResume) && x.evacRun == "" {
		out, err = ex.Run(ctx, ev.opts) // stopped before the run started: start it again
	}
	return out, killed, err
}

// run runs the evacuation to its end, resuming it from the journal after a killed process (once
// its lock expires) or an unreachable router, until the failback timeout plus the lock TTL.
func (ev *evacuation) run() error {
	x := ev.x
	out, killedHere, err := ev.attempt(false)
	deadline := x.now().Add(x.Drill.Failback + x.Drill.LockTTL)
	for err != nil {
		if out != nil && x.evacRun == "" {
			x.evacRun = out.Run
		}
		var held *failover.LockHeldError
		isHeld := errors.As(err, &held)
		if (!killedHere && !isHeld && !errors.Is(err, router.ErrRouterUnreachable)) || (isHeld && !ev.killFired) {
			return fmt.Errorf("evacuate %s: %w", x.Drill.Lose, err) // not a drill fault: a real failure, or someone else's failover
		}
		if !x.now().Before(deadline) {
			return fmt.Errorf("evacuate %s: could not resume before %s: %w", x.Drill.Lose, deadline.Format(time.RFC3339), err)
		}
		pause := 200 * time.Millisecond
		if isHeld {
			pause = max(time.Until(held.Lock.Expires)+50*time.Millisecond, pause)
			ev.lockWait += pause
		}
		if err := wait.Sleep(x.ctx, pause); err != nil {
			return err
		}
		ev.resumes++
		out, killedHere, err = ev.attempt(true)
	}
	if out != nil && x.evacRun == "" {
		x.evacRun = out.Run
	}
	return nil
}

// judgeKills: a kill-mid-ramp fault is detected when the journal itself shows the silent death —
// the step's intent directly followed by a new process's resume record (the killed one wrote
// nothing more) — and then every step's one result, and the run done.
func (x *run) judgeKills(ev *evacuation, recs []failover.Record, v failover.RunView) {
	for _, k := range x.faultsOf(effectOrchestrator) {
		k.Injected = ev.killFired
		if ev.killFired {
			k.At = x.offset(ev.killedAt)
		}
		counts := v.ResultCounts()
		once := true
		for _, c := range counts {
			once = once && c == 1
		}
		silent := false
		for i, rec := range recs {
			next := i + 1
			if next < len(recs) && recs[next].Kind == failover.RecTakeover {
				next++ // the new process journals its take-over of the dead one's lock first
			}
			if rec.Kind == failover.RecIntent && rec.Step != nil && *rec.Step == k.AfterStep-1 && next < len(recs) && recs[next].Kind == failover.RecResume {
				silent = true
			}
		}
		switch {
		case !ev.killFired:
			k.Evidence = fmt.Sprintf("the ramp never reached step %d: the orchestrator was not killed", k.AfterStep)
		case silent && once && v.Done:
			k.Detected = true
			k.Evidence = fmt.Sprintf("orchestrator killed after applying step %d, before journaling it (its lock left held); the journal shows the step's intent, then a new process's resume after %s waiting for the lock to expire, then each of the %d steps applied once", k.AfterStep, round(ev.lockWait), len(counts))
		default:
			k.Evidence = fmt.Sprintf("killed after step %d, but the journal does not show a clean resume (intent then resume: %v, results per step %v, done %v)", k.AfterStep, silent, counts, v.Done)
		}
	}
}

// judgeRouterUnreachable: detected when the router refused calls and the run was resumed.
func (x *run) judgeRouterUnreachable(resumes int) {
	for _, f := range x.faultsOf(effectRouter) {
		f.Injected = x.router.refusals() > 0
		if at := x.router.wentDown(); !at.IsZero() {
			f.At = x.offset(at)
		}
		if f.Injected && resumes > 0 {
			f.Detected = true
			f.Evidence = fmt.Sprintf("the router refused %d call(s) for %s; the executor stopped and the run was resumed from the journal", x.router.refusals(), f.Duration)
		} else {
			f.Evidence = fmt.Sprintf("router refusals %d, resumes %d", x.router.refusals(), resumes)
		}
	}
}

// judgeSaturation: a saturated receiver is detected when the failover's signals judged it not a
// receiver (not warm, or its queue wait above spill_start_ms).
func (x *run) judgeSaturation() {
	for _, f := range x.faultsOf(effectCandidate) {
		if k, _ := kindOfFault(f.Kind); !k.bySignals {
			continue
		}
		if sig, ok := x.lastSignals()[f.Region]; ok && !f.Detected && (!sig.Warm || (sig.QueueWaitMS != nil && *sig.QueueWaitMS > float64(x.Fleet.Failover.SpillStartMS))) {
			f.Detected, f.Evidence = true, fmt.Sprintf("the failover's signals judged %s not a receiver: %s", f.Region, sig.Why)
		}
	}
}

func (x *run) lastSignals() map[string]failover.RegionSignal {
	sig, err := x.liveSignals().Signals(x.ctx, false)
	if err != nil {
		return map[string]failover.RegionSignal{}
	}
	return sig
}

// stopCheck records an evaluation of a stop condition in the report.
func (x *run) stopCheck(r failover.StopResult) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.rep.StopChecks = append(x.rep.StopChecks, r)
}
