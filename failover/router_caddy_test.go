//go:build integration

package failover

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"lifeboat/failover/routers/caddy"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

type caddyRig struct {
	*rig
	c         *emulators.Caddy
	frontends map[string]string
	addrs     map[string]string
}

func newCaddyRig(t *testing.T) *caddyRig {
	t.Helper()
	addrs := regionBackends(t, "us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-1")
	fe := map[string]string{"eu-only": freeAddr(t), "global": freeAddr(t)}
	servers := map[string]any{}
	for class, id := range map[string]string{"eu-only": "route-eu", "global": "route-global"} {
		var ups []any
		var ws []int
		for _, r := range slices.Sorted(maps.Keys(startWeights.Weights[class])) {
			ups = append(ups, map[string]any{"dial": addrs[r]})
			ws = append(ws, startWeights.Weights[class][r])
		}
		servers[class] = map[string]any{
			"listen":          []string{fe[class]},
			"automatic_https": map[string]any{"disable": true},
			"routes": []any{map[string]any{"@id": id, "handle": []any{map[string]any{
				"handler": "reverse_proxy", "upstreams": ups,
				"load_balancing": map[string]any{"selection_policy": map[string]any{"policy": "weighted_round_robin", "weights": ws}},
			}}}},
		}
	}
	cfg, _ := json.Marshal(map[string]any{"apps": map[string]any{"http": map[string]any{"servers": servers}}})
	c := emulators.StartCaddy(t, string(cfg))
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	yaml := testFleetYAML("", "file://"+filepath.Join(dir, "state"))
	for r, a := range addrs {
		yaml = strings.Replace(yaml, "  "+r+": {replica: ./r,", fmt.Sprintf("  %s: {replica: ./r, endpoint: 'http://%s',", r, a), 1)
	}
	yaml = strings.Replace(yaml, `router: {driver: file, path: ""}`,
		fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", c.Admin), 1)
	path := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	f, err := fleet.Parse([]byte(yaml), path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dir: dir, fleet: f, store: testbed.OpenStore(t, f.State, testbed.StoreOptions()), sig: &StaticSignals{Regions: calmSignals(f)}}
	return &caddyRig{rig: r, c: c, addrs: addrs, frontends: map[string]string{"eu-only": "http://" + fe["eu-only"] + "/", "global": "http://" + fe["global"] + "/"}}
}

func (r *caddyRig) router(t testing.TB) *caddy.Router {
	d, err := fleet.OpenRouter(r.fleet)
	if err != nil {
		t.Fatal(err)
	}
	return d.(*caddy.Router)
}

// upstreamDials reads the raw route from Caddy's admin API.
func upstreamDials(t testing.TB, admin, id string) []string {
	t.Helper()
	resp, err := http.Get(admin + "/id/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var route struct {
		Handle []struct {
			Upstreams []struct{ Dial string } `json:"upstreams"`
		} `json:"handle"`
	}
	json.NewDecoder(resp.Body).Decode(&route)
	var out []string
	for _, h := range route.Handle {
		for _, u := range h.Upstreams {
			out = append(out, u.Dial)
		}
	}
	return out
}

// Evacuate eu-west-1 through a real Caddy carrying real HTTP traffic: at every step zero EU-only
// requests outside the EU, shares within tolerance, and the EU-only route's upstreams only ever
// EU regions; at the end eu-west-1 is out of both routes' upstreams.
func TestCaddyEvacuationTraffic(t *testing.T) {
	r := newCaddyRig(t)
	ctx := testbed.Ctx(t)
	cr := r.router(t)
	start, err := cr.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(startWeights, start); len(d) > 0 {
		t.Fatalf("read back of the config: %v", d)
	}
	checkTraffic(t, "before", r.frontends, start)
	e := r.rig.executor()
	e.Router = cr
	steps := 0
	e.OnRecord = func(rec Record) {
		if rec.Kind != RecResult {
			return
		}
		steps++
		checkTraffic(t, fmt.Sprintf("after step %d", *rec.Step+1), r.frontends, *rec.After)
		for _, d := range upstreamDials(t, r.c.Admin, "route-eu") {
			if d != r.addrs["eu-west-1"] && d != r.addrs["eu-central-1"] {
				t.Fatalf("step %d: the EU-only route has upstream %s", *rec.Step+1, d)
			}
		}
	}
	out, err := e.Run(ctx, evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	if steps != len(out.Plan.Steps) || steps < 3 {
		t.Fatalf("%d steps checked of %d", steps, len(out.Plan.Steps))
	}
	for _, id := range []string{"route-eu", "route-global"} {
		for _, d := range upstreamDials(t, r.c.Admin, id) {
			if d == r.addrs["eu-west-1"] {
				t.Fatalf("%s still has eu-west-1 as an upstream after the withdraw", id)
			}
		}
	}
}

// If-Match on the ETag: a write based on a stale read is refused by Caddy (412), and the driver
// reports it as a conflict instead of overwriting.
func TestCaddyIfMatchConflict(t *testing.T) {
	r := newCaddyRig(t)
	ctx := testbed.Ctx(t)
	cr := r.router(t)
	route, etag, err := cr.Route(ctx, "eu-only")
	if err != nil || etag == "" {
		t.Fatalf("route %v etag %q", err, etag)
	}
	body, _ := json.Marshal(route)
	if code, _, _, err := cr.Do(ctx, http.MethodPatch, "/id/route-eu", etag, body); err != nil || code != 200 {
		t.Fatalf("PATCH with the current ETag: %d %v", code, err)
	}
	// someone else changes the route: our etag is stale now
	route2, etag2, _ := cr.Route(ctx, "eu-only")
	h, _ := caddy.ProxyHandler(route2)
	h["load_balancing"].(map[string]any)["selection_policy"].(map[string]any)["weights"] = []int{60, 40}
	body2, _ := json.Marshal(route2)
	cr.Do(ctx, http.MethodPatch, "/id/route-eu", etag2, body2)
	code, _, msg, _ := cr.Do(ctx, http.MethodPatch, "/id/route-eu", etag2, body)
	if code != http.StatusPreconditionFailed {
		t.Fatalf("PATCH with a stale ETag: HTTP %d %s, want 412", code, msg)
	}
	t.Logf("stale ETag: HTTP %d %s", code, strings.TrimSpace(string(msg)))
}

// Caddy retires its admin server after every config change, so a read or a write just after a
// write can meet a reset connection. A loopback server that resets the first two connections of
// each method: the driver's GET gets through on the third; a PATCH that met a reset is sent again
// only while the route still answers the Etag it was conditional on (it did not land), and not
// once the route has moved (had it landed, its If-Match would now answer 412 and look like someone
// else's edit).
func TestCaddyReadSurvivesRetiredAdminConnection(t *testing.T) {
	var gets, patches atomic.Int32
	var moved atomic.Bool // the route's Etag after a reset PATCH: "abc", or "moved"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counter := &gets
		if r.Method == http.MethodPatch {
			counter = &patches
		}
		n := counter.Add(1)
		if n <= 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // RST, as a retired listener's queued connection gets
			conn.Close()
			return
		}
		if moved.Load() {
			w.Header().Set("Etag", `"moved"`)
		} else {
			w.Header().Set("Etag", `"abc"`)
		}
		w.Write([]byte(`{"@id":"route-eu","handle":[]}`))
	}))
	t.Cleanup(srv.Close)
	c := &caddy.Router{Admin: srv.URL, Routes: map[string]string{"eu-only": "route-eu"}}
	route, etag, err := c.Route(testbed.Ctx(t), "eu-only")
	if err != nil {
		t.Fatalf("a read after two reset connections: %v", err)
	}
	if etag != `"abc"` || route["@id"] != "route-eu" || gets.Load() != 3 {
		t.Fatalf("route %v etag %q after %d GETs, want the route on the third", route, etag, gets.Load())
	}
	// the route still at "abc": the reset PATCHes did not land, and the third gets through
	code, _, _, err := c.Do(testbed.Ctx(t), http.MethodPatch, "/id/route-eu", `"abc"`, []byte(`{}`))
	if err != nil || code != http.StatusOK || patches.Load() != 3 {
		t.Fatalf("a PATCH that met resets, the route unchanged: HTTP %d %v after %d PATCHes, want 200 on the third", code, err, patches.Load())
	}
	// the route moved after a reset PATCH: it may have landed, so it is not sent again
	patches.Store(0)
	moved.Store(true)
	_, _, _, err = c.Do(testbed.Ctx(t), http.MethodPatch, "/id/route-eu", `"abc"`, []byte(`{}`))
	if !errors.Is(err, router.ErrRouterUnreachable) || patches.Load() != 1 {
		t.Fatalf("a PATCH that met a reset, the route moved: %v after %d PATCHes, want ErrRouterUnreachable after exactly 1", err, patches.Load())
	}
	// a PATCH without If-Match is never sent again
	patches.Store(0)
	moved.Store(false)
	_, _, _, err = c.Do(testbed.Ctx(t), http.MethodPatch, "/id/route-eu", "", []byte(`{}`))
	if !errors.Is(err, router.ErrRouterUnreachable) || patches.Load() != 1 {
		t.Fatalf("an unconditional PATCH that met a reset: %v after %d PATCHes, want ErrRouterUnreachable after exactly 1", err, patches.Load())
	}
}
