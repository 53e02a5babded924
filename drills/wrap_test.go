//go:build integration

package drills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
)

// The drill wraps the fleet's driver twice (its router-unreachable fault, then each
// orchestrator process's view); the executor must still see the driver's own capabilities
// through both: its compare-and-swap (not a digest of a Read) and, for Caddy, weight 0 as the
// drain. Real Caddy and HAProxy.
func TestWrappedDriverKeepsCapabilities(t *testing.T) {
	pa, pb := freePort(t), freePort(t)
	head := fmt.Sprintf("model: {name: demo, manifest: m.json}\nregions:\n  a: {replica: ./ra, endpoint: 'http://127.0.0.1:%d'}\n  b: {replica: ./rb, endpoint: 'http://127.0.0.1:%d'}\ntenants: {g: [a, b]}\n", pa, pb)
	for _, c := range []struct {
		name      string
		router    func(t *testing.T) string
		zeroDrain bool
	}{
		{"caddy", func(t *testing.T) string {
			cfg, _ := json.Marshal(map[string]any{"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"g": map[string]any{
				"listen": []string{fmt.Sprintf("127.0.0.1:%d", freePort(t))}, "automatic_https": map[string]any{"disable": true},
				"routes": []any{map[string]any{"@id": "route-g", "handle": []any{map[string]any{
					"handler": "reverse_proxy", "upstreams": []any{map[string]any{"dial": fmt.Sprintf("127.0.0.1:%d", pa)}, map[string]any{"dial": fmt.Sprintf("127.0.0.1:%d", pb)}},
					"load_balancing": map[string]any{"selection_policy": map[string]any{"policy": "weighted_round_robin", "weights": []int{60, 40}}},
				}}}},
			}}}}})
			return fmt.Sprintf("router: {driver: caddy, url: %q, backends: {g: route-g}}\n", emulators.StartCaddy(t, string(cfg)).Admin)
		}, true},
		{"haproxy", func(t *testing.T) string {
			h := emulators.StartHAProxy(t, fmt.Sprintf("defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n  timeout server 10s\n\nbackend be_g\n  balance roundrobin\n  server a 127.0.0.1:%d weight 60\n  server b 127.0.0.1:%d weight 40\n", pa, pb))
			return fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {g: be_g}}\n", h.Socket)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := fleet.Parse([]byte(head+c.router(t)), filepath.Join(t.TempDir(), "fleet.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			inner, err := fleet.OpenRouter(f)
			if err != nil {
				t.Fatal(err)
			}
			var d router.Driver = processRouter((&faultRouter{Driver: inner, now: time.Now, afterStep: 1, duration: time.Hour}).driver(), &process{})
			if _, ok := d.(router.ConditionalDriver); !ok {
				t.Fatal("the wrapped driver is not a ConditionalDriver")
			}
			if got := router.ZeroWeightIsDrain(d); got != c.zeroDrain {
				t.Errorf("wrapped: weight 0 is the drain %v, want %v (as the driver says)", got, c.zeroDrain)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, own, err := inner.(router.ConditionalDriver).ReadVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rs, v, err := router.ReadVersion(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			if v["g"] != own["g"] {
				t.Errorf("wrapped version %q, the driver's own %q: the wrapper lost the driver's compare-and-swap", v["g"], own["g"])
			}
			desired := rs.Clone()
			desired.Weights["g"]["a"], desired.Weights["g"]["b"] = 30, 70
			if err := router.ApplyIf(ctx, d, desired, router.RouterVersion{"g": "stale"}, nil); !errors.Is(err, router.ErrRouterConflict) {
				t.Errorf("a write since a stale version: %v, want ErrRouterConflict", err)
			}
			if err := router.ApplyIf(ctx, d, desired, v, nil); err != nil {
				t.Fatal(err)
			}
			if got, err := inner.Read(ctx); err != nil || got.Weights["g"]["a"] != 30 || got.Weights["g"]["b"] != 70 {
				t.Errorf("after the conditional write the router holds %v (%v)", got.Weights, err)
			}
			if _, err := d.Read(ctx); !errors.Is(err, router.ErrRouterUnreachable) {
				t.Errorf("the router-unreachable fault after one step did not start: %v", err)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// notingDriver is a driver that reports notes (as gateway-api does of its HTTPRoutes).
type notingDriver struct{ router.Driver }

func (notingDriver) Notes() []string {
	return []string{"HTTPRoute g: Accepted=False (NotAllowedByListeners)"}
}

// A drill wraps the fleet's driver twice; a driver with notes must still give them through both,
// or the executor of a drill would never log what the gateway says of its routes. The wrappers
// add no capability the driver lacks either.
func TestWrappedDriverKeepsNotes(t *testing.T) {
	inner := notingDriver{&filerouter.Router{Path: filepath.Join(t.TempDir(), "weights.json")}}
	d := processRouter((&faultRouter{Driver: inner, now: time.Now}).driver(), &process{})
	n, ok := d.(router.NotingDriver)
	if !ok {
		t.Fatal("the wrapped driver is not a NotingDriver: the drill's executor would log no notes")
	}
	if got := n.Notes(); len(got) != 1 || got[0] != inner.Notes()[0] {
		t.Errorf("notes through the wrappers %q, want the driver's %q", got, inner.Notes())
	}
	if _, ok := d.(router.ConditionalDriver); ok {
		t.Error("the wrapped file driver claims compare-and-swap it does not have")
	}
}
