//go:build integration

package failover

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
	"lifeboat/verify/warm"
)

// engineSims starts n engine-sim replicas of the sample model (saturated ones with
// --sim-saturate's option) and returns their URLs and the served model name.
func engineSim(t *testing.T, m *enginesim.Model, saturate bool) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond, Saturate: saturate, SaturateWait: 10 * time.Millisecond}))
	t.Cleanup(hs.Close)
	return hs
}

// A receiver that saturates mid-ramp (its engine-sim replica is replaced by a saturated one:
// a long waiting queue) makes the run hold before the next step, with the headroom rule named,
// and the router stays where the last completed step left it.
func TestSaturatedReceiverHolds(t *testing.T) {
	ctx := testbed.Ctx(t)
	l, err := sample.Generate(ctx, t.TempDir(), sample.Options{NoLoRA: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(ctx, l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	euw, normal, saturated := engineSim(t, m, false), engineSim(t, m, false), engineSim(t, m, true)
	var sat atomic.Bool
	nu, _ := url.Parse(normal.URL)
	su, _ := url.Parse(saturated.URL)
	pn, ps := httputil.NewSingleHostReverseProxy(nu), httputil.NewSingleHostReverseProxy(su)
	euc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sat.Load() {
			ps.ServeHTTP(w, r)
			return
		}
		pn.ServeHTTP(w, r)
	}))
	t.Cleanup(euc.Close)

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	yaml := fmt.Sprintf(`model: {name: %s, manifest: m.json}
regions:
  eu-west-1: {replica: ./r, endpoint: %q, capacity: {replicas: 1, prefill_tokens_per_s: 4000}, signals: {mean_prompt_tokens: 100}}
  eu-central-1: {replica: ./r, endpoint: %q, capacity: {replicas: 1, prefill_tokens_per_s: 4000}, signals: {mean_prompt_tokens: 100}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 10, step_interval: 50ms}
state: %q
`, m.ServedNames[0], euw.URL, euc.URL, "file://"+filepath.Join(dir, "state"))
	path := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	f, err := fleet.Parse([]byte(yaml), path)
	if err != nil {
		t.Fatal(err)
	}
	rtr := &filerouter.Router{Path: f.Router.Config.(*filerouter.Config).Path}
	rtr.Apply(ctx, router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 50, "eu-central-1": 50}}})
	e := &Executor{Fleet: f, Store: testbed.OpenStore(t, f.State, testbed.StoreOptions()), Router: rtr,
		Signals: &LiveSignals{Fleet: f, Probe: warm.ProbeOptions{Timeout: 10 * time.Second, TTFTBudget: -1}}, LockTTL: 10 * time.Second}
	e.OnRecord = func(rec Record) {
		if rec.Kind == RecResult && *rec.Step == 0 {
			sat.Store(true) // eu-central-1 saturates after the first step
		}
	}
	o := evacuate("eu-west-1")
	o.AllowPartial = true // spill_cap_percent 30 keeps 20 % on eu-west-1: the plan cannot complete
	out, err := e.Run(ctx, o)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "headroom") || !strings.Contains(err.Error(), "eu-central-1") {
		t.Fatalf("want a hold on eu-central-1's headroom, got %v (plan %d steps)", err, len(out.Plan.Steps))
	}
	if len(out.Plan.Steps) < 2 || out.Steps != 1 {
		t.Fatalf("applied %d of %d steps; want exactly the first", out.Steps, len(out.Plan.Steps))
	}
	got, _ := rtr.Read(ctx)
	if d := router.Diff(out.Plan.After(0), got); len(d) > 0 {
		t.Fatalf("router moved past the hold: %v", d)
	}
	_, recs, _ := latestStarted(ctx, e.Store)
	if last := recs[len(recs)-1]; last.Kind != RecHold || len(last.Violations) == 0 || last.Violations[0].Rule != RuleHeadroom {
		t.Fatalf("last record %+v", last)
	}
}
