// Before the first step: a drill refuses to start over a previous drill's leftovers or a router
// moved from its baseline, records that baseline in the state store, opens the replicas and
// plants the file faults.

package drills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/lockowner"
	"lifeboat/providers"
)

// preflight refuses to start over a previous drill's leftovers or while the router is not at
// the fleet's baseline (unless FromCurrent), then records the baseline in the state store before
// anything changes.
func (x *run) preflight() error {
	ctx := x.ctx
	open, err := Records(ctx, x.state, true)
	if err != nil {
		return err
	}
	if len(open) > 0 { // the first open record is named; cleanup puts them all back
		rec := open[0]
		how := fmt.Sprintf("run `lifeboat drill cleanup %s` to put it back", x.Drill.File)
		if host, boot := thisHost(); rec.Host == host && rec.Boot == boot {
			switch l, why := drillProcess(nil, &rec, boot); l {
			case lockowner.Alive:
				how = "it is still running"
			case lockowner.CannotTell:
				how = "it may still be running (" + why + ")"
			}
		}
		return fmt.Errorf("%w: drill %s (record %s in %s, pid %d on %s, started %s) did not tear down: %s", ErrLeftovers, rec.Drill, recordKey(rec.ID), x.state,
			rec.PID, rec.Host, rec.Started.Format(time.RFC3339), how)
	}
	rs, err := x.base.Read(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", x.base, err)
	}
	if run, start, err := OpenFailover(ctx, x.state); err != nil {
		return err
	} else if run != "" && !rs.Weights.Equal(start.Baseline) && !x.FromCurrent {
		ev := ""
		if start.Event != nil {
			ev = start.Event.String() + " "
		}
		return fmt.Errorf("%w: failover run %s (%sby %s at %s, reason %q) moved it and is still open: %s; put it back (`lifeboat failover abort`, or `lifeboat drill cleanup` after a drill) or start from the current state with --from-current",
			ErrNotAtBaseline, run, ev, start.Holder, start.Time.Format(time.RFC3339), start.Reason, strings.Join(router.Diff(router.RouterState{Weights: start.Baseline}, rs), ", "))
	}
	host, boot := thisHost()
	me, _ := readProc(os.Getpid())
	x.drec = &DrillRecord{ID: x.start.UTC().Format("20060102T150405.000Z") + "-" + safeName(x.Drill.Name) + "-" + strconv.Itoa(os.Getpid()),
		Drill: x.Drill.Name, File: x.Drill.File, Fleet: x.Fleet.File, Host: host, Boot: boot, PID: os.Getpid(), PIDStart: me.start, SID: me.session,
		FleetDigest: x.rep.Evidence.FleetFile.Digest, Runs: []string{}, Tokens: []int64{},
		Holder: x.holder(), LockTTL: x.Drill.LockTTL.Seconds(), Started: x.start.UTC(), FromCurrent: x.FromCurrent,
		Baseline: rs.Clone(), TempDir: x.tmp, Faults: []FaultUndo{}, Candidates: []CandidateRecord{}, Left: []string{}}
	x.baseline = rs.Weights.Clone()
	return saveRecord(ctx, x.state, x.drec)
}

// ownRun records a failover run one of the drill's executors starts, before its first router
// write (Executor.BeforeChange): a clean-up undoes only the runs recorded.
func (x *run) ownRun(run string, token int64) error {
	x.recMu.Lock()
	defer x.recMu.Unlock()
	x.drec.Runs, x.drec.Tokens = append(x.drec.Runs, run), append(x.drec.Tokens, token)
	return saveRecord(context.WithoutCancel(x.ctx), x.state, x.drec)
}

// ownTokens are the fencing tokens the drill's executors took.
func (x *run) ownTokens() []int64 {
	x.recMu.Lock()
	defer x.recMu.Unlock()
	return slices.Clone(x.drec.Tokens)
}

// ownCandidate records a candidate's process group before its command runs
// (launch.Spec.Starting): a clean-up after the drill died stops it.
func (x *run) ownCandidate(region string, st launch.Started) error {
	x.recMu.Lock()
	defer x.recMu.Unlock()
	x.drec.Candidates = append(x.drec.Candidates, CandidateRecord{Region: region, URL: st.BaseURL, PGID: st.PGID, Start: st.Start, Mark: st.Mark, Namespace: st.Namespace, Run: st.Run})
	return saveRecord(context.WithoutCancel(x.ctx), x.state, x.drec)
}

func (x *run) holder() string {
	return fmt.Sprintf("lifeboat drill %s (pid %d)", x.Drill.Name, os.Getpid())
}

func (x *run) openReplicas() error {
	for _, name := range x.Fleet.RegionNames() {
		u := x.Fleet.Regions[name].Replica
		if u == "" || x.stores[u] != nil {
			continue
		}
		s, err := x.Open(x.ctx, u)
		if err != nil {
			return fmt.Errorf("regions.%s.replica: %w", name, err)
		}
		x.stores[u] = s
	}
	return nil
}

func (x *run) plantFileFaults() error {
	for i := range x.rep.Faults {
		f := &x.rep.Faults[i].Fault
		if effectOf(*f) != effectReplica {
			continue
		}
		ff := &fileFault{f: f, store: x.stores[x.Fleet.Regions[f.Region].Replica]}
		x.files = append(x.files, ff) // before plant: teardown puts back whatever was changed
		keep := func(orig []byte) error {
			sum := sha256.Sum256(orig)
			u := FaultUndo{Name: f.Name, Kind: f.Kind, Region: f.Region, Path: f.Path, Copy: fmt.Sprintf("%s/%s/faults/%d.orig", activeDir, x.drec.ID, i),
				Size: int64(len(orig)), SHA256: hex.EncodeToString(sum[:])}
			if _, err := x.state.Write(x.ctx, u.Copy, bytes.NewReader(orig), providers.WriteOptions{Size: u.Size}); err != nil {
				return fmt.Errorf("copy the original to %s in %s: %w", u.Copy, x.state, err)
			}
			x.recMu.Lock()
			defer x.recMu.Unlock()
			x.drec.Faults = append(x.drec.Faults, u)
			return saveRecord(x.ctx, x.state, x.drec)
		}
		if err := ff.plant(x.ctx, keep); err != nil {
			return err
		}
		x.rep.Faults[i].Injected, x.rep.Faults[i].At = true, x.offset(x.now())
		x.log().Info("fault planted", "fault", f.Name)
	}
	return nil
}
