// The Runner (what a drill is given) and one drill's run state: Check holds the drill against
// its fleet, Run opens what the drill needs and runs its steps in order (runner_*.go, one step
// or phase a file).

package drills

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/verify/warm"
)

// Runner runs one drill. Fields are set by the caller; Run may be called once.
type Runner struct {
	Drill *Drill
	// Earlier are the problems already found in the drill file (a DrillError's, Drill its
	// Partial): Check reports them with its own, leaving out those about the same fields.
	Earlier  []string
	Fleet    *fleet.Fleet
	Manifest *manifest.Manifest
	// Open opens a store URL (replicas, the state store) with the caller's options.
	Open func(ctx context.Context, url string) (providers.Store, error)
	// Router is the fleet's router; nil: failover.OpenRouter(Fleet).
	Router router.Driver
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

	// OpenSigned reads the manifest and finds its signatures for the fleet's trust: (nil: a
	// local file and its FILE.sigstore.json); Warn is told the warning of trust: require: false
	// (nil: the log). See EnforceTrust.
	OpenSigned signature.Opener
	Warn       func(string)
	trusted    *signature.Enforced // the check EnforceTrust made (the drill's executor does not repeat it)
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
	base   router.Driver
	signal *failover.LiveSignals
	exFl   *fleet.Fleet // the fleet as the executor sees it (endpoints of the booted candidates)

	files     []*fileFault
	drec      *DrillRecord   // what teardown (or a clean-up after a crash) must undo, in the state store
	faultIdx  map[string]int // fault name → index in rep.Faults
	boots     map[string]*warm.BootResult
	insts     map[string]launch.Instance
	models    []string
	baseline  router.Weights
	evacRun   string
	source    string    // the region repairs and the lost region's stand-in copy from (never the lost one)
	verified  bool      // the verify step chose source ("" then: no replica outside the lost region passed)
	failed    bool      // a step failed: later steps that need it are skipped
	stepStart time.Time // when the current step started

	recMu sync.Mutex // guards drec and its saves (candidates are recorded from parallel boots)

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
	for i, name := range d.Calendar.Blocking {
		if f.StopCondition(name) == nil {
			names := f.StopConditionNames()
			at(d.Calendar.BlockingLine, fmt.Sprintf("blocking_conditions[%d]", i), "%q is not a stop condition of %s (stop_conditions: %s)%s", name, f.File, orNone(names), didYouMean(name, names))
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
		p = append(slices.Clone(r.Earlier), fleet.UnrelatedProblems(d.File, r.Earlier, p)...)
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
	if err := r.EnforceTrust(ctx); err != nil {
		return nil, err
	}
	rtr := r.Router
	if rtr == nil {
		var err error
		if rtr, err = fleet.OpenRouter(r.Fleet); err != nil {
			return nil, err
		}
	}
	x := &run{Runner: r, ctx: ctx, start: r.now(), stores: map[string]providers.Store{}, base: rtr,
		faultIdx: map[string]int{}, boots: map[string]*warm.BootResult{}, insts: map[string]launch.Instance{}}
	x.rep = &Report{Schema: SchemaID, Drill: r.Drill.Name, File: r.Drill.File, Fleet: r.Fleet.File, Model: r.Fleet.Model.Name,
		Lost: r.Drill.Lose, Router: providers.Redact(rtr.String()), Started: x.start.UTC(),
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
	x.router = &faultRouter{Driver: rtr, now: r.now}
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

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
