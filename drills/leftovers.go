package drills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/lockowner"
	"lifeboat/internal/base/wait"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify/warm"
)

// activeDir holds one record per drill run in the fleet's state store, written before the drill
// changes anything: the router baseline it found, the undo of every fault it injects (the
// original bytes are copied next to it), the candidates it starts and its temp dir. Teardown —
// or `lifeboat drill cleanup` after the drill process died — puts everything back from it and
// closes it (closed, with what was left behind).
const activeDir = "drills/active"

// maxRecordBytes bounds one drill record read back.
const maxRecordBytes = 1 << 20

// DrillRecord is what a drill must undo, as the state store keeps it. JSON field names are stable.
type DrillRecord struct {
	ID          string `json:"id"`
	Drill       string `json:"drill"`
	File        string `json:"file"`
	Fleet       string `json:"fleet"`
	Host        string `json:"host"`
	Boot        string `json:"boot_id"` // the host's boot: a pid means nothing after a reboot
	PID         int    `json:"pid"`
	PIDStart    string `json:"pid_start"`    // the process's start time (clock ticks since boot)
	SID         int    `json:"sid"`          // the drill process's session: its candidates are in it
	Holder      string `json:"holder"`       // the failover lock holder of its executor
	FleetDigest string `json:"fleet_digest"` // the fleet file's digest: a record is for one fleet
	// Runs are the failover runs the drill's executors started (and Tokens their fencing
	// tokens), each written here before the run's first router write: cleanup undoes only these.
	Runs        []string           `json:"runs"`
	Tokens      []int64            `json:"tokens"`
	LockTTL     float64            `json:"lock_ttl_s"`
	Started     time.Time          `json:"started"`
	FromCurrent bool               `json:"from_current,omitempty"`
	Baseline    router.RouterState `json:"baseline"` // the router as the drill found it
	TempDir     string             `json:"temp_dir"`
	Models      []string           `json:"models,omitempty"`
	Faults      []FaultUndo        `json:"faults"`
	Candidates  []CandidateRecord  `json:"candidates"`
	Closed      *time.Time         `json:"closed,omitempty"`
	Outcome     string             `json:"outcome,omitempty"` // "torn down", "cleaned up", "interrupted"...
	Left        []string           `json:"left"`

	Key string `json:"-"` // where it was read from
}

// FaultUndo puts one file fault back: the original bytes are in the state store at Copy.
type FaultUndo struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Region string `json:"region"`
	Path   string `json:"path"`
	Copy   string `json:"copy"` // key in the state store
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// CandidateRecord is one candidate the drill booted: where it serves and its process group.
// A candidate in a cluster (kubernetes launcher) is recorded by the namespace and run label
// of its objects instead, PGID 0.
type CandidateRecord struct {
	Region    string `json:"region"`
	URL       string `json:"url"`
	PGID      int    `json:"pgid"`
	Start     string `json:"pid_start"`
	Mark      string `json:"mark,omitempty"` // launch.Started.Mark: its processes carry it in their environment
	Namespace string `json:"namespace,omitempty"`
	Run       string `json:"run,omitempty"`
}

func recordKey(id string) string { return activeDir + "/" + id + ".json" }

// save writes the record (overwriting the previous version: one writer, the drill, then its
// cleanup).
func saveRecord(ctx context.Context, s providers.Store, rec *DrillRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if _, err := s.Write(ctx, recordKey(rec.ID), bytes.NewReader(b), providers.WriteOptions{Size: int64(len(b))}); err != nil {
		return fmt.Errorf("drill record %s in %s: %w", recordKey(rec.ID), s, err)
	}
	return nil
}

// Records reads the drill records in the state store, oldest first; open only: those not closed.
func Records(ctx context.Context, s providers.Store, open bool) ([]DrillRecord, error) {
	var keys []string
	err := s.List(ctx, activeDir, func(o providers.Object) error {
		rest := strings.TrimPrefix(o.Key, activeDir+"/")
		if strings.HasSuffix(rest, ".json") && !strings.Contains(rest, "/") {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, providers.ErrNotFound) {
		return nil, fmt.Errorf("list %s in %s: %w", activeDir, s, err)
	}
	sort.Strings(keys)
	if len(keys) > maxHistory {
		keys = keys[len(keys)-maxHistory:]
	}
	var out []DrillRecord
	for _, k := range keys {
		var rec DrillRecord
		b, err := providers.ReadSmall(ctx, s, k, providers.ReadOptions{}, maxRecordBytes)
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			return out, fmt.Errorf("drill record %s in %s: %w", k, s, err)
		}
		rec.Key = k
		if !open || rec.Closed == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// thisHost names the machine and its boot, so that a pid is only ever compared on the host and
// boot it was recorded on.
func thisHost() (host, boot string) {
	host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		boot = strings.TrimSpace(string(b))
	}
	return host, boot
}

// drillProcess judges the drill process a record names with failover's rules (JudgeProcess):
// Gone only when proven; a process whose start time cannot be read (/proc mounted hidepid, an
// unreadable entry) or a record or host that does not identify it is CannotTell, never gone.
func drillProcess(procs *lockowner.Checker, rec *DrillRecord, boot string) (lockowner.Liveness, string) {
	if boot == "" {
		return lockowner.CannotTell, "this host's boot id cannot be read"
	}
	start, _ := strconv.ParseUint(rec.PIDStart, 10, 64) // 0 when unreadable: gone only by ESRCH
	if procs == nil {
		procs = &lockowner.Checker{}
	}
	return procs.JudgeProcess(rec.PID, start)
}

// groupAlive says whether process group pgid may still hold a live process. Only kill(-pgid, 0)
// answering ESRCH, or every member being visible in /proc and a zombie, is "gone": a group that
// exists but none of whose members this process can read (/proc mounted hidepid, another user's
// processes) still runs as far as anyone here can tell.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if procHidden() {
		return true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	seen := false
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.pgrp == pgid {
			if p.live() {
				return true
			}
			seen = true
		}
	}
	return !seen // it exists, yet no member could be read: cannot tell
}

// procHidden says whether this process cannot see every process of the host in /proc: pid 1
// exists (kill(1, 0) does not answer ESRCH) yet its /proc entry cannot be read (hidepid).
func procHidden() bool {
	if _, err := os.Stat("/proc/1/stat"); err == nil {
		return false
	}
	return !errors.Is(syscall.Kill(1, 0), syscall.ESRCH)
}

// stopGroup ends a recorded candidate's process group: SIGTERM, then SIGKILL after grace — each
// signal only while groupProof holds (the group is provably the drill's), so that a record
// naming another group, or a leader whose pid was reused, signals nothing.
func stopGroup(ctx context.Context, rec *DrillRecord, c CandidateRecord, grace time.Duration) error {
	if c.PGID > 1 && !groupAlive(c.PGID) {
		return nil
	}
	if err := groupProof(rec, c); err != nil {
		return fmt.Errorf("%w: not signalled", err)
	}
	_ = syscall.Kill(-c.PGID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for groupAlive(c.PGID) && time.Now().Before(deadline) {
		if err := wait.Sleep(ctx, 50*time.Millisecond); err != nil {
			break
		}
	}
	if groupAlive(c.PGID) {
		if err := groupProof(rec, c); err != nil {
			return fmt.Errorf("%w: not killed", err)
		}
		_ = syscall.Kill(-c.PGID, syscall.SIGKILL)
		for i := 0; i < 40 && groupAlive(c.PGID); i++ {
			if wait.Sleep(ctx, 50*time.Millisecond) != nil {
				break
			}
		}
	}
	if groupAlive(c.PGID) {
		return fmt.Errorf("process group %d of %s still runs", c.PGID, c.Region)
	}
	return nil
}

// OpenFailover is the failover the journal holds open: the newest run that began changing the
// router, unless it closed (back at its baseline). run is "" when none is open.
func OpenFailover(ctx context.Context, s providers.Store) (run string, start *failover.Record, err error) {
	runs, err := failover.Runs(ctx, s)
	if err != nil {
		return "", nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		recs, err := failover.ReadRun(ctx, s, runs[i])
		if err != nil {
			return "", nil, err
		}
		var st *failover.Record
		closed := false
		for j := range recs {
			switch {
			case recs[j].Kind == failover.RecStart && st == nil:
				st = &recs[j]
			case recs[j].Kind == failover.RecDone && recs[j].Closed:
				closed = true
			}
		}
		if st == nil {
			continue
		}
		if closed {
			return "", nil, nil
		}
		return runs[i], st, nil
	}
	return "", nil, nil
}

// restorer puts back what a drill changed, from its record: the router to the baseline (a ramped
// abort with the failover executor), the candidates stopped, the faults put back, the temp dir
// removed. The drill's own teardown and `drill cleanup` share it.
type restorer struct {
	rec      *DrillRecord
	fleet    *fleet.Fleet // as the executor sees it: the candidates' endpoints
	manifest *manifest.Manifest
	state    providers.Store
	router   router.Driver
	signals  failover.SignalSource
	replica  func(region string) (providers.Store, error)
	log      *slog.Logger
	now      func() time.Time
	holder   string // who runs the abort
	// original gives a fault's original bytes when they are still in memory (the drill's own
	// teardown); nil or !ok: read the copy in the state store.
	original func(name string) ([]byte, bool)
	td       *Teardown
	abortRun string
	// drill is the drill file whose faults may be put back (faultProof).
	drill *Drill
	// own records a run the restorer's abort starts as the drill's, before its first router
	// write (Executor.BeforeChange).
	own func(run string, token int64) error
	// ownTokens are the fencing tokens this very process's executors took (the drill's own
	// teardown only): a lock held under one of them is its own killed orchestrator's, and is
	// broken. Any other lock is left to the executor's judgement of its holder.
	ownTokens func() []int64
}

// routerBack returns the router to the record's baseline; it says what it did, or adds to Left
// what it could not.
func (r *restorer) routerBack(ctx context.Context) string {
	base := r.rec.Baseline
	rs, err := r.router.Read(ctx)
	if err != nil {
		r.left("router %s: cannot read it to check the baseline: %v", r.router, err)
		return ""
	}
	if rs.Weights.Equal(base.Weights) {
		r.td.RouterAtBaseline = true
		return "the router is at the baseline"
	}
	diff := strings.Join(router.Diff(base, rs), ", ")
	run, start, err := OpenFailover(ctx, r.state)
	switch {
	case err != nil:
		r.left("router not at the baseline (%s); the journal cannot be read: %v", diff, err)
		return ""
	case run == "":
		r.left("router not at the baseline (%s) and no failover is open to abort: someone changed it outside a journaled run", diff)
		return ""
	case !slices.Contains(r.rec.Runs, run):
		r.left("router not at the baseline (%s): the open failover run %s (%s) is not one this drill started (its runs: %s), so it is not undone: `lifeboat failover abort` when that is what you want",
			diff, run, describeStart(start), orNoneText(r.rec.Runs))
		return ""
	case !start.Baseline.Equal(base.Weights):
		r.left("router not at the baseline the drill found (%s); the open failover run %s goes back to other weights (%s), so the drill does not abort it: `lifeboat failover abort` when that is what you want", diff, run, strings.Join(router.Diff(router.RouterState{Weights: start.Baseline}, router.RouterState{Weights: base.Weights}), ", "))
		return ""
	}
	ttl := time.Duration(r.rec.LockTTL * float64(time.Second))
	ex := &failover.Executor{Fleet: r.fleet, Store: r.state, Router: r.router, Signals: r.signals, Log: r.log,
		Holder: r.holder, LockTTL: ttl, Now: r.now}
	// Under the lock, before the abort's first write: the run it undoes is still the drill's
	// (no other operator's run began since it was looked at), and the abort is recorded as the
	// drill's own.
	ex.BeforeChange = func(abort string, token int64) error {
		now, _, err := OpenFailover(ctx, r.state)
		if err != nil {
			return err
		}
		if now != run {
			return fmt.Errorf("the open failover run is now %s, not the drill's run %s: not undone", now, run)
		}
		if r.own != nil {
			return r.own(abort, token)
		}
		return nil
	}
	opts := failover.RunOptions{Event: failover.Event{Kind: failover.Abort}, Reason: fmt.Sprintf("drill %s: back to the baseline it found (its run %s)", r.rec.Drill, run),
		HoldTimeout: 10 * r.fleet.Failover.StepInterval}
	var out *failover.Outcome
	for attempt := 0; ; attempt++ {
		out, err = ex.Run(ctx, opts)
		// A lock whose holder is proven dead the abort takes over itself (the executor's
		// judgement). Broken here only: a lock under a token this very process's executors
		// took — its own orchestrator, killed by a drill fault.
		var held *failover.LockHeldError
		if attempt > 0 || !errors.As(err, &held) || r.ownTokens == nil || !slices.Contains(r.ownTokens(), held.Lock.Token) {
			break
		}
		why := fmt.Sprintf("drill %s: its lock (token %d) is held by its own killed orchestrator in this process: broken to put the router back", r.rec.Drill, held.Lock.Token)
		r.log.Info("breaking the drill's own failover lock", "lock", held.Lock.ID, "token", held.Lock.Token)
		if _, uerr := ex.Unlock(ctx, held.Lock.ID, why); uerr != nil {
			err = fmt.Errorf("%w; and breaking it failed: %v", err, uerr)
			break
		}
	}
	if out != nil && out.Run != "" {
		r.abortRun = out.Run
	}
	if err != nil {
		r.left("router not at the baseline (%s): the abort of run %s failed: %v", diff, run, err)
		return ""
	}
	rs, err = r.router.Read(ctx)
	if err != nil {
		r.left("router %s: cannot read it after the abort: %v", r.router, err)
		return ""
	}
	if !rs.Weights.Equal(base.Weights) {
		r.left("router not at the baseline after the abort run %s: %s", r.abortRun, strings.Join(router.Diff(base, rs), ", "))
		return ""
	}
	r.td.RouterAtBaseline = true
	return fmt.Sprintf("the router is back at the baseline (abort run %s, %d step(s), ramped)", r.abortRun, out.Steps)
}

// describeStart names who started a run and why (peer text: sanitised).
func describeStart(st *failover.Record) string {
	if st == nil {
		return "no start record"
	}
	ev := "a run"
	if st.Event != nil {
		ev = st.Event.String()
	}
	return fmt.Sprintf("%s by %s, reason %q", ev, providers.Sanitize(st.Holder, 200), providers.Sanitize(st.Reason, 200))
}

func orNoneText(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func (r *restorer) left(format string, args ...any) {
	r.td.Left = append(r.td.Left, providers.Redact(fmt.Sprintf(format, args...)))
}

// faultsBack writes every fault's original bytes back (checked against the manifest's sums),
// then removes its copy.
func (r *restorer) faultsBack(ctx context.Context) {
	for _, f := range r.rec.Faults {
		mf, err := faultProof(r.rec, f, r.drill, r.fleet, r.manifest)
		if err != nil {
			r.left("%v: nothing read, written or deleted", err)
			continue
		}
		data, ok := []byte(nil), false
		if r.original != nil {
			data, ok = r.original(f.Name)
		}
		if !ok {
			b, err := providers.ReadSmall(ctx, r.state, f.Copy, providers.ReadOptions{}, maxFaultFile)
			if err != nil {
				r.left("fault %s: the original of %s (copy %s in the state store) cannot be read: %v", f.Name, f.Path, f.Copy, err)
				continue
			}
			data = b
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != mf.Sums.SHA256 || int64(len(data)) != mf.Size {
			r.left("fault %s: the bytes to put back at %s do not match the manifest (sha256 %s, %d bytes): not written back", f.Name, f.Path, mf.Sums.SHA256, mf.Size)
			continue
		}
		store, err := r.replica(f.Region)
		if err != nil {
			r.left("fault %s: open the replica of %s: %v", f.Name, f.Region, err)
			continue
		}
		o := providers.WriteOptions{Size: int64(len(data)), Checksums: providers.Checksums(mf.Sums)}
		if _, err := store.Write(ctx, f.Path, bytes.NewReader(data), o); err != nil {
			r.left("fault %s: put %s back in %s: %v", f.Name, f.Path, store, err)
			continue
		}
		r.td.FaultsUndone = append(r.td.FaultsUndone, f.Name)
		if err := r.state.Delete(ctx, f.Copy, providers.DeleteOptions{}); err != nil && !errors.Is(err, providers.ErrNotFound) {
			r.log.Warn("the copy of a put-back fault was not removed", "key", f.Copy, "err", err)
		}
	}
}

// lockCheck: the failover lock is released. Its expiry is the holder's wall clock, never judged
// here (issue 18: leases are judged on the observer's own clock), so a lock that was not
// released is left behind whatever time it names.
func (r *restorer) lockCheck(ctx context.Context) {
	lk, ok, err := (&failover.Locker{Store: r.state, Now: r.now}).Read(ctx)
	switch {
	case err != nil:
		r.left("failover lock: cannot read it: %v", err)
	case ok && !lk.Released:
		r.left("failover lock %s held by %s", lk.ID, lk.Holder)
	default:
		r.td.LockReleased = true
	}
}

// close marks the record closed with its outcome and what was left behind.
func (r *restorer) close(ctx context.Context, outcome string) error {
	t := time.Now().UTC()
	if r.now != nil {
		t = r.now().UTC()
	}
	r.rec.Closed, r.rec.Outcome, r.rec.Left = &t, outcome, append([]string{}, r.td.Left...)
	return saveRecord(ctx, r.state, r.rec)
}

// Cleaner cleans up after drills whose process died: every open drill record in the fleet's state
// store is undone as teardown would have.
type Cleaner struct {
	Fleet    *fleet.Fleet
	Manifest *manifest.Manifest
	// Drill is the drill file: only the replica faults it names are put back.
	Drill *Drill
	// FleetDigest is the fleet file's digest as the caller read it (sha256:<hex>): a record
	// bound to another is refused. "": the file is read again and digested.
	FleetDigest string
	Open        func(ctx context.Context, url string) (providers.Store, error)
	Router      router.Driver // nil: failover.OpenRouter(Fleet)
	Log         *slog.Logger
	Probe       warm.ProbeOptions
	Now         func() time.Time
	Grace       time.Duration // a candidate's SIGTERM grace; 0: 10s
	// Procs judges whether a record's drill process still runs; nil: this host for real.
	Procs *lockowner.Checker
}

// CleanupResult is what one drill's clean-up did. JSON field names are stable.
type CleanupResult struct {
	ID       string    `json:"id"`
	Drill    string    `json:"drill"`
	Started  time.Time `json:"started"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Router   string    `json:"router"`
	AbortRun string    `json:"abort_run,omitempty"`
	Teardown Teardown  `json:"teardown"`
	Skipped  string    `json:"skipped,omitempty"` // why it was not cleaned (a live drill)
}

// ErrDrillRunning: a recorded drill's process still runs; it cleans up after itself.
var ErrDrillRunning = errors.New("drill still running")

// Cleanup undoes every open drill record. Its error is nil only when nothing is left behind
// (results say what was done either way).
func (c *Cleaner) Cleanup(ctx context.Context) ([]CleanupResult, error) {
	log := c.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	state, err := c.Open(ctx, c.Fleet.State)
	if err != nil {
		return nil, fmt.Errorf("state store %s: %w", c.Fleet.State, err)
	}
	defer state.Close()
	recs, err := Records(ctx, state, true)
	if err != nil {
		return nil, err
	}
	rtr := c.Router
	if rtr == nil {
		if rtr, err = fleet.OpenRouter(c.Fleet); err != nil {
			return nil, err
		}
	}
	stores := map[string]providers.Store{}
	defer func() {
		for _, s := range stores {
			_ = s.Close()
		}
	}()
	replica := func(region string) (providers.Store, error) {
		reg := c.Fleet.Regions[region]
		if reg == nil || reg.Replica == "" {
			return nil, fmt.Errorf("region %q has no replica in %s", region, c.Fleet.File)
		}
		if s := stores[reg.Replica]; s != nil {
			return s, nil
		}
		s, err := c.Open(ctx, reg.Replica)
		if err != nil {
			return nil, err
		}
		stores[reg.Replica] = s
		return s, nil
	}
	fleetDigest := c.FleetDigest
	if fleetDigest == "" {
		fleetDigest = digestFile(c.Fleet.File, fleet.MaxBytes).Digest
	}
	host, boot := thisHost()
	grace := c.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	var out []CleanupResult
	var problems []string
	live := 0
	for i := range recs {
		rec := &recs[i]
		res := CleanupResult{ID: rec.ID, Drill: rec.Drill, Started: rec.Started, Host: rec.Host, PID: rec.PID,
			Teardown: Teardown{Stopped: []string{}, FaultsUndone: []string{}, Left: []string{}}}
		if err := recordProof(rec, fleetDigest); err != nil {
			res.Skipped = err.Error() + "; nothing in it was acted on"
		}
		switch {
		case res.Skipped != "":
		case rec.Host != host || rec.Boot != boot:
			res.Skipped = fmt.Sprintf("the drill ran on %s (boot %s): its candidates and temp dir are there; run the clean-up on that host", rec.Host, rec.Boot)
		default:
			switch l, why := drillProcess(c.Procs, rec, boot); l {
			case lockowner.Alive:
				res.Skipped = fmt.Sprintf("the drill still runs (pid %d): it tears down itself; stop it with Ctrl-C", rec.PID)
				live++
			case lockowner.CannotTell:
				res.Skipped = fmt.Sprintf("cannot tell whether the drill still runs (%s): treated as running, nothing in its record was touched; run the clean-up as the drill's user, or once the process is provably gone", why)
			}
		}
		if res.Skipped != "" {
			problems = append(problems, fmt.Sprintf("drill %s (%s): %s", rec.Drill, rec.ID, res.Skipped))
			out = append(out, res)
			continue
		}
		r := &restorer{rec: rec, fleet: cleanupFleet(c.Fleet, rec), manifest: c.Manifest, state: state, router: rtr,
			replica: replica, log: log, now: c.Now, holder: fmt.Sprintf("lifeboat drill cleanup %s (pid %d)", rec.Drill, os.Getpid()), td: &res.Teardown,
			drill: c.Drill,
			own: func(run string, token int64) error {
				rec.Runs, rec.Tokens = append(rec.Runs, run), append(rec.Tokens, token)
				return saveRecord(ctx, state, rec)
			}}
		po := c.Probe
		po.Models = rec.Models
		r.signals = &failover.LiveSignals{Fleet: r.fleet, Probe: po}
		res.Router = r.routerBack(ctx)
		res.AbortRun = r.abortRun
		for _, cand := range rec.Candidates {
			if cand.Run != "" {
				continue // in a cluster: its launcher removes it below, then it is checked gone
			}
			if err := stopGroup(ctx, rec, cand, grace); err != nil {
				r.left("%v", err)
				continue
			}
			res.Teardown.Stopped = append(res.Teardown.Stopped, cand.Region)
		}
		for _, name := range c.Fleet.RegionNames() {
			removed, err := launcherLeftovers(ctx, c.Fleet, name)
			if err != nil {
				r.left("the candidate of %s: %v", name, err)
				continue
			}
			if len(removed) > 0 {
				log.Info("removed what a launcher left behind", "region", name, "removed", removed)
				if !slices.Contains(res.Teardown.Stopped, name) {
					res.Teardown.Stopped = append(res.Teardown.Stopped, name)
				}
			}
		}
		for _, cand := range rec.Candidates {
			if cand.Run == "" {
				continue
			}
			if err := bootGone(ctx, c.Fleet, cand); err != nil {
				r.left("the candidate of %s: %v", cand.Region, err)
			} else if !slices.Contains(res.Teardown.Stopped, cand.Region) {
				res.Teardown.Stopped = append(res.Teardown.Stopped, cand.Region)
			}
		}
		r.faultsBack(ctx)
		if rec.TempDir != "" {
			if err := tempDirProof(rec.TempDir); err != nil {
				r.left("%v: not removed", err)
			} else if err := os.RemoveAll(rec.TempDir); err != nil {
				r.left("temp dir %s: %v", rec.TempDir, err)
			} else {
				res.Teardown.TempRemoved = true
			}
		}
		r.lockCheck(ctx)
		if err := r.close(context.WithoutCancel(ctx), "cleaned up"); err != nil {
			r.left("%v", err)
		}
		for _, l := range res.Teardown.Left {
			problems = append(problems, fmt.Sprintf("drill %s (%s): left behind: %s", rec.Drill, rec.ID, l))
		}
		out = append(out, res)
	}
	if len(problems) > 0 {
		err := errors.New(strings.Join(problems, "; "))
		if live > 0 {
			err = fmt.Errorf("%w: %w", ErrDrillRunning, err)
		}
		return out, err
	}
	return out, nil
}

// launcherLeftovers asks the region's launcher, when it is a fleet.LeftoverCleaner (one whose
// candidates outlive their process elsewhere than in this host's process groups: pods), to remove
// what its earlier boots left behind, by its own marks, never anything it did not create.
func launcherLeftovers(ctx context.Context, f *fleet.Fleet, region string) ([]string, error) {
	if !f.Regions[region].Candidate() {
		return nil, nil
	}
	o, err := warm.FleetBootOptions(f, region, fleet.LaunchOptions{})
	if err != nil {
		return nil, err
	}
	lc, ok := o.Launcher.(fleet.LeftoverCleaner)
	if !ok {
		return nil, nil
	}
	return lc.CleanupLeftovers(ctx)
}

// bootGone checks that nothing of a candidate recorded by namespace and run label (a cluster
// launcher's) is left, asking the launcher the fleet configures for its region — the record
// only names what is looked up, in the namespace the fleet allows.
func bootGone(ctx context.Context, f *fleet.Fleet, c CandidateRecord) error {
	what := fmt.Sprintf("boot %s in namespace %s", providers.Sanitize(c.Run, 40), providers.Sanitize(c.Namespace, 80))
	r, ok := f.Regions[c.Region]
	if !ok || !r.Candidate() {
		return fmt.Errorf("%s: the fleet has no candidate region %q: not checked", what, providers.Sanitize(c.Region, 80))
	}
	o, err := warm.FleetBootOptions(f, c.Region, fleet.LaunchOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	bc, ok := o.Launcher.(fleet.BootChecker)
	if !ok {
		return fmt.Errorf("%s: the region's launcher cannot look for it: not checked", what)
	}
	left, err := bc.BootLeft(ctx, c.Namespace, c.Run)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("%s: still there: %s", what, strings.Join(left, ", "))
	}
	return nil
}

// cleanupFleet is the fleet with each candidate's endpoint set to where the dead drill booted it
// (none for a candidate it did not record: it takes no traffic).
func cleanupFleet(f *fleet.Fleet, rec *DrillRecord) *fleet.Fleet {
	fc := *f
	fc.Regions = map[string]*fleet.Region{}
	for n, r := range f.Regions {
		rc := *r
		if r.Candidate() {
			rc.Endpoint, rc.Signals.Metrics = "", ""
			for _, c := range rec.Candidates {
				if c.Region == n {
					rc.Endpoint = strings.TrimRight(c.URL, "/")
				}
			}
		}
		fc.Regions[n] = &rc
	}
	return &fc
}

// LauncherLeftovers asks the launcher of every region that has one able to
// (fleet.LeftoverCleaner: kubernetes) to remove what its boots left behind when their process
// died — a drill's candidates or a `lifeboat boot` killed with -9 — by its own labels. Those
// launchers keep no drill record: the cluster's labels are the record. It returns what was
// removed; the error names the regions whose leftovers could not be removed.
func LauncherLeftovers(ctx context.Context, f *fleet.Fleet) ([]string, error) {
	var out, problems []string
	for _, name := range f.RegionNames() {
		if !f.Regions[name].Candidate() {
			continue
		}
		o, err := warm.FleetBootOptions(f, name, fleet.LaunchOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("region %s: %v", name, err))
			continue
		}
		lc, ok := o.Launcher.(fleet.LeftoverCleaner)
		if !ok {
			continue
		}
		removed, err := lc.CleanupLeftovers(ctx)
		for _, r := range removed {
			out = append(out, fmt.Sprintf("region %s: %s", name, r))
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("region %s: %v", name, err))
		}
	}
	if len(problems) > 0 {
		return out, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}
