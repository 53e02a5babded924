//go:build integration

package gatewayapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

// The test fleet: an EU-only class and a global one over four regions, each region's backend
// the Service svc-<region>:8000 in the route's namespace.
var testClasses = map[string][]string{
	"eu-only": {"eu-west-1", "eu-central-1"},
	"global":  {"us-east-1", "eu-west-1", "ap-southeast-1"},
}

var testRoutes = map[string]string{"eu-only": "route-eu", "global": "route-global"}

func testServices() map[string]Backend {
	out := map[string]Backend{}
	for _, r := range []string{"us-east-1", "eu-west-1", "eu-central-1", "ap-southeast-1"} {
		out[r] = Backend{Name: "svc-" + r, Port: 8000}
	}
	return out
}

// An API server that does not answer is ErrRouterUnreachable (exit 4), with nothing of the
// kubeconfig's token in the message.
func TestGatewayAPIUnreachable(t *testing.T) {
	ln := closedPort(t)
	dir := t.TempDir()
	token := "s3cr3t-t0ken-never-printed"
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: %s}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: serving}}]
current-context: x
`, ln, token)
	path := filepath.Join(dir, "kubeconfig")
	os.WriteFile(path, []byte(kc), 0o600)
	g, err := New(Config{Kubeconfig: path, Routes: testRoutes, Services: testServices(), Classes: testClasses, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.String(), "/namespaces/serving") {
		t.Fatalf("the context's namespace is not the default: %s", g)
	}
	_, err = g.Read(context.Background())
	if !errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("read: %v, want ErrRouterUnreachable", err)
	}
	if strings.Contains(err.Error(), token) || strings.Contains(g.String(), token) {
		t.Fatalf("token in %q", err)
	}
	t.Logf("unreachable: %v", err)
	if _, err := New(Config{Kubeconfig: path, Context: "nope", Routes: testRoutes, Services: testServices(), Classes: testClasses}); err == nil || !strings.Contains(err.Error(), `context "nope"`) {
		t.Fatalf("unknown context: %v", err)
	}
	os.WriteFile(path, []byte("token: "+token+"\n\x00garbage: ["), 0o600)
	if _, err := New(Config{Kubeconfig: path, Routes: testRoutes, Services: testServices(), Classes: testClasses}); err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("a broken kubeconfig: %v", err)
	}
}

func closedPort(t testing.TB) string {
	t.Helper()
	p, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

func TestParseBackend(t *testing.T) {
	for in, want := range map[string]string{"svc:8000": "svc:8000", "ns/svc-a:80": "ns/svc-a:80"} {
		b, err := ParseBackend(in)
		if err != nil || b.String() != want {
			t.Errorf("%s: %v %v", in, b, err)
		}
	}
	for _, in := range []string{"svc", "svc:0", "svc:70000", "Svc:80", "a/b/c:80", "/svc:80", "svc:http"} {
		if _, err := ParseBackend(in); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// gwFleet is a fleet file on the gateway-api driver; router is the router's keys beyond driver.
func gwFleet(rtr, state string) string {
	return fmt.Sprintf(`model: {name: llama-demo, manifest: m.json}
regions:
  us-east-1: {replica: ./r, capacity: {replicas: 6, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: ./r, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  ap-southeast-1: {replica: ./r, capacity: {replicas: 3, prefill_tokens_per_s: 8000}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, ap-southeast-1]
router:
  driver: gateway-api
%s
failover: {step_percent: 25, step_interval: 10ms, spill_cap_percent: 60, drain_timeout: 1s}
state: %q
`, rtr, state)
}

const gwRouterKeys = `  backends: {eu-only: route-eu, global: route-global}
  services:
    us-east-1: svc-us-east-1:8000
    eu-west-1: svc-eu-west-1:8000
    eu-central-1: svc-eu-central-1:8000
    ap-southeast-1: svc-ap-southeast-1:8000`

// The fleet file's router section for the driver: its keys decode into the driver's Config and
// open it; what is missing or wrong is named by file, line and field.
func TestGatewayAPIFleetConfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`), 0o600)
	path := filepath.Join(dir, "fleet.yaml")
	f, err := fleet.Parse([]byte(gwFleet("  kubeconfig: ./kubeconfig\n  context: prod\n  namespace: serving\n"+gwRouterKeys, "file:///tmp/x")), path)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := f.Router.Config.(*FleetConfig)
	if !ok || c.Kubeconfig != kc || c.Context != "prod" || c.Namespace != "serving" || c.Services["eu-west-1"] != (Backend{Name: "svc-eu-west-1", Port: 8000}) {
		t.Fatalf("config %#v", f.Router.Config)
	}
	d, err := fleet.OpenRouter(f)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.String(); s != "gateway-api:https://127.0.0.1:6443/namespaces/serving" {
		t.Fatalf("router %s", s)
	}
	for _, c := range []struct{ keys, want string }{
		{"  backends: {eu-only: route-eu}\n  services: {us-east-1: a:1, eu-west-1: b:1, eu-central-1: c:1, ap-southeast-1: d:1}", `router.backends: class "global" has no backend`},
		{"  backends: {eu-only: route-eu, global: route-global}\n  services: {us-east-1: a:1, eu-west-1: b:1, eu-central-1: c:1}", "router.services.ap-southeast-1: required with driver gateway-api"},
		{"  backends: {eu-only: route-eu, global: route-global}\n  services: {us-east-1: a:1, eu-west-1: b:1, eu-central-1: c:1, ap-southeast-1: d:1, mars: e:1}", `router.services.mars: region "mars" is not defined`},
		{"  backends: {eu-only: route-eu, global: route-global}\n  services: {us-east-1: a, eu-west-1: b:1, eu-central-1: c:1, ap-southeast-1: d:1}", `router.services.us-east-1: "a": want [namespace/]service:port`},
		{"  namespace: Serving_1\n" + gwRouterKeys, "router.namespace"},
		{"  socket: /run/haproxy.sock\n" + gwRouterKeys, "router.socket"},
	} {
		_, err := fleet.Parse([]byte(gwFleet(c.keys, "file:///tmp/x")), "fleet.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.keys, err, c.want)
		}
	}
}
