// The end of a drill: failback (the lost region's traffic given back) and teardown (the router
// back at the baseline, candidates stopped, faults put back, nothing left behind).

package drills

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// failback gives the lost region its traffic back: a restore, waiting for its dwell.
func (x *run) failback() (string, error) {
	defer x.stopSampler()
	opts := failover.RunOptions{Event: failover.Event{Kind: failover.Restore, Region: x.Drill.Lose}, Reason: "drill " + x.Drill.Name + ": fail back", HoldTimeout: x.Drill.Failback}
	var out *failover.Outcome
	var err error
	deadline := x.now().Add(x.Drill.Failback)
	for {
		out, err = x.executor(&process{}).Run(x.ctx, opts)
		if err == nil || !errors.Is(err, router.ErrRouterUnreachable) || !x.now().Before(deadline) {
			break
		}
		if err := wait.Sleep(x.ctx, 250*time.Millisecond); err != nil {
			return "", err
		}
	}
	if out != nil && out.Run != "" {
		x.rep.Runs = append(x.rep.Runs, out.Run)
		if recs, rerr := failover.ReadRun(x.ctx, x.state, out.Run); rerr == nil {
			x.journalWeights(recs)
		}
	}
	if err != nil {
		return "", fmt.Errorf("fail back to %s: %w", x.Drill.Lose, err)
	}
	rs, err := x.base.Read(x.ctx)
	if err != nil {
		return "", err
	}
	if !rs.Weights.Equal(x.baseline) {
		return "", fmt.Errorf("after the failback the router is not at the baseline: %v", router.Diff(router.RouterState{Weights: x.baseline}, rs))
	}
	return fmt.Sprintf("run %s: %d step(s); the router is back at the baseline", out.Run, out.Steps), nil
}

// teardown returns the router to the baseline the drill found (a ramped abort with the failover
// executor, while the candidates still serve), stops what the drill started, puts the faults
// back and checks nothing is left; then closes the drill's record in the state store.
func (x *run) teardown() (string, error) {
	x.stopSampler()
	td := &x.rep.Teardown
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ctx), 2*time.Minute)
	defer cancel()
	var errs []string
	var r *restorer
	routerDetail := ""
	if x.drec != nil {
		x.ensureExecutorFleet()
		r = &restorer{rec: x.drec, fleet: x.exFl, manifest: x.Manifest, state: x.state, router: x.base, signals: x.liveSignals(),
			log: x.log(), now: x.Now, holder: x.holder() + " teardown", td: td,
			drill: x.Drill, own: x.ownRun, ownTokens: x.ownTokens,
			replica: func(region string) (providers.Store, error) {
				if s := x.stores[x.Fleet.Regions[region].Replica]; s != nil {
					return s, nil
				}
				return nil, fmt.Errorf("region %s: its replica is not open", region)
			},
			original: func(name string) ([]byte, bool) {
				for _, ff := range x.files {
					if ff.f.Name == name && ff.original != nil {
						return ff.original, true
					}
				}
				return nil, false
			}}
		routerDetail = r.routerBack(ctx)
		if r.abortRun != "" {
			x.rep.Runs = append(x.rep.Runs, r.abortRun)
			if recs, err := failover.ReadRun(ctx, x.state, r.abortRun); err == nil {
				x.journalWeights(recs)
			}
		}
	}
	for _, region := range slices.Sorted(mapsKeys(x.insts)) {
		inst := x.insts[region]
		if err := inst.Stop(ctx); err != nil {
			errs = append(errs, fmt.Sprintf("stop %s: %v", region, err))
		}
		td.Stopped = append(td.Stopped, region)
		if pg, ok := inst.(launch.ProcessGroup); ok && pg.PGID() > 0 && groupAlive(pg.PGID()) {
			td.Left = append(td.Left, fmt.Sprintf("process group %d of %s", pg.PGID(), region))
		}
	}
	if r != nil {
		r.faultsBack(ctx)
	}
	for _, s := range x.stores {
		_ = s.Close()
	}
	if x.tmp != "" {
		if err := os.RemoveAll(x.tmp); err != nil {
			errs = append(errs, err.Error())
		}
		if _, err := os.Stat(x.tmp); err == nil {
			td.Left = append(td.Left, "temp dir "+x.tmp)
		} else {
			td.TempRemoved = true
		}
	}
	if r != nil {
		r.lockCheck(ctx)
		outcome := "torn down"
		if x.ctx.Err() != nil {
			outcome = "interrupted; torn down"
		}
		if err := r.close(ctx, outcome); err != nil {
			td.Left = append(td.Left, "the drill record: "+providers.Redact(err.Error()))
		}
	}
	detail := fmt.Sprintf("stopped %d candidate(s), put back %d fault(s), temp dir removed: %v, lock released: %v", len(td.Stopped), len(td.FaultsUndone), td.TempRemoved, td.LockReleased)
	if routerDetail != "" {
		detail = routerDetail + "; " + detail
	}
	if len(td.Left) > 0 {
		errs = append(errs, "left behind: "+strings.Join(td.Left, ", "))
	}
	if len(errs) > 0 {
		return detail, errors.New(strings.Join(errs, "; "))
	}
	return detail, nil
}
