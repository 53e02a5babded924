//go:build integration

package drills

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/testbed"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/verify"
	"lifeboat/verify/warm"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

// regionSpec is one region of a test fleet: its replica and whether it is in a class.
type regionSpec struct {
	name  string
	store providers.Store
	url   string
	// archive: a replica with no launcher, in no class (verified, never booted)
	archive bool
}

// drillRig is a fleet of engine-sim candidates over real stores, a router (the file router
// unless rigOptions say otherwise) and a state store.
type drillRig struct {
	dir   string
	fleet *fleet.Fleet
	m     *manifest.Manifest
	open  func(ctx context.Context, url string) (providers.Store, error)
}

// baseline: eu-only on the two EU regions, global on us-east-1 and eu-west-1; us-west-2 and
// ap-southeast-1 are standby receivers.
var baseline = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 50, "us-west-2": 0, "eu-west-1": 50, "ap-southeast-1": 0},
}, States: router.States{}}

// rigOptions change the test fleet: its state store, its router, and the ports its candidates
// listen on (where a router's servers point).
type rigOptions struct {
	state  string         // the state store URL; "": a directory of the rig
	router string         // the fleet's router: mapping; "": the file router (weights.json)
	ports  map[string]int // region → its candidate's port; none: a free port
	// launcher is a candidate's launcher: mapping, given the lifeboat binary and its port
	// (0: a free one); nil: an exec launcher running the binary's engine-sim.
	launcher func(bin string, port int) string
	// baseline is the router's state before the drill (its classes are the fleet's tenants,
	// each eligible where it has a weight); zero: baseline.
	baseline router.RouterState
}

// newDrillRig seeds each region's replica from the sample and writes fleet.yaml.
func newDrillRig(t *testing.T, regions []regionSpec, open func(ctx context.Context, url string) (providers.Store, error), opts ...rigOptions) *drillRig {
	t.Helper()
	var o rigOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	fx := testbed.Sample(t, "small")
	bin := testbed.LifeboatBinary(t)
	dir := t.TempDir()
	mb, err := fx.M.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	stateURL := "file://" + filepath.Join(dir, "state")
	if o.state != "" {
		stateURL = o.state
	}
	rtr := "{driver: file, path: weights.json}"
	if o.router != "" {
		rtr = o.router
	}
	if o.baseline.Weights == nil {
		o.baseline = baseline
	}
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: manifest.json}\nregions:\n")
	for _, r := range regions {
		testbed.Seed(t, r.store, fx)
		fmt.Fprintf(&b, "  %s:\n    replica: %q\n    capacity: {replicas: 4, prefill_tokens_per_s: 8000}\n", r.name, r.url)
		if r.archive {
			continue
		}
		if o.launcher != nil {
			fmt.Fprintf(&b, "    launcher: %s\n", o.launcher(bin, o.ports[r.name]))
			continue
		}
		port := ""
		if o.ports[r.name] != 0 {
			port = fmt.Sprintf(", port: %d", o.ports[r.name])
		}
		fmt.Fprintf(&b, "    launcher: {kind: exec, command: %q%s}\n", bin+" engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}", port)
	}
	fmt.Fprintf(&b, "tenants:\n")
	for _, class := range slices.Sorted(maps.Keys(o.baseline.Weights)) {
		fmt.Fprintf(&b, "  %s: [%s]\n", class, strings.Join(slices.Sorted(maps.Keys(o.baseline.Weights[class])), ", "))
	}
	fmt.Fprintf(&b, `router: %s
failover: {step_percent: 25, step_interval: 100ms, spill_cap_percent: 60, drain_timeout: 2s, failback_dwell: 300ms, max_transitions_per_hour: 1000, assumed_utilization_percent: 20}
state: %s
sla: {rto: 5m}
`, rtr, stateURL)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	fleetPath := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleetPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fl, err := fleet.Read(fleetPath)
	if err != nil {
		t.Fatal(err)
	}
	rig := &drillRig{dir: dir, fleet: fl, m: fx.M, open: open}
	if fl.Router.Driver == fleet.DriverFile {
		if err := (&filerouter.Router{Path: fl.Router.Config.(*filerouter.Config).Path}).Apply(context.Background(), o.baseline); err != nil {
			t.Fatal(err)
		}
	}
	return rig
}

// drill writes a drill file and parses it.
func (r *drillRig) drill(t *testing.T, body string) *Drill {
	t.Helper()
	path := filepath.Join(r.dir, "drill.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *drillRig) runner(d *Drill) *Runner {
	return &Runner{Drill: d, Fleet: r.fleet, Manifest: r.m, Open: r.open, TempDir: r.dir,
		Probe:   warm.ProbeOptions{Timeout: 30 * time.Second, TTFTBudget: 2 * time.Second},
		Approve: func(context.Context, string) (bool, error) { return true, nil }}
}

func fileOpen(ctx context.Context, url string) (providers.Store, error) {
	return providers.Open(ctx, url, testbed.StoreOptions())
}

// fileRegions are the five regions on local directories.
func fileRegions(t *testing.T) []regionSpec {
	var out []regionSpec
	for _, n := range []string{"us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1"} {
		d := filepath.Join(t.TempDir(), n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		u := "file://" + d
		out = append(out, regionSpec{name: n, store: testbed.OpenStore(t, u, testbed.StoreOptions()), url: u})
	}
	return out
}

func drillCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func stepOf(rep *Report, name string) StepResult {
	for _, s := range rep.Steps {
		if s.Name == name {
			return s
		}
	}
	return StepResult{}
}

func dumpSteps(rep *Report) string {
	var b strings.Builder
	for _, s := range rep.Steps {
		fmt.Fprintf(&b, "  %-9s %-7s %6.2fs %s\n", s.Name, s.Status, s.Seconds, s.Detail)
	}
	for _, e := range rep.Expect {
		fmt.Fprintf(&b, "  expect %q met=%v: %s\n", e.Description, e.Met, e.Evidence)
	}
	fmt.Fprintf(&b, "  summary: %s\n", rep.Summary)
	return b.String()
}

func mustOpen(t *testing.T, url string) providers.Store {
	t.Helper()
	return testbed.OpenStore(t, url, testbed.StoreOptions())
}

func testbedSample(t *testing.T) *testbed.Fixture { return testbed.Sample(t, "small") }

func verifyQuick(t *testing.T, rig *drillRig, s providers.Store) string {
	t.Helper()
	return string(verify.Quick(drillCtx(t), rig.m, s, verify.Options{}).Status)
}
