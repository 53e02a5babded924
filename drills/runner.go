package drills

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lifeboat/failover"
	"lifeboat/internal/base/wait"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
	"lifeboat/verify/replicate"
	"lifeboat/verify/warm"
)

// Runner runs one drill. Fields are set by the caller; Run may be called once.
type Runner struct {
	Drill *Drill
	// Earlier are the problems already found in the drill file (a DrillError's, Drill its
	// Partial): Check reports them with its own, leaving out those about the same fields.
	Earlier  []string
	Fleet    *failover.Fleet
	Manifest *manifest.Manifest
	// Open opens a store URL (replicas, the state store) with the caller's options.
	Open func(ctx context.Context, url string) (providers.Store, error)
	// Router is the fleet's router; nil: failover.OpenRouter(Fleet).
	Router failover.Driver
	Log    *slog.Logger
	// Approve is asked before each step the drill file lists under approve; nil refuses.
	Approve func(ctx context.Context, step string) (bool, error)
	// OnStep is told each step as it starts (Status "") and as it ends.
	OnStep func(StepResult)
	// Command rewrites a launcher command (the CLI makes "lifeboat ..." run its own binary).
	Command func(string) string
	// TempDir is where the drill's working directory is made; "" os.TempDir(). It is removed at
	// teardown.
	TempDir string
	// Probe tunes the warm prober of the boots and the failover's preflight.
	Probe warm.ProbeOptions
	// HTTPClient carries the synthetic requests; nil: a client with per-request deadlines.
	HTTPClient *http.Client
	Now        func() time.Time

	// Evidence: the Lifeboat version, the operator (""; Operator()), how approvals are given
	// (ApproveVia*), and the fleet file's and manifest's digests as the caller read them (zero:
	// the files are read again and digested).
	Version        string
	Operator       string
	ApproveVia     string
	FleetDigest    FileDigest
	ManifestDigest FileDigest

	// FromCurrent starts the drill while the router is not at the fleet's baseline (a failover
	// is open in the journal): the router as found is the drill's baseline.
	FromCurrent bool
}

// ErrNotAtBaseline: the router is not at the fleet's baseline (a failover run moved it), or a
// previous drill left something behind; the drill refuses to start (a refusal).
var ErrNotAtBaseline = errors.New("refused: the router is not at the fleet's baseline")

// ErrLeftovers: a previous drill did not finish its teardown (its process died); `lifeboat drill
// cleanup` puts back what it changed (refused until then).
var ErrLeftovers = errors.New("refused: a previous drill left things behind")

// run is one drill's state.
type run struct {
	*Runner
	ctx    context.Context
	rep    *Report
	start  time.Time
	tmp    string
	state  providers.Store
	stores map[string]providers.Store // replica URL → store
	router *faultRouter
	base   failover.Driver
	signal *failover.LiveSignals
	exFl   *failover.Fleet // the fleet as the executor sees it (endpoints of the booted candidates)

	files     []*fileFault
	drec      *DrillRecord   // what teardown (or a clean-up after a crash) must undo, in the state store
	faultIdx  map[string]int // fault name → index in rep.Faults
	boots     map[string]*warm.BootResult
	insts     map[string]warm.Instance
	models    []string
	baseline  failover.Weights
	evacRun   string
	failed    bool      // a step failed: later steps that need it are skipped
	stepStart time.Time // when the current step started

	mu       sync.Mutex
	requests []Request
	sampler  context.CancelFunc
	sampled  chan struct{}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Check checks the drill against its fleet: the lost region, fault regions and expectation
// targets must exist (a name close to one that does gets "did you mean"); the fleet needs a
// router, a state store and an RTO. Every problem is reported at once, with its line.
func (r *Runner) Check() error {
	d, f := r.Drill, r.Fleet
	c := &yamlnode.Checker{Name: d.File}
	at := c.Errf
	regions := f.RegionNames()
	if f.Regions[d.Lose] == nil {
		at(d.KeyLines["lose"], "lose", "region %q is not in the fleet %s (regions: %s)%s", d.Lose, f.File, strings.Join(regions, ", "), didYouMean(d.Lose, regions))
	}
	for i, fl := range d.Faults {
		if fl.Region != "" && f.Regions[fl.Region] == nil {
			at(fl.Line, fmt.Sprintf("faults[%d].region", i), "region %q is not in the fleet%s", fl.Region, didYouMean(fl.Region, regions))
		}
		if fl.Path != "" && r.Manifest != nil && !slices.ContainsFunc(r.Manifest.Files, func(m manifest.File) bool { return m.Path == fl.Path }) {
			at(fl.Line, fmt.Sprintf("faults[%d].path", i), "%s is not a file of the manifest", fl.Path)
		}
		if k, ok := kindOfFault(fl.Kind); ok {
			if msg := k.fleetProblem(fl, f); msg != "" {
				at(fl.Line, fmt.Sprintf("faults[%d].region", i), "%s", msg)
			}
		}
	}
	for i, e := range d.Expect {
		field := fmt.Sprintf("expect[%d].%s", i, e.Kind)
		switch e.Kind {
		case ExpectResidency:
			if _, ok := f.Tenants[e.Target]; !ok {
				at(e.Line, field, "no tenant class %q in the fleet%s", e.Target, didYouMean(e.Target, slices.Sorted(maps.Keys(f.Tenants))))
			}
		case ExpectWarm, ExpectNotWarm:
			if f.Regions[e.Target] == nil {
				at(e.Line, field, "region %q is not in the fleet%s", e.Target, didYouMean(e.Target, regions))
			}
		}
	}
	if f.Router.Driver == "" {
		at(d.KeyLines["fleet"], "fleet", "%s has no router: a drill moves traffic through it", f.File)
	}
	if f.State == "" {
		at(d.KeyLines["fleet"], "fleet", "%s has no state store (state:): the journal, lock and drill history live there", f.File)
	}
	if d.RTO <= 0 && f.SLA.RTO <= 0 {
		at(max(d.KeyLines["sla"], 1), "sla.rto", "set the RTO here or in the fleet file (sla: {rto: 30m})")
	}
	p := c.Problems
	if len(r.Earlier) > 0 {
		p = append(slices.Clone(r.Earlier), failover.UnrelatedProblems(d.File, r.Earlier, p)...)
	}
	if len(p) > 0 {
		return &DrillError{Problems: p}
	}
	return nil
}

func (r *Runner) rto() time.Duration {
	if r.Drill.RTO > 0 {
		return r.Drill.RTO
	}
	return r.Fleet.SLA.RTO
}

// Run runs the drill. The report is always returned (with what was found so far) unless the
// input is bad; an error is returned only when the drill could not run at all.
func (r *Runner) Run(ctx context.Context) (*Report, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	router := r.Router
	if router == nil {
		var err error
		if router, err = failover.OpenRouter(r.Fleet); err != nil {
			return nil, err
		}
	}
	x := &run{Runner: r, ctx: ctx, start: r.now(), stores: map[string]providers.Store{}, base: router,
		faultIdx: map[string]int{}, boots: map[string]*warm.BootResult{}, insts: map[string]warm.Instance{}}
	x.rep = &Report{Schema: SchemaID, Drill: r.Drill.Name, File: r.Drill.File, Fleet: r.Fleet.File, Model: r.Fleet.Model.Name,
		Lost: r.Drill.Lose, Router: providers.Redact(router.String()), Started: x.start.UTC(),
		Steps: []StepResult{}, Faults: []FaultResult{}, Expect: []ExpectResult{}, Verify: []VerifyRun{}, Repairs: []Repair{},
		Boots: []BootSummary{}, Runs: []string{}, Weights: []WeightPoint{}, Requests: []Request{}, Classes: []ClassTraffic{},
		Teardown: Teardown{Stopped: []string{}, FaultsUndone: []string{}, Left: []string{}}}
	x.rep.SLA.RTOSeconds = r.rto().Seconds()
	x.rep.Evidence = x.evidence()
	// every answer to an approval, wherever the run asks for it, goes into the evidence
	if ask := r.Approve; ask != nil {
		rc := *r
		rc.Approve = func(ctx context.Context, step string) (bool, error) {
			ok, err := ask(ctx, step)
			x.recordApproval(step, ok, err)
			return ok, err
		}
		x.Runner = &rc
	}
	x.router = &faultRouter{Driver: router, now: r.now}
	for i, f := range r.Drill.Faults {
		x.rep.Faults = append(x.rep.Faults, FaultResult{Fault: f})
		x.faultIdx[f.Name] = i
		if effectOf(f) == effectRouter {
			x.router.afterStep, x.router.duration = f.AfterStep, f.Duration
		}
	}
	tmp, err := os.MkdirTemp(r.TempDir, "lifeboat-drill-")
	if err != nil {
		return nil, fmt.Errorf("drill working directory: %w", err)
	}
	x.tmp = tmp
	x.state, err = r.Open(ctx, r.Fleet.State)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("state store %s: %w", r.Fleet.State, err)
	}
	defer x.state.Close()
	if err := x.preflight(); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := x.openReplicas(); err != nil {
		x.teardown()
		return nil, err
	}
	if err := x.plantFileFaults(); err != nil {
		x.teardown()
		return nil, err
	}
	for _, name := range r.Drill.Order() {
		x.step(name)
	}
	for _, name := range r.Drill.Skip {
		x.rep.Steps = append(x.rep.Steps, StepResult{Name: name, Status: Skipped, Detail: "skipped by the drill file"})
	}
	x.finish()
	return x.rep, nil
}

// preflight refuses to start over a previous drill's leftovers or while the router is not at
// the fleet's baseline (unless FromCurrent), then records the baseline in the state store before
// anything changes.
func (x *run) preflight() error {
	ctx := x.ctx
	open, err := Records(ctx, x.state, true)
	if err != nil {
		return err
	}
	for _, rec := range open {
		how := fmt.Sprintf("run `lifeboat drill cleanup %s` to put it back", x.Drill.File)
		if host, boot := thisHost(); rec.Host == host && rec.Boot == boot && running(rec.PID, rec.PIDStart) {
			how = "it is still running"
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
			ErrNotAtBaseline, run, ev, start.Holder, start.Time.Format(time.RFC3339), start.Reason, strings.Join(failover.Diff(failover.RouterState{Weights: start.Baseline}, rs), ", "))
	}
	host, boot := thisHost()
	_, _, pstart, _ := procStat(os.Getpid())
	x.drec = &DrillRecord{ID: x.start.UTC().Format("20060102T150405.000Z") + "-" + safeName(x.Drill.Name) + "-" + strconv.Itoa(os.Getpid()),
		Drill: x.Drill.Name, File: x.Drill.File, Fleet: x.Fleet.File, Host: host, Boot: boot, PID: os.Getpid(), PIDStart: pstart,
		Holder: x.holder(), LockTTL: x.Drill.LockTTL.Seconds(), Started: x.start.UTC(), FromCurrent: x.FromCurrent,
		Baseline: rs.Clone(), TempDir: x.tmp, Faults: []FaultUndo{}, Candidates: []CandidateRecord{}, Left: []string{}}
	x.baseline = rs.Weights.Clone()
	return saveRecord(ctx, x.state, x.drec)
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
		file := manifest.File{}
		for _, mf := range x.Manifest.Files {
			if mf.Path == f.Path {
				file = mf
			}
		}
		ff := &fileFault{f: f, store: x.stores[x.Fleet.Regions[f.Region].Replica], file: file}
		x.files = append(x.files, ff) // before plant: teardown puts back whatever was changed
		keep := func(orig []byte) error {
			sum := sha256.Sum256(orig)
			u := FaultUndo{Name: f.Name, Kind: f.Kind, Region: f.Region, Path: f.Path, Copy: fmt.Sprintf("%s/%s/faults/%d.orig", activeDir, x.drec.ID, i),
				Size: int64(len(orig)), SHA256: hex.EncodeToString(sum[:])}
			if _, err := x.state.Write(x.ctx, u.Copy, bytes.NewReader(orig), providers.WriteOptions{Size: u.Size}); err != nil {
				return fmt.Errorf("copy the original to %s in %s: %w", u.Copy, x.state, err)
			}
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
// whatever kind), sorted.
func (x *run) candidates() []string {
	var out []string
	for _, n := range x.Fleet.RegionNames() {
		if x.Fleet.Regions[n].Candidate() {
			out = append(out, n)
		}
	}
	return out
}

// verify quick-verifies every region's replica, deep for the candidates'; in the first pass,
// replicas that failed are repaired from one that passed.
func (x *run) verify(phase string) (string, error) {
	jobs := x.verifyJobs(phase)
	results := x.runVerify(jobs)
	vr := VerifyRun{Phase: phase}
	var bad, good, unproven []string
	for i, j := range jobs {
		res := results[i]
		vr.Replicas = append(vr.Replicas, x.replicaVerdict(j, res))
		switch {
		case res.Status == verify.ReplicaOK:
			good = append(good, j.region)
		case res.Status == verify.ReplicaUnverified && j.mode == verify.ModeQuick:
			unproven = append(unproven, j.region) // nothing failed; nothing proven either (no native checksum)
		default:
			bad = append(bad, j.region)
		}
	}
	x.rep.Verify = append(x.rep.Verify, vr)
	detail := fmt.Sprintf("%d replica(s): %d OK", len(jobs), len(good))
	if len(unproven) > 0 {
		detail += fmt.Sprintf(", %d UNVERIFIED (no native checksum to compare quickly: %s)", len(unproven), strings.Join(unproven, ", "))
	}
	if len(bad) == 0 {
		return detail, nil
	}
	detail += fmt.Sprintf(", %d failed (%s)", len(bad), strings.Join(bad, ", "))
	if phase == "after" || len(good) == 0 {
		return detail, fmt.Errorf("replicas failed verification: %s", strings.Join(bad, ", "))
	}
	unrepaired := x.repair(bad, good[0])
	detail += fmt.Sprintf("; repaired %d from %s", len(bad)-len(unrepaired), good[0])
	if len(unrepaired) > 0 {
		return detail, fmt.Errorf("could not repair %s", strings.Join(unrepaired, ", "))
	}
	if undetected := x.unexplained(bad); len(undetected) > 0 {
		return detail, fmt.Errorf("replicas broken by no injected fault: %s (a real gap: fix it)", strings.Join(undetected, ", "))
	}
	return detail, nil
}

// verifyJob is one replica to verify, named by the first region that has it.
type verifyJob struct {
	region string
	mode   verify.Mode
}

// verifyJobs: each distinct replica once, deep for a candidate's in the first pass.
func (x *run) verifyJobs(phase string) []verifyJob {
	var jobs []verifyJob
	seen := map[string]bool{}
	cands := x.candidates()
	for _, n := range x.Fleet.RegionNames() {
		u := x.Fleet.Regions[n].Replica
		if u == "" || seen[u] {
			continue
		}
		seen[u] = true
		mode := verify.ModeQuick
		if phase == "before" && slices.Contains(cands, n) {
			mode = verify.ModeDeep
		}
		jobs = append(jobs, verifyJob{n, mode})
	}
	return jobs
}

// runVerify verifies the jobs' replicas, all at once (each with 4 requests in flight).
func (x *run) runVerify(jobs []verifyJob) []verify.ReplicaResult {
	results := make([]verify.ReplicaResult, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := x.stores[x.Fleet.Regions[j.region].Replica]
			if j.mode == verify.ModeDeep {
				results[i] = verify.Deep(x.ctx, x.Manifest, s, verify.Options{Jobs: 4})
			} else {
				results[i] = verify.Quick(x.ctx, x.Manifest, s, verify.Options{Jobs: 4})
			}
		}()
	}
	wg.Wait()
	return results
}

// replicaVerdict is one replica's result for the report; its failed files detect file faults.
func (x *run) replicaVerdict(j verifyJob, res verify.ReplicaResult) ReplicaVerdict {
	rv := ReplicaVerdict{Region: j.region, URL: providers.Redact(res.URL), Mode: string(j.mode), Status: string(res.Status), Counts: map[string]int{}, Problems: []string{}, Error: providers.Redact(res.Error)}
	for st, c := range res.Counts {
		rv.Counts[string(st)] = c
	}
	for _, f := range res.Files {
		if f.Status.Failed() || f.Status == verify.StatusError {
			rv.Problems = append(rv.Problems, fmt.Sprintf("%s: %s", f.Path, f.Status))
			x.detectFile(j.region, f, res.URL, string(j.mode))
		}
	}
	return rv
}

// repair copies what is missing or wrong into each failed replica from the one in region from
// (deep: every byte checked), so that its candidate can boot; it returns the regions it could
// not repair.
func (x *run) repair(bad []string, from string) []string {
	var unrepaired []string
	src := x.stores[x.Fleet.Regions[from].Replica]
	for _, region := range bad {
		to := x.stores[x.Fleet.Regions[region].Replica]
		rr, err := replicate.Run(x.ctx, x.Manifest, src, to, replicate.Options{Deep: true, Log: x.log()})
		rp := Repair{Region: region, From: from}
		if rr != nil {
			rp.Status, rp.Copied = string(rr.Status), rr.Copied
		}
		if err != nil {
			rp.Detail = providers.Redact(err.Error())
		}
		if err != nil || rr == nil || rr.Status != replicate.OK {
			unrepaired = append(unrepaired, region)
		}
		x.rep.Repairs = append(x.rep.Repairs, rp)
	}
	return unrepaired
}

// unexplained are failed regions whose failure no injected file fault explains.
func (x *run) unexplained(bad []string) []string {
	var out []string
	for _, region := range bad {
		explained := false
		for _, ff := range x.files {
			explained = explained || x.Fleet.Regions[ff.f.Region].Replica == x.Fleet.Regions[region].Replica
		}
		if !explained {
			out = append(out, region)
		}
	}
	return out
}

func (x *run) detectFile(region string, f verify.FileResult, url, mode string) {
	for i := range x.rep.Faults {
		fr := &x.rep.Faults[i]
		if effectOf(fr.Fault) != effectReplica || fr.Path != f.Path || fr.Detected {
			continue
		}
		if x.Fleet.Regions[fr.Region].Replica != x.Fleet.Regions[region].Replica {
			continue
		}
		fr.Detected = true
		fr.Evidence = providers.Redact(fmt.Sprintf("%s verify of %s: %s %s (%s)", mode, url, f.Path, f.Status, f.Detail))
	}
}

// boot restores and boots a candidate of every region with an exec launcher, keeping the warm
// ones running for the failover and the traffic.
func (x *run) boot() (string, error) {
	cands := x.candidates()
	if len(cands) == 0 {
		return "", errors.New("no region has an exec launcher: nothing to boot")
	}
	type out struct {
		res *warm.BootResult
		err error
	}
	outs := make([]out, len(cands))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, region := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-x.ctx.Done():
				outs[i].err = x.ctx.Err()
				return
			}
			defer func() { <-sem }()
			outs[i].res, outs[i].err = x.bootOne(region)
		}()
	}
	wg.Wait()
	var warmN []string
	var problems []string
	for i, region := range cands {
		o := outs[i]
		bs := BootSummary{Region: region}
		if o.res != nil {
			bs.Verdict, bs.Reason, bs.OK, bs.URL = string(o.res.Verdict), providers.Redact(o.res.Reason), o.res.OK, o.res.URL
			bs.WarmS, bs.TTFTS, bs.TotalS = o.res.Timings.WarmS, o.res.Timings.TTFTS, o.res.Timings.TotalS
			x.boots[region] = o.res
			if o.res.Kept {
				x.insts[region] = o.res.Instance
				if len(x.models) == 0 {
					x.models = o.res.Models
				}
			}
		}
		if o.err != nil {
			bs.Verdict, bs.Reason = "ERROR", providers.Redact(o.err.Error())
		}
		x.rep.Boots = append(x.rep.Boots, bs)
		if bs.OK {
			warmN = append(warmN, region)
		} else {
			problems = append(problems, region+" "+bs.Verdict)
		}
		x.detectBoot(region, bs)
	}
	x.exFl = x.executorFleet()
	for _, region := range slices.Sorted(mapsKeys(x.insts)) {
		c := CandidateRecord{Region: region, URL: x.insts[region].BaseURL()}
		if pg, ok := x.insts[region].(warm.ProcessGroup); ok {
			c.PGID = pg.PGID()
			_, _, c.Start, _ = procStat(c.PGID)
		}
		x.drec.Candidates = append(x.drec.Candidates, c)
	}
	x.drec.Models = x.models
	if err := saveRecord(x.ctx, x.state, x.drec); err != nil {
		return "", fmt.Errorf("record the candidates for a clean-up: %w", err)
	}
	detail := fmt.Sprintf("%d of %d candidate(s) warm (%s)", len(warmN), len(cands), strings.Join(warmN, ", "))
	if len(problems) > 0 {
		detail += "; not warm: " + strings.Join(problems, ", ")
	}
	if len(warmN) == 0 {
		return detail, errors.New("no candidate came up warm")
	}
	if x.insts[x.Drill.Lose] == nil && x.Fleet.Regions[x.Drill.Lose].Endpoint == "" {
		return detail, fmt.Errorf("the lost region %s has no warm candidate and no endpoint: nothing serves it before the drill", x.Drill.Lose)
	}
	if un := x.unexplainedBoots(problems); len(un) > 0 {
		return detail, fmt.Errorf("candidates not warm with no injected fault to explain it: %s", strings.Join(un, ", "))
	}
	return detail, nil
}

func (x *run) unexplainedBoots(problems []string) []string {
	var out []string
	for _, p := range problems {
		region, _, _ := strings.Cut(p, " ")
		explained := false
		for _, f := range x.rep.Faults {
			explained = explained || (effectOf(f.Fault) == effectCandidate && f.Region == region)
		}
		if !explained {
			out = append(out, region)
		}
	}
	return out
}

func (x *run) detectBoot(region string, bs BootSummary) {
	for i := range x.rep.Faults {
		fr := &x.rep.Faults[i]
		if effectOf(fr.Fault) == effectCandidate && fr.Region == region {
			fr.Injected, fr.At = true, x.offset(x.stepStart)
			if !bs.OK {
				fr.Detected = true
				fr.Evidence = fmt.Sprintf("the candidate in %s was judged %s: %s; it receives no traffic", region, bs.Verdict, bs.Reason)
			} else {
				fr.Evidence = fmt.Sprintf("the candidate in %s was judged WARM despite the fault", region)
			}
		}
	}
}

// bootOne boots the region's candidate through the fleet's own launcher (Fleet.BootOptions),
// whatever its kind; a fault that alters the command line (boot-fails, saturate) rewrites it
// through LaunchOptions.Command, which Check made sure the region's launcher takes.
func (x *run) bootOne(region string) (*warm.BootResult, error) {
	r := x.Fleet.Regions[region]
	lo := failover.LaunchOptions{Command: func(cmd string) string {
		if x.Command != nil {
			cmd = x.Command(cmd)
		}
		for _, f := range x.rep.Faults {
			if k, _ := kindOfFault(f.Kind); f.Region == region && k.command != nil {
				cmd = k.command(f.Fault, cmd)
			}
		}
		return cmd
	}}
	o, err := x.Fleet.BootOptions(region, lo)
	if err != nil {
		return nil, err
	}
	o.Manifest, o.From, o.Workdir = x.Manifest, x.stores[r.Replica], filepath.Join(x.tmp, "boot", region)
	o.Probe, o.Keep, o.Restore = x.Probe, true, replicate.Options{Log: x.log()}
	if err := os.MkdirAll(filepath.Join(x.tmp, "boot"), 0o700); err != nil {
		return nil, err
	}
	return warm.Boot(x.ctx, o)
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// executorFleet is the fleet with each candidate's endpoint set to where the drill booted it
// (and none for a candidate that did not come up warm: it can take no traffic).
// ensureExecutorFleet sets exFl when no boot step has (a drill of steps [traffic] or
// [evacuate] alone): the fleet file's endpoints then stand. Called before any goroutine reads it.
func (x *run) ensureExecutorFleet() {
	if x.exFl == nil {
		x.exFl = x.executorFleet()
	}
}

func (x *run) executorFleet() *failover.Fleet {
	fc := *x.Fleet
	fc.Regions = map[string]*failover.Region{}
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
	ex := &failover.Executor{Fleet: x.exFl, Store: processStore{Store: x.state, p: p}, Router: processRouter{Driver: x.router, p: p},
		Signals: x.liveSignals(), Log: x.log(), Holder: x.holder(), LockTTL: x.Drill.LockTTL, Now: x.Now}
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
		if (!killedHere && !isHeld && !errors.Is(err, failover.ErrRouterUnreachable)) || (isHeld && !ev.killFired) {
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

// recovery computes recovery time from the journal: from the run's start record (the failover
// decision) to the first result after which no class has weight on the lost region and every
// weighted region is a warm receiver.
func (x *run) recovery(recs []failover.Record) {
	sla := &x.rep.SLA
	var start *time.Time
	var last *failover.Record
	for i, rec := range recs {
		if rec.Kind == failover.RecStart && start == nil {
			t := rec.Time
			start = &t
		}
		if start == nil || rec.After == nil || (rec.Kind != failover.RecResult && rec.Kind != failover.RecReassert) {
			continue
		}
		last = &recs[i]
		if x.onWarmReceivers(*rec.After) {
			t := rec.Time
			sla.Decision, sla.Recovered = start, &t
			sla.RecoverySeconds = secondsPtr(t.Sub(*start))
			sla.Blocked = ""
			return
		}
	}
	sla.Decision = start
	switch {
	case start == nil:
		sla.Blocked = "the journal has no decision: the evacuation never started"
	case last == nil:
		sla.Blocked = "the journal has no result after the decision: no weight was ever moved"
	default:
		sla.Blocked = fmt.Sprintf("at the last journal result (+%.2fs): %s", last.Time.Sub(x.start).Seconds(), strings.Join(x.blockers(*last.After), "; "))
	}
}

// blockers name each class, region and weight that keeps rs from having every class on warm
// receivers (at most three, then how many more).
func (x *run) blockers(rs failover.RouterState) []string {
	var out []string
	for _, c := range slices.Sorted(mapsKeys(x.Fleet.Tenants)) {
		total := 0
		for _, region := range slices.Sorted(mapsKeys(rs.Weights[c])) {
			w := rs.Weights[c][region]
			if w == 0 {
				continue
			}
			total += w
			switch {
			case region == x.Drill.Lose:
				out = append(out, fmt.Sprintf("class %s still had weight %d on %s, the lost region", c, w, region))
			case !x.receives(region):
				out = append(out, fmt.Sprintf("class %s had weight %d on %s, which is not a warm receiver (%s)", c, w, region, x.whyNotReceiver(region)))
			}
		}
		if total == 0 && x.baseline.Total(c) > 0 {
			out = append(out, fmt.Sprintf("class %s had weight 0 on every region (its baseline is %d)", c, x.baseline.Total(c)))
		}
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("and %d more", len(out)-3))
	}
	if len(out) == 0 {
		out = []string{"every class on warm receivers, yet not recognised (a bug: please report it)"}
	}
	return out
}

// whyNotReceiver says why a region cannot take traffic in the drill.
func (x *run) whyNotReceiver(region string) string {
	r := x.Fleet.Regions[region]
	switch {
	case r == nil:
		return "not in the fleet"
	case r.Candidate():
		if b := x.boots[region]; b != nil {
			return fmt.Sprintf("its candidate was judged %s", b.Verdict)
		}
		return "no candidate was booted for it"
	}
	return "no endpoint"
}

func (x *run) onWarmReceivers(rs failover.RouterState) bool {
	for c := range x.Fleet.Tenants {
		total := 0
		for region, w := range rs.Weights[c] {
			if w == 0 {
				continue
			}
			total += w
			if region == x.Drill.Lose || !x.receives(region) {
				return false
			}
		}
		if total == 0 && x.baseline.Total(c) > 0 {
			return false
		}
	}
	return true
}

// receives: a warm candidate the drill booted, or a region the drill did not boot (serving at
// its own endpoint, judged by the failover's preflight).
func (x *run) receives(region string) bool {
	r := x.Fleet.Regions[region]
	if r.Candidate() {
		return x.insts[region] != nil
	}
	return r.Endpoint != ""
}

func (x *run) journalWeights(recs []failover.Record) {
	for _, rec := range recs {
		if rec.After != nil && (rec.Kind == failover.RecResult || rec.Kind == failover.RecReassert) {
			x.weightPoint(rec.Time, *rec.After)
		}
	}
}

func (x *run) weightPoint(t time.Time, rs failover.RouterState) {
	off := t.Sub(x.start).Seconds()
	for _, c := range slices.Sorted(mapsKeys(rs.Weights)) {
		for _, region := range slices.Sorted(mapsKeys(rs.Weights[c])) {
			x.rep.Weights = append(x.rep.Weights, WeightPoint{Offset: off, Class: c, Region: region, Weight: rs.Weights[c][region], State: string(rs.States.Get(c, region))})
		}
	}
}

// failback gives the lost region its traffic back: a restore, waiting for its dwell.
func (x *run) failback() (string, error) {
	defer x.stopSampler()
	opts := failover.RunOptions{Event: failover.Event{Kind: failover.Restore, Region: x.Drill.Lose}, Reason: "drill " + x.Drill.Name + ": fail back", HoldTimeout: x.Drill.Failback}
	var out *failover.Outcome
	var err error
	deadline := x.now().Add(x.Drill.Failback)
	for {
		out, err = x.executor(&process{}).Run(x.ctx, opts)
		if err == nil || !errors.Is(err, failover.ErrRouterUnreachable) || !x.now().Before(deadline) {
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
		return "", fmt.Errorf("after the failback the router is not at the baseline: %v", failover.Diff(failover.RouterState{Weights: x.baseline}, rs))
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
		if pg, ok := inst.(warm.ProcessGroup); ok && pg.PGID() > 0 && groupAlive(pg.PGID()) {
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
