//go:build integration

package caddy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

var classes = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

var routes = map[string]string{"eu-only": "route-eu", "global": "route-global"}

var start = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30},
}, States: router.States{}}

// dials are the regions' upstreams: placeholders, as no request goes through the routes here.
var dials = map[string]string{"us-east-1": "127.0.0.1:10001", "eu-west-1": "127.0.0.1:10002", "eu-central-1": "127.0.0.1:10003", "ap-southeast-1": "127.0.0.1:10004"}

// config is one server per class whose one route (@id) proxies to the class's regions with
// weighted_round_robin.
func config(t *testing.T) string {
	servers := map[string]any{}
	for _, class := range slices.Sorted(maps.Keys(routes)) {
		port, err := emulators.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		var ups []any
		var ws []int
		for _, r := range slices.Sorted(maps.Keys(start.Weights[class])) {
			ups = append(ups, map[string]any{"dial": dials[r]})
			ws = append(ws, start.Weights[class][r])
		}
		servers[class] = map[string]any{
			"listen":          []string{fmt.Sprintf("127.0.0.1:%d", port)},
			"automatic_https": map[string]any{"disable": true},
			"routes": []any{map[string]any{"@id": routes[class], "handle": []any{map[string]any{
				"handler": "reverse_proxy", "upstreams": ups,
				"load_balancing": map[string]any{"selection_policy": map[string]any{"policy": "weighted_round_robin", "weights": ws}},
			}}}},
		}
	}
	b, _ := json.Marshal(map[string]any{"apps": map[string]any{"http": map[string]any{"servers": servers}}})
	return string(b)
}

// edit changes a route's reverse_proxy handler through the admin API as another client would
// (GET, change, PATCH, no If-Match).
func edit(t *testing.T, admin, id string, change func(h map[string]any)) {
	t.Helper()
	resp, err := http.Get(admin + "/id/" + id)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var route map[string]any
	if err := json.Unmarshal(b, &route); err != nil {
		t.Fatalf("GET /id/%s: %v: %s", id, err, b)
	}
	h, err := ProxyHandler(route)
	if err != nil {
		t.Fatal(err)
	}
	change(h)
	body, _ := json.Marshal(route)
	req, _ := http.NewRequest(http.MethodPatch, admin+"/id/"+id, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH /id/%s: HTTP %d %s", id, resp.StatusCode, b)
	}
}

func weights(h map[string]any) map[string]any {
	return h["load_balancing"].(map[string]any)["selection_policy"].(map[string]any)
}

func driver(admin string) *Router {
	return &Router{Admin: admin, Routes: routes, Classes: classes, Dials: dials, Timeout: 5 * time.Second}
}

// The Caddy driver against a real caddy over its admin API.
func TestConformance(t *testing.T) {
	var admin string // the last router Open started, for Stalled's proxy
	routertest.Run(t, routertest.Harness{
		Name: "caddy",
		Open: func(t *testing.T) routertest.Setup {
			c := emulators.StartCaddy(t, config(t))
			admin = c.Admin
			return routertest.Setup{
				Driver: driver(c.Admin), State: start, Classes: classes,
				Tamper: func(t *testing.T) {
					edit(t, c.Admin, "route-eu", func(h map[string]any) {
						ws := weights(h)["weights"].([]any)
						ws[0] = 7
					})
				},
				BreakTopology: func(t *testing.T) {
					// us-east-1's upstream in the EU-only route
					edit(t, c.Admin, "route-eu", func(h map[string]any) {
						h["upstreams"] = append(h["upstreams"].([]any), map[string]any{"dial": dials["us-east-1"]})
						weights(h)["weights"] = append(weights(h)["weights"].([]any), 10)
					})
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver {
			port, err := emulators.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			return driver(fmt.Sprintf("http://127.0.0.1:%d", port))
		},
		Stalled: func(t *testing.T) router.Driver {
			in := faultproxy.New()
			in.SetLatency(time.Hour, 0) // every request held until its sender gives up
			p, err := faultproxy.NewProxy(admin, in)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			return driver(p.URL)
		},
	})
}

// Caddy's own leak: when every upstream of a class's route fails, the server's error routes
// (handle_errors) take the request, and a reverse_proxy there sends it wherever it points. A
// server holding a class route with such a fallback is refused before anything is written.
func TestErrorRoutesFallbackRefused(t *testing.T) {
	var cfg map[string]any
	if err := json.Unmarshal([]byte(config(t)), &cfg); err != nil {
		t.Fatal(err)
	}
	srv := cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)["eu-only"].(map[string]any)
	srv["errors"] = map[string]any{"routes": []any{map[string]any{"handle": []any{map[string]any{
		"handler": "reverse_proxy", "upstreams": []any{map[string]any{"dial": dials["us-east-1"]}},
	}}}}}
	b, _ := json.Marshal(cfg)
	c := emulators.StartCaddy(t, string(b))
	d := driver(c.Admin)
	_, err := d.Read(t.Context())
	if !errors.Is(err, router.ErrRouterTopology) || !strings.Contains(err.Error(), "server eu-only (class eu-only)") {
		t.Fatalf("read with a handle_errors fallback: %v, want ErrRouterTopology naming server eu-only", err)
	}
	t.Logf("refused: %v", err)
	before := routeJSON(t, c.Admin, "route-eu")
	want := start.Clone()
	want.Weights["eu-only"]["eu-west-1"], want.Weights["eu-only"]["eu-central-1"] = 0, 100
	if err := d.Apply(t.Context(), want); !errors.Is(err, router.ErrRouterTopology) {
		t.Fatalf("apply with a handle_errors fallback: %v, want ErrRouterTopology", err)
	}
	if err := router.ApplyIf(t.Context(), d, want, router.RouterVersion{"eu-only": "x", "global": "y"}, nil); !errors.Is(err, router.ErrRouterTopology) {
		t.Fatalf("apply-if with a handle_errors fallback: %v, want ErrRouterTopology", err)
	}
	if after := routeJSON(t, c.Admin, "route-eu"); after != before {
		t.Fatalf("the refused write changed the route:\n%s\n%s", before, after)
	}
	// the same fallback in a server that holds no class route is not this fleet's concern
	delete(srv, "errors")
	cfg["apps"].(map[string]any)["http"].(map[string]any)["servers"].(map[string]any)["other"] = map[string]any{
		"listen": []string{"127.0.0.1:0"}, "automatic_https": map[string]any{"disable": true},
		"errors": map[string]any{"routes": []any{map[string]any{"handle": []any{map[string]any{
			"handler": "reverse_proxy", "upstreams": []any{map[string]any{"dial": dials["us-east-1"]}},
		}}}}},
	}
	b, _ = json.Marshal(cfg)
	c2 := emulators.StartCaddy(t, string(b))
	if _, err := driver(c2.Admin).Read(t.Context()); err != nil {
		t.Fatalf("read with a fallback in a server of no class: %v", err)
	}
}

func routeJSON(t *testing.T, admin, id string) string {
	t.Helper()
	resp, err := http.Get(admin + "/id/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
