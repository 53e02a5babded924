//go:build integration

package gatewayapi

import (
	"testing"
	"time"

	"lifeboat/fleet/router"
	"lifeboat/fleet/router/routertest"
	"lifeboat/internal/base/kubeclient"
)

// The Gateway API driver against a real kube-apiserver: each subtest's routes in a fresh
// namespace of the shared control plane.
func TestConformance(t *testing.T) {
	var rig *kubeRig // the rig Open last made, for the unreachable and stalled drivers
	// at is a driver on rig's namespace with the API server at host instead.
	at := func(t *testing.T, host string) router.Driver {
		rc := rig.k.RESTConfig()
		rc.Host = "https://" + host
		g, err := NewForCluster(Config{Namespace: rig.ns, Routes: testRoutes, Services: testServices(), Classes: testClasses, Timeout: 5 * time.Second},
			kubeclient.FromREST(rc, rig.ns, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	routertest.Run(t, routertest.Harness{
		Name: "gateway-api",
		Open: func(t *testing.T) routertest.Setup {
			r := newKubeRig(t)
			r.start(t)
			rig = r
			return routertest.Setup{
				Driver: r.driver(t), State: testStart, Classes: testClasses,
				Tamper: func(t *testing.T) {
					r.edit(t, "route-eu", func(rule map[string]any) {
						rule["backendRefs"].([]any)[0].(map[string]any)["weight"] = int64(7)
					})
				},
				BreakTopology: func(t *testing.T) {
					// us-east-1's Service in the EU-only route
					r.edit(t, "route-eu", func(rule map[string]any) {
						rule["backendRefs"] = append(rule["backendRefs"].([]any), map[string]any{"name": "svc-us-east-1", "port": int64(8000), "weight": int64(10)})
					})
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver { return at(t, closedPort(t)) },
		Stalled:     func(t *testing.T) router.Driver { return at(t, routertest.SilentListener(t, "tcp")) },
	})
}

// The same suite on routes whose regions are InferencePools (each with its endpoint picker
// Service): every read also reads the pools, every write sets backendRefs of group
// inference.networking.k8s.io, kind InferencePool, without a port.
func TestConformancePools(t *testing.T) {
	var rig *kubeRig
	at := func(t *testing.T, host string) router.Driver {
		rc := rig.k.RESTConfig()
		rc.Host = "https://" + host
		g, err := NewForCluster(Config{Namespace: rig.ns, Routes: testRoutes, Services: poolServices(), Classes: testClasses, Timeout: 5 * time.Second},
			kubeclient.FromREST(rc, rig.ns, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	routertest.Run(t, routertest.Harness{
		Name: "gateway-api (InferencePool)",
		Open: func(t *testing.T) routertest.Setup {
			r := newKubeRig(t)
			r.startWith(t, poolServices())
			rig = r
			return routertest.Setup{
				Driver: r.driverWith(t, poolServices()), State: testStart, Classes: testClasses,
				Tamper: func(t *testing.T) {
					r.edit(t, "route-eu", func(rule map[string]any) {
						rule["backendRefs"].([]any)[0].(map[string]any)["weight"] = int64(7)
					})
				},
				BreakTopology: func(t *testing.T) {
					// us-east-1's pool in the EU-only route
					r.edit(t, "route-eu", func(rule map[string]any) {
						rule["backendRefs"] = append(rule["backendRefs"].([]any), map[string]any{
							"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool-us-east-1", "weight": int64(10)})
					})
				},
			}
		},
		Unreachable: func(t *testing.T) router.Driver { return at(t, closedPort(t)) },
		Stalled:     func(t *testing.T) router.Driver { return at(t, routertest.SilentListener(t, "tcp")) },
	})
}
