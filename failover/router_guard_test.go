//go:build integration

package failover

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
)

// A router that answers with a redirect is refused, whichever host it names: neither the http nor
// the Caddy driver follows it (the real router behind the redirect sees nothing).
func TestRouterRedirectRefused(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	var followed atomic.Int32
	d.setHook(func(*http.Request) { followed.Add(1) })
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, d.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	dir, _ := binDir(t, fmt.Sprintf("router: {driver: http, url: %q, backends: {eu-only: eu-only, global: global}}", redirector.URL), "step_interval: 10ms")
	code, out, errOut := runLB(t, dir, nil, "failover", "status", "--fleet", "fleet.yaml")
	if code == 0 || !strings.Contains(errOut, "redirect") || followed.Load() != 0 {
		t.Fatalf("http driver behind a redirect: exit %d, %d requests reached the target\nstdout %s\nstderr %s", code, followed.Load(), out, errOut)
	}

	c := startBinCaddy(t, nil)
	var caddyFollowed atomic.Int32
	cr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caddyFollowed.Add(1)
		http.Redirect(w, r, c.Admin+r.URL.Path, http.StatusFound)
	}))
	defer cr.Close()
	dir, _ = binDir(t, fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", cr.URL), "step_interval: 10ms")
	code, out, errOut = runLB(t, dir, nil, "failover", "status", "--fleet", "fleet.yaml")
	if code == 0 || !strings.Contains(errOut, "redirect") || caddyFollowed.Load() != 1 {
		t.Fatalf("caddy driver behind a redirect: exit %d, %d requests to the redirector\nstdout %s\nstderr %s", code, caddyFollowed.Load(), out, errOut)
	}
}

// An http router that stalls in the middle of its answer did not answer: exit 4, not 2.
func TestHTTPRouterStallMidBodyIsUnreachable(t *testing.T) {
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"x"`)
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"weights": {"eu-we`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer stall.Close()
	dir, _ := binDir(t, fmt.Sprintf("router: {driver: http, url: %q, timeout: 300ms, backends: {eu-only: eu-only, global: global}}", stall.URL), "step_interval: 10ms")
	code, _, errOut := runLB(t, dir, nil, "failover", "status", "--fleet", "fleet.yaml")
	if code != 4 || !strings.Contains(errOut, "unreachable") {
		t.Fatalf("stalled router: exit %d, want 4 (unreachable)\n%s", code, errOut)
	}
}

// caddyRoute is a class route with weighted upstreams (region → dial) and extra handler keys.
func caddyRoute(id string, dials map[string]string, weights map[string]int, extra map[string]any) map[string]any {
	var ups []any
	var ws []int
	for _, r := range slices.Sorted(maps.Keys(weights)) {
		ups = append(ups, map[string]any{"dial": dials[r]})
		ws = append(ws, weights[r])
	}
	h := map[string]any{"handler": "reverse_proxy", "upstreams": ups,
		"load_balancing": map[string]any{"selection_policy": map[string]any{"policy": "weighted_round_robin", "weights": ws}}}
	maps.Copy(h, extra)
	return map[string]any{"@id": id, "handle": []any{h}}
}

var binDials = map[string]string{"us-east-1": "127.0.0.1:1", "eu-west-1": "127.0.0.2:1", "eu-central-1": "127.0.0.3:1"}

// startBinCaddy runs a real Caddy with binStart's routes (route-eu, route-global) on the binFleet
// regions' endpoints; extra[class] adds keys to that class's reverse_proxy handler.
func startBinCaddy(t *testing.T, extra map[string]map[string]any) *emulators.Caddy {
	t.Helper()
	servers := map[string]any{}
	for class, id := range map[string]string{"eu-only": "route-eu", "global": "route-global"} {
		servers[class] = map[string]any{
			"listen":          []string{freeAddr(t)},
			"automatic_https": map[string]any{"disable": true},
			"routes":          []any{caddyRoute(id, binDials, binStart.Weights[class], extra[class])},
		}
	}
	cfg, _ := json.Marshal(map[string]any{"apps": map[string]any{"http": map[string]any{"servers": servers}}})
	return emulators.StartCaddy(t, string(cfg))
}

// A Caddy route whose upstreams come from dynamic_upstreams (here: an A lookup that resolves to
// us-east-1's address) can send EU-only traffic anywhere whatever the weights: refused, exit 3,
// and nothing is written.
func TestCaddyDynamicUpstreamsRefused(t *testing.T) {
	c := startBinCaddy(t, map[string]map[string]any{"eu-only": {"dynamic_upstreams": map[string]any{"source": "a", "name": "localhost", "port": "1"}}})
	dir, _ := binDir(t, fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", c.Admin), "step_interval: 10ms")
	before := caddyGet(t, c.Admin, "route-eu")
	code, out, errOut := runLB(t, dir, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "signals.json", "--yes")
	if code != 3 || !strings.Contains(errOut, "dynamic_upstreams") {
		t.Fatalf("run on a route with dynamic upstreams: exit %d, want 3 naming dynamic_upstreams\nstdout %s\nstderr %s", code, out, errOut)
	}
	if after := caddyGet(t, c.Admin, "route-eu"); after != before {
		t.Fatalf("the refused run changed the route:\n%s\n%s", before, after)
	}
	code, _, errOut = runLB(t, dir, nil, "failover", "status", "--fleet", "fleet.yaml")
	if code != 3 || !strings.Contains(errOut, "dynamic_upstreams") {
		t.Fatalf("status on a route with dynamic upstreams: exit %d\n%s", code, errOut)
	}
}

func caddyGet(t *testing.T, admin, id string) string {
	t.Helper()
	resp, err := http.Get(admin + "/id/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := router.ReadBounded(resp.Body)
	return string(b)
}

// A Caddy whose admin API sends no Etag (here: a real Caddy behind a proxy that strips it) cannot
// take a conditional write: the run is refused before any write, unless the fleet opts in with
// router.allow_no_etag, which compares the route with the run's last read-back right before each
// PATCH.
func TestCaddyWithoutETagRefusedUnlessAllowed(t *testing.T) {
	c := startBinCaddy(t, nil)
	target, _ := url.Parse(c.Admin)
	rp := &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, // Caddy's own host, as its admin API requires
		ModifyResponse: func(r *http.Response) error { r.Header.Del("Etag"); return nil },
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(proxy.Close)
	line := fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", proxy.URL)
	dir, _ := binDir(t, line, "step_interval: 10ms")
	before := caddyGet(t, c.Admin, "route-eu")
	code, out, errOut := runLB(t, dir, nil, runArgs...)
	if code == 0 || !strings.Contains(errOut, "no Etag") {
		t.Fatalf("run through a Caddy without Etags: exit %d, want a refusal naming the missing Etag\nstdout %s\nstderr %s", code, out, errOut)
	}
	if after := caddyGet(t, c.Admin, "route-eu"); after != before {
		t.Fatalf("the refused run wrote the route:\n%s\n%s", before, after)
	}
	dir, _ = binDir(t, strings.Replace(line, "router: {", "router: {allow_no_etag: true, ", 1), "step_interval: 10ms")
	code, out, errOut = runLB(t, dir, nil, runArgs...)
	if code != 0 {
		t.Fatalf("run with allow_no_etag: exit %d\n%s\n%s", code, out, errOut)
	}
	if dials := upstreamDials(t, c.Admin, "route-eu"); len(dials) != 1 || dials[0] != binDials["eu-central-1"] {
		t.Fatalf("eu-only upstreams after the evacuation: %v", dials)
	}
}
