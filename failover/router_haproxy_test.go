//go:build integration

package failover

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/failover/routers/haproxy"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

var euRegions = map[string]bool{"eu-west-1": true, "eu-central-1": true}

// regionBackends starts one loopback HTTP server per region that answers with its region's
// name: the replicas behind the router in the traffic tests.
func regionBackends(t testing.TB, regions ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range regions {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Region", r)
			io.WriteString(w, r)
		}), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		out[r] = ln.Addr().String()
	}
	return out
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// tally sends n requests to url, each on a new connection, and counts the answering regions.
func tally(t testing.TB, url string, n int) map[string]int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	out := map[string]int{}
	for i := 0; i < n; i++ {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("request %d to %s: %v", i, url, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d to %s: HTTP %d %s", i, url, resp.StatusCode, b)
		}
		out[string(b)]++
	}
	return out
}

// trafficRequests per class per step, and the tolerance of each region's count: the routers'
// weighted round robin is deterministic, so counts stay within a few requests of n·share;
// 3 + 5 % of n allows for the cycle position at which a step starts.
const trafficRequests = 200

func trafficTolerance(n int) float64 { return 3 + 0.05*float64(n) }

// checkTraffic sends real requests through the router's frontends and checks, for the state the
// router was just set to: zero EU-only requests outside the EU, and each region's share.
func checkTraffic(t testing.TB, label string, frontends map[string]string, rs router.RouterState) {
	t.Helper()
	for class, url := range frontends {
		got := tally(t, url, trafficRequests)
		total := 0
		for r, v := range rs.Weights[class] {
			if rs.States.Get(class, r) == router.Ready {
				total += v
			}
		}
		for r, n := range got {
			if class == "eu-only" && !euRegions[r] {
				t.Fatalf("%s: %d EU-only requests reached %s", label, n, r)
			}
		}
		for r, v := range rs.Weights[class] {
			if rs.States.Get(class, r) != router.Ready {
				v = 0
			}
			want := float64(trafficRequests) * float64(v) / float64(total)
			if d := float64(got[r]) - want; d > trafficTolerance(trafficRequests) || -d > trafficTolerance(trafficRequests) {
				t.Fatalf("%s: class %s region %s got %d of %d requests, want %.1f ± %.0f (weights %v states %v)",
					label, class, r, got[r], trafficRequests, want, trafficTolerance(trafficRequests), rs.Weights[class], rs.States[class])
			}
		}
	}
}

type haRig struct {
	*rig
	h         *emulators.HAProxy
	frontends map[string]string
}

// newHARig: a real HAProxy with one backend per class (servers named by region, only the
// class's eligible regions; extra adds servers to a backend), one frontend per class.
func newHARig(t *testing.T, extra map[string][]string) *haRig {
	t.Helper()
	addrs := regionBackends(t, "us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1")
	feEU, feGlobal := freeAddr(t), freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n  timeout server 10s\n\n")
	fmt.Fprintf(&b, "frontend fe_eu\n  bind %s\n  default_backend be_eu\n\nfrontend fe_global\n  bind %s\n  default_backend be_global\n\n", feEU, feGlobal)
	for _, be := range []struct {
		name, class string
	}{{"be_eu", "eu-only"}, {"be_global", "global"}} {
		fmt.Fprintf(&b, "backend %s\n  balance roundrobin\n", be.name)
		for r, w := range startWeights.Weights[be.class] {
			fmt.Fprintf(&b, "  server %s %s weight %d\n", r, addrs[r], w)
		}
		for _, r := range extra[be.class] {
			fmt.Fprintf(&b, "  server %s %s weight 10\n", r, addrs[r])
		}
		b.WriteString("\n")
	}
	h := emulators.StartHAProxy(t, b.String())
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	yaml := strings.Replace(testFleetYAML("", "file://"+filepath.Join(dir, "state")),
		`router: {driver: file, path: ""}`,
		fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}}", h.Socket), 1)
	path := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	f, err := fleet.Parse([]byte(yaml), path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, fleet: f, store: testbed.OpenStore(t, f.State, testbed.StoreOptions()), sig: &StaticSignals{Regions: calmSignals(f)}}
	return &haRig{rig: r, h: h, frontends: map[string]string{"eu-only": "http://" + feEU + "/", "global": "http://" + feGlobal + "/"}}
}

func (r *haRig) router() *haproxy.Router {
	d, _ := fleet.OpenRouter(r.fleet)
	return d.(*haproxy.Router)
}

func (r *haRig) executor() *Executor {
	e := r.rig.executor()
	e.Router = r.router()
	return e
}

// Evacuate eu-west-1 through a real HAProxy carrying real HTTP traffic: after every step, zero
// EU-only requests outside the EU and every region's share within tolerance of its weight.
func TestHAProxyEvacuationTraffic(t *testing.T) {
	r := newHARig(t, nil)
	ctx := testbed.Ctx(t)
	start, err := r.router().Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(startWeights, start); len(d) > 0 {
		t.Fatalf("read back of the config: %v", d)
	}
	checkTraffic(t, "before", r.frontends, start)
	e := r.executor()
	steps := 0
	e.OnRecord = func(rec Record) {
		if rec.Kind == RecResult {
			steps++
			checkTraffic(t, fmt.Sprintf("after step %d", *rec.Step+1), r.frontends, *rec.After)
		}
	}
	out, err := e.Run(ctx, evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	if steps != len(out.Plan.Steps) || steps < 3 {
		t.Fatalf("%d steps checked of %d", steps, len(out.Plan.Steps))
	}
	fin, _ := r.router().Read(ctx)
	if fin.States.Get("eu-only", "eu-west-1") != router.Maint || fin.States.Get("global", "eu-west-1") != router.Maint {
		t.Fatalf("eu-west-1 not cut off: %+v", fin)
	}
	raw, _ := r.router().Command(ctx, "show servers state be_eu")
	t.Logf("be_eu after the evacuation:\n%s", raw)
	// HAProxy forgets runtime state on reload; the journal does not: status sees the drift.
	r.router().Set(ctx, "set server be_eu/eu-west-1 state ready")
	r.router().Set(ctx, "set weight be_eu/eu-west-1 50")
	st, err := r.executor().Status(ctx)
	if err != nil || len(st.Drift) == 0 {
		t.Fatalf("drift after a reset not seen: %v %v", err, st.Drift)
	}
}

// A refused plan (the EU-only class's last EU receiver is cold) changes nothing on HAProxy.
func TestHAProxyRefusedPlanChangesNothing(t *testing.T) {
	r := newHARig(t, nil)
	ctx := testbed.Ctx(t)
	before, _ := r.router().Command(ctx, "show servers state")
	sig := calmSignals(r.fleet)
	sig["eu-central-1"] = RegionSignal{Healthy: true, Why: "LOADING"}
	r.sig.Regions = sig
	_, err := r.executor().Run(ctx, evacuate("eu-west-1"))
	if err == nil || !strings.Contains(err.Error(), "eu-only") {
		t.Fatalf("want a refusal, got %v", err)
	}
	after, _ := r.router().Command(ctx, "show servers state")
	if stripTimes(before) != stripTimes(after) {
		t.Fatalf("HAProxy changed:\n%s\n---\n%s", before, after)
	}
}

// stripTimes drops srv_time_since_last_change (column 10), which ticks on its own.
func stripTimes(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) > 10 && !strings.HasPrefix(l, "#") {
			f[9] = "-"
		}
		out = append(out, strings.Join(f, " "))
	}
	return strings.Join(out, "\n")
}

// A backend that holds a region outside its class's eligible list is a residency leak in the
// router itself: refused before anything changes.
func TestHAProxyTopologyLeakRefused(t *testing.T) {
	r := newHARig(t, map[string][]string{"eu-only": {"us-east-1"}})
	ctx := testbed.Ctx(t)
	_, err := r.executor().Run(ctx, evacuate("eu-west-1"))
	if err == nil || !strings.Contains(err.Error(), "eu-only/us-east-1") {
		t.Fatalf("want a topology refusal naming eu-only/us-east-1, got %v", err)
	}
}

// HAProxyStepLatency applies one step and reads it back n times (bench and test).
func HAProxyStepLatency(ctx context.Context, d router.Driver, a, b router.RouterState, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		want := a
		if i%2 == 1 {
			want = b
		}
		t0 := time.Now()
		if err := d.Apply(ctx, want); err != nil {
			return out, err
		}
		got, err := d.Read(ctx)
		if err != nil {
			return out, err
		}
		if df := router.Diff(want, got); len(df) > 0 {
			return out, fmt.Errorf("read back: %v", df)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}
