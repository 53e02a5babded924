// One step at a time: approval, timing, skipping the steps that need one that failed, and the
// dispatch to each step's code.

package drills

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

func (x *run) fault(name string) *FaultResult { return &x.rep.Faults[x.faultIdx[name]] }

// faultsOf are the faults that act at effect.
func (x *run) faultsOf(effect faultEffect) []*FaultResult {
	var out []*FaultResult
	for i := range x.rep.Faults {
		if effectOf(x.rep.Faults[i].Fault) == effect {
			out = append(out, &x.rep.Faults[i])
		}
	}
	return out
}

// step runs one step, timed, asking for approval first when the drill says so.
func (x *run) step(name string) {
	t0 := x.now()
	x.stepStart = t0
	res := StepResult{Name: name, Started: t0.UTC(), Offset: t0.Sub(x.start).Seconds()}
	if x.OnStep != nil {
		x.OnStep(res)
	}
	var detail string
	var err error
	switch {
	case name != StepTeardown && x.ctx.Err() != nil:
		err = fmt.Errorf("interrupted: %w", x.ctx.Err())
	case name != StepTeardown && slices.Contains(x.Drill.Approve, name) && !x.approved(name, &err):
		if err == nil {
			err = errors.New("not approved (approve it when asked, or run with --approve-all)")
		}
		x.failed = true
	default:
		detail, err = x.do(name)
	}
	res.Seconds = x.now().Sub(t0).Seconds()
	res.Status, res.Detail = Passed, detail
	if errors.Is(err, errSkip) {
		res.Status, res.Detail = Skipped, strings.TrimPrefix(err.Error(), errSkip.Error()+": ")
	} else if errors.Is(err, errInconclusive) {
		res.Status = Inconclusive // not passed: the drill's verdict is FAIL (finish)
		res.Detail = providers.Redact(detail + "; " + err.Error())
	} else if err != nil {
		res.Status = Failed
		res.Detail = providers.Redact(err.Error())
		if detail != "" {
			res.Detail = providers.Redact(detail + "; " + err.Error())
		}
		if name == StepVerify || name == StepBoot || name == StepEvacuate {
			x.failed = true
		}
	}
	x.rep.Steps = append(x.rep.Steps, res)
	x.log().Info("step", "name", name, "status", res.Status, "seconds", fmt.Sprintf("%.2f", res.Seconds), "detail", res.Detail)
	if x.OnStep != nil {
		x.OnStep(res)
	}
}

var errSkip = errors.New("skipped")

// errInconclusive: the step found nothing wrong, but did not prove what it checks (a
// verification with copies left UNVERIFIED). Not a pass.
var errInconclusive = errors.New("inconclusive")

// offset is t in seconds since the drill started.
func (x *run) offset(t time.Time) *float64 {
	v := t.Sub(x.start).Seconds()
	return &v
}

func (x *run) approved(name string, errp *error) bool {
	if x.Approve == nil {
		x.recordApproval(name, false, nil)
		return false
	}
	ok, err := x.Approve(x.ctx, name) // recorded in the evidence (see Run)
	*errp = err
	return ok && err == nil
}

func (x *run) do(name string) (string, error) {
	switch name {
	case StepVerify:
		return x.verify("before")
	case StepReverify:
		return x.verify("after")
	case StepBoot:
		return x.boot()
	case StepTeardown:
		return x.teardown()
	}
	if x.failed {
		return "", fmt.Errorf("%w: an earlier step failed", errSkip)
	}
	switch name {
	case StepEvacuate:
		return x.evacuate()
	case StepTraffic:
		return x.traffic()
	case StepHold:
		return fmt.Sprintf("held failed over for %s", x.Drill.Hold), wait.Sleep(x.ctx, x.Drill.Hold)
	case StepFailback:
		return x.failback()
	}
	return "", fmt.Errorf("unknown step %q", name)
}

// candidates are the regions whose replica the drill boots (a launcher that starts one, of
// whatever kind), sorted; never the lost region (a drill that loses it recovers elsewhere: see
// standIn).
func (x *run) candidates() []string {
	var out []string
	for _, n := range x.Fleet.RegionNames() {
		if x.Fleet.Regions[n].Candidate() && n != x.Drill.Lose {
			out = append(out, n)
		}
	}
	return out
}
