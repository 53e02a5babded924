//go:build integration

package gatewayapi

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// hits counts, per class (the request's Host) and region, the requests each region's engine-sim
// answered.
type hits struct {
	mu sync.Mutex
	n  map[string]map[string]int
}

func (h *hits) take() map[string]map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.n
	h.n = map[string]map[string]int{}
	return out
}

// Real traffic through a real gateway: Traefik's Gateway API provider serves the two classes'
// HTTPRoutes (by hostname) to engine-sim replicas listening on each region's Service cluster IP,
// and the executor evacuates eu-west-1 through the driver. After every step, once Traefik has
// taken the step up, each class's requests land only in that class's regions, and none in a
// region the step drained or withdrew.
func TestGatewayAPITrafficThroughTraefik(t *testing.T) {
	r := newKubeRig(t)
	tr := emulators.StartTraefik(t, r.k, r.ns)
	ctx := testbed.Ctx(t)
	l, err := sample.Generate(ctx, t.TempDir(), sample.Options{NoLoRA: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(ctx, l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &hits{n: map[string]map[string]int{}}
	for region := range testServices() {
		ip := r.k.ServiceIP(t, r.ns, "svc-"+region, 8000)
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "8000"))
		if err != nil {
			t.Fatal(err)
		}
		sim := enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond})
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			host, _, _ := net.SplitHostPort(req.Host)
			if host == "" {
				host = req.Host
			}
			h.mu.Lock()
			if h.n[host] == nil {
				h.n[host] = map[string]int{}
			}
			h.n[host][region]++
			h.mu.Unlock()
			sim.ServeHTTP(w, req)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	for class, name := range testRoutes {
		obj := r.route(name, class, testStart)
		unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": tr.Gateway}}, "spec", "parentRefs")
		unstructured.SetNestedStringSlice(obj.Object, []string{class + ".test"}, "spec", "hostnames")
		r.create(t, obj)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	send := func(class string, n int) error {
		for range n {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tr.URL+"/v1/models", nil)
			req.Host = class + ".test"
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: HTTP %d", class, resp.StatusCode)
			}
		}
		return nil
	}
	// check sends batches until Traefik routes as rs says (no request to a region rs gives
	// weight 0), failing at once on any request outside a class's regions.
	check := func(what string, rs router.RouterState) {
		t.Helper()
		// Generous: CI runs this beside the whole suite; a settled router returns at once.
		deadline := time.Now().Add(45 * time.Second)
		var sendErr error
		for {
			h.take()
			settled := true
			for class := range testRoutes {
				// A failed request (a timeout on a loaded machine, a reload in flight) is
				// retried until the deadline; a request in the wrong region fails at once.
				if err := send(class, 40); err != nil {
					sendErr, settled = err, false
				}
			}
			got := h.take()
			for class := range testRoutes {
				host := class + ".test"
				for region, n := range got[host] {
					if !slices.Contains(testClasses[class], region) {
						t.Fatalf("%s: %d requests of class %s landed in %s, outside its regions %v", what, n, class, region, testClasses[class])
					}
				}
				// settled: each region's share is its weight's (weighted round robin over 40
				// requests: within 3 + 10 %), and a drained or withdrawn region receives none
				total := 0
				for _, reg := range testClasses[class] {
					if rs.States.Get(class, reg) == router.Ready {
						total += rs.Weights[class][reg]
					}
				}
				for _, reg := range testClasses[class] {
					want := 0.0
					if rs.States.Get(class, reg) == router.Ready && total > 0 {
						want = 40 * float64(rs.Weights[class][reg]) / float64(total)
					}
					n := float64(got[host][reg])
					if want == 0 && n > 0 || n < want-7 || n > want+7 {
						settled = false
					}
				}
			}
			if settled {
				t.Logf("%s: weights %v states %v: requests %v", what, rs.Weights, rs.States, got)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Traefik does not route by the weights after 45s: %v (want %v %v; last request error: %v)", what, got, rs.Weights, rs.States, sendErr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); send("eu-only", 1) != nil || send("global", 1) != nil; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Traefik does not serve the routes: %v\n%s", send("eu-only", 1), tr.Output())
		}
	}
	check("before", testStart)

	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	keys := fmt.Sprintf("  kubeconfig: %q\n  namespace: %s\n%s", r.k.Kubeconfig, r.ns, gwRouterKeys)
	f, err := fleet.Parse([]byte(gwFleet(keys, "file://"+filepath.Join(dir, "state"))), filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := fleet.OpenRouter(f)
	if err != nil {
		t.Fatal(err)
	}
	sig := map[string]failover.RegionSignal{}
	for name, reg := range f.Regions {
		q, run, in := 10.0, 0, reg.PrefillCapacity()/5
		sig[name] = failover.RegionSignal{Warm: true, Healthy: true, QueueWaitMS: &q, Running: &run, PrefillTokensPerS: &in}
	}
	steps := 0
	e := &failover.Executor{Fleet: f, Store: testbed.OpenStore(t, f.State, testbed.StoreOptions()), Router: d, Signals: &failover.StaticSignals{Regions: sig}, Holder: "test", LockTTL: 10 * time.Second,
		OnRecord: func(rec failover.Record) {
			if rec.Kind == failover.RecResult {
				steps++
				check(fmt.Sprintf("after step %d", *rec.Step+1), *rec.After)
			}
		}}
	out, err := e.Run(ctx, failover.RunOptions{Event: failover.Event{Kind: failover.Evacuate, Region: "eu-west-1"}, Reason: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if steps < 2 || steps != len(out.Plan.Steps) {
		t.Fatalf("%d steps checked of %d", steps, len(out.Plan.Steps))
	}
}
