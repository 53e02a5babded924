package drills

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// finish judges the drill: SLA, expectations, verdict and summary.
func (x *run) finish() {
	rep := x.rep
	x.mu.Lock()
	rep.Requests = append(rep.Requests, x.requests...)
	x.mu.Unlock()
	slices.SortStableFunc(rep.Requests, func(a, b Request) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	rep.Classes = x.classTraffic()
	evacuated := slices.ContainsFunc(rep.Steps, func(s StepResult) bool { return s.Name == StepEvacuate && s.Status != Skipped })
	sla := &rep.SLA
	rto := x.Runner.rto()
	switch {
	case !evacuated:
		sla.Met, sla.Detail = true, "no evacuation ran: recovery time not measured"
	case sla.RecoverySeconds == nil:
		sla.Detail = fmt.Sprintf("never recovered: no moment in the journal had every class on warm receivers (RTO %s)", rto)
		if sla.Blocked != "" {
			sla.Detail = fmt.Sprintf("never recovered (RTO %s): %s", rto, sla.Blocked)
		}
	default:
		rec := time.Duration(*sla.RecoverySeconds * float64(time.Second))
		sla.Met = rec <= rto
		if sla.Met {
			sla.Detail = fmt.Sprintf("recovered in %s, within the RTO of %s (%s to spare)", round(rec), rto, round(rto-rec))
		} else {
			sla.MissedBySeconds = (rec - rto).Seconds()
			sla.Detail = fmt.Sprintf("recovered in %s: missed the RTO of %s by %s", round(rec), rto, round(rec-rto))
		}
	}
	for _, e := range x.Drill.Expect {
		rep.Expect = append(rep.Expect, x.judge(e))
	}
	var failures []string
	for _, s := range rep.Steps {
		if s.Status == Failed {
			failures = append(failures, fmt.Sprintf("step %s failed: %s", s.Name, firstLine(s.Detail)))
		}
		if s.Status == Inconclusive {
			failures = append(failures, fmt.Sprintf("step %s inconclusive (not a pass): %s", s.Name, firstLine(s.Detail)))
		}
	}
	for _, e := range rep.Expect {
		if !e.Met {
			failures = append(failures, fmt.Sprintf("expectation not met: %s (%s)", e.Description, e.Evidence))
		}
	}
	if !sla.Met {
		failures = append([]string{"SLA: " + sla.Detail}, failures...)
	}
	rep.Finished = x.now().UTC()
	rep.Seconds = rep.Finished.Sub(rep.Started).Seconds()
	if err := x.ctx.Err(); err != nil {
		why := err.Error()
		if c := context.Cause(x.ctx); c != nil {
			why = c.Error()
		}
		failures = append([]string{"interrupted (" + why + "): the drill stopped before its end; teardown still ran"}, failures...)
	}
	rep.OK = len(failures) == 0
	if x.ctx.Err() != nil {
		rep.Verdict = "INTERRUPTED"
		rep.Summary = strings.Join(failures, "; ")
	} else if rep.OK {
		rep.Verdict = "PASS"
		rep.Summary = fmt.Sprintf("drill %s passed: %s; %d fault(s) injected and detected; %d expectation(s) met", x.Drill.Name, sla.Detail, len(rep.Faults), len(rep.Expect))
	} else {
		rep.Verdict = "FAIL"
		rep.Summary = strings.Join(failures, "; ")
	}
	ev := &rep.Evidence
	ev.Started, ev.Finished, ev.Verdict = rep.Started, rep.Finished, rep.Verdict
	ev.RTOSeconds, ev.RecoverySeconds = sla.RTOSeconds, sla.RecoverySeconds
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// judge evaluates one expectation against what the drill saw.
func (x *run) judge(e Expectation) ExpectResult {
	res := ExpectResult{Expectation: e}
	switch e.Kind {
	case ExpectDetected:
		f := x.fault(e.Target)
		res.Met = f.Injected && f.Detected
		res.Evidence = f.Evidence
		if !f.Injected {
			res.Evidence = "the fault was never injected (its step did not run): " + f.Evidence
		} else if !f.Detected {
			res.Evidence = "UNDETECTED: " + f.Evidence
		}
	case ExpectResidency:
		elig := x.Fleet.Tenants[e.Target]
		n, outside := 0, []string{}
		for _, r := range x.rep.Requests {
			if r.Class == e.Target && r.Region != "" {
				n++
				if !r.Eligible {
					outside = append(outside, fmt.Sprintf("request at %.1fs to %s", r.Offset, r.Region))
				}
			}
		}
		weighted := []string{}
		for _, w := range x.rep.Weights {
			if w.Class == e.Target && w.Weight > 0 && !slices.Contains(elig, w.Region) {
				weighted = append(weighted, fmt.Sprintf("weight %d on %s at %.1fs", w.Weight, w.Region, w.Offset))
			}
		}
		res.Met = n > 0 && len(outside) == 0 && len(weighted) == 0
		switch {
		case n == 0:
			res.Evidence = "no request of this class was sent: residency not shown"
		case res.Met:
			res.Evidence = fmt.Sprintf("%d request(s) all landed in %v; the journal never weighted it elsewhere", n, elig)
		default:
			res.Evidence = strings.Join(append(outside, weighted...), "; ")
		}
	case ExpectWarm, ExpectNotWarm:
		if e.Target == x.Drill.Lose {
			res.Evidence = fmt.Sprintf("%s is the region this drill loses: it boots no candidate there (only a stand-in for the region's own serving, restored from another region's replica)", e.Target)
			break
		}
		b := x.boots[e.Target]
		verdict := "not booted"
		if b != nil {
			verdict = string(b.Verdict)
		}
		warmOK := b != nil && b.OK
		res.Met = warmOK == (e.Kind == ExpectWarm) && b != nil
		res.Evidence = fmt.Sprintf("%s: %s", e.Target, verdict)
		if b != nil {
			res.Evidence += ": " + b.Reason
		}
	case ExpectSLA:
		res.Met = x.rep.SLA.Met && x.rep.SLA.RecoverySeconds != nil
		res.Evidence = x.rep.SLA.Detail
	case ExpectFailback:
		for _, s := range x.rep.Steps {
			if s.Name == StepFailback {
				res.Met, res.Evidence = s.Status == Passed, s.Detail
			}
		}
		if res.Evidence == "" {
			res.Evidence = "no failback ran"
		}
	}
	return res
}
