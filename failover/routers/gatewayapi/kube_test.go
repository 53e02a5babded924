//go:build integration

package gatewayapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

var testStart = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30},
}, States: router.States{}}

// kubeRig is a fresh namespace on the shared control plane with the Gateway API CRDs.
type kubeRig struct {
	k   *emulators.Kube
	ns  string
	dyn dynamic.Interface
}

func newKubeRig(t testing.TB) *kubeRig {
	t.Helper()
	k := emulators.SharedKube(t)
	dyn, err := dynamic.NewForConfig(k.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &kubeRig{k: k, ns: k.Namespace(t), dyn: dyn}
}

// route is an HTTPRoute of one rule with backendRefs for rs's class regions (a maint region has none).
func (r *kubeRig) route(name, class string, rs router.RouterState) *unstructured.Unstructured {
	var refs []any
	for _, reg := range slices.Sorted(maps.Keys(rs.Weights[class])) {
		if rs.States.Get(class, reg) == router.Maint {
			continue
		}
		refs = append(refs, map[string]any{"name": "svc-" + reg, "port": int64(8000), "weight": int64(rs.Weights[class][reg])})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": r.ns},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw"}},
			"rules":      []any{map[string]any{"backendRefs": refs}},
		},
	}}
}

func (r *kubeRig) create(t testing.TB, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).Create(testbed.Ctx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create httproute %s: %v", obj.GetName(), err)
	}
	return got
}

func (r *kubeRig) get(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	got, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).Get(testbed.Ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// edit changes a route as another client would (kubectl edit): get, change, update.
func (r *kubeRig) edit(t testing.TB, name string, change func(rule map[string]any)) {
	t.Helper()
	obj := r.get(t, name)
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	change(rules[0].(map[string]any))
	unstructured.SetNestedSlice(obj.Object, rules, "spec", "rules")
	if _, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).Update(testbed.Ctx(t), obj, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatalf("edit %s: %v", name, err)
	}
}

// start creates the two classes' routes at testStart.
func (r *kubeRig) start(t testing.TB) {
	t.Helper()
	for class, name := range testRoutes {
		r.create(t, r.route(name, class, testStart))
	}
}

func (r *kubeRig) driver(t testing.TB) *Router {
	t.Helper()
	g, err := NewForCluster(Config{Namespace: r.ns, Routes: testRoutes, Services: testServices(), Classes: testClasses, Timeout: 5 * time.Second},
		kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// backendRefs is the route's rule's backendRefs as "name:weight".
func backendRefs(t testing.TB, obj *unstructured.Unstructured) []string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("%s: %d rules", obj.GetName(), len(rules))
	}
	var out []string
	for _, b := range rules[0].(map[string]any)["backendRefs"].([]any) {
		m := b.(map[string]any)
		out = append(out, fmt.Sprintf("%s:%v", m["name"], m["weight"]))
	}
	slices.Sort(out)
	return out
}

func noFence() error { return nil }

// Read, conditional apply, read back on a real API server: the weights and states round-trip,
// a drain is a backendRef kept with weight 0 and a withdraw is its removal, every write moves
// the resourceVersion and the next write is conditional on the one read back.
func TestGatewayAPIRoundTrip(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	g := r.driver(t)
	rs, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(testStart, rs); len(d) > 0 {
		t.Fatalf("read: %v", d)
	}
	if v["eu-only"] != r.get(t, "route-eu").GetResourceVersion() {
		t.Fatalf("version %v, route at %s", v, r.get(t, "route-eu").GetResourceVersion())
	}
	// drain eu-west-1 from global (weight 0, kept), move eu-only's weight to eu-central-1
	want := testStart.Clone()
	want.Weights["global"] = map[string]int{"us-east-1": 55, "eu-west-1": 0, "ap-southeast-1": 45}
	want.States.Set("global", "eu-west-1", router.Drain)
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 10, "eu-central-1": 90}
	fences := 0
	if err := g.ApplyIf(ctx, want, v, func() error { fences++; return nil }); err != nil {
		t.Fatal(err)
	}
	if fences != 2 {
		t.Fatalf("fence called %d times for 2 writes", fences)
	}
	if got := backendRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{"svc-ap-southeast-1:45", "svc-eu-west-1:0", "svc-us-east-1:55"}) {
		t.Fatalf("global after drain: %v", got)
	}
	back, v2, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(want, back); len(d) > 0 {
		t.Fatalf("read back: %v", d)
	}
	if v2["global"] == v["global"] {
		t.Fatalf("resourceVersion did not move: %v", v2)
	}
	// withdraw eu-west-1 from global: its backendRef goes
	want.States.Set("global", "eu-west-1", router.Maint)
	if err := g.ApplyIf(ctx, want, v2, noFence); err != nil {
		t.Fatal(err)
	}
	if got := backendRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{"svc-ap-southeast-1:45", "svc-us-east-1:55"}) {
		t.Fatalf("global after withdraw: %v", got)
	}
	back, v3, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if back.States.Get("global", "eu-west-1") != router.Maint || back.Weights["global"]["eu-west-1"] != 0 {
		t.Fatalf("withdrawn region reads %d %s", back.Weights["global"]["eu-west-1"], back.States.Get("global", "eu-west-1"))
	}
	// restore it: the backendRef comes back
	want.States.Set("global", "eu-west-1", router.Ready)
	want.Weights["global"]["eu-west-1"] = 20
	if err := g.ApplyIf(ctx, want, v3, noFence); err != nil {
		t.Fatal(err)
	}
	if got := backendRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{"svc-ap-southeast-1:45", "svc-eu-west-1:20", "svc-us-east-1:55"}) {
		t.Fatalf("global after restore: %v", got)
	}
	// the route keeps what Lifeboat does not own (parentRefs), and names Lifeboat as a field manager
	obj := r.get(t, "route-global")
	if p, _, _ := unstructured.NestedSlice(obj.Object, "spec", "parentRefs"); len(p) != 1 {
		t.Fatalf("parentRefs %v", p)
	}
	managers := map[string]bool{}
	for _, m := range obj.GetManagedFields() {
		managers[m.Manager] = true
	}
	if !managers[FieldManager] {
		t.Fatalf("managedFields name %v, not %s", managers, FieldManager)
	}
}

// Another client writes the route between this run's read and its write: the update carries the
// resourceVersion this run read, the API server answers 409, the driver says ErrRouterConflict
// and the other client's content stays, never overwritten. Also when the other write came
// before this process started (a driver with nothing at hand reads, sees a newer version, writes
// nothing).
func TestGatewayAPIConflictNeverOverwrites(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	g := r.driver(t)
	_, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 0, "eu-central-1": 100}
	other := func(rule map[string]any) {
		for _, b := range rule["backendRefs"].([]any) {
			b.(map[string]any)["weight"] = int64(7)
		}
	}
	// the other write lands immediately before ours: in the fence, after every check of ours
	err = g.ApplyIf(ctx, router.RouterState{Weights: router.Weights{"eu-only": want.Weights["eu-only"]}}, v, func() error {
		r.edit(t, "route-eu", other)
		return nil
	})
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("write after another's: %v, want ErrRouterConflict", err)
	}
	t.Logf("refused: %v", err)
	if got := backendRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"svc-eu-central-1:7", "svc-eu-west-1:7"}) {
		t.Fatalf("the other client's write was overwritten: %v", got)
	}
	// a fresh driver (another process) with the old version: nothing at hand, reads, refuses
	g2 := r.driver(t)
	err = g2.ApplyIf(ctx, want, v, noFence)
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("fresh driver on a stale version: %v", err)
	}
	if got := backendRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"svc-eu-central-1:7", "svc-eu-west-1:7"}) {
		t.Fatalf("overwritten: %v", got)
	}
	// and the fence's own refusal stops the write
	_, v, _ = g.ReadVersion(ctx)
	stop := errors.New("lease lost")
	if err := g.ApplyIf(ctx, want, v, func() error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fence error: %v", err)
	}
	if got := backendRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"svc-eu-central-1:7", "svc-eu-west-1:7"}) {
		t.Fatalf("written past the fence: %v", got)
	}
}

// Apply (unconditional: the bench's and a test's write) goes out on the route as last read,
// without a GET first; a route changed since answers 409, and Apply reads it and writes again —
// desired lands, and what the other client changed outside the weights stays.
func TestGatewayAPIApplyOnAStaleReadRereads(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	g := r.driver(t)
	if _, err := g.Read(ctx); err != nil {
		t.Fatal(err)
	}
	before := r.get(t, "route-eu").GetResourceVersion()
	r.edit(t, "route-eu", func(rule map[string]any) { rule["timeouts"] = map[string]any{"request": "7s"} })
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 0, "eu-central-1": 100}
	if err := g.Apply(ctx, want); err != nil {
		t.Fatal(err)
	}
	obj := r.get(t, "route-eu")
	if got := backendRefs(t, obj); !slices.Equal(got, []string{"svc-eu-central-1:100", "svc-eu-west-1:0"}) {
		t.Fatalf("Apply on a stale read: %v", got)
	}
	if rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules"); len(rules) != 1 || rules[0].(map[string]any)["timeouts"] == nil {
		t.Fatalf("the other client's change was lost: %v", rules)
	}
	if obj.GetResourceVersion() == before {
		t.Fatal("route not written")
	}
	// and a second Apply, on the route as this driver wrote it, needs no read
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 50, "eu-central-1": 50}
	if err := g.Apply(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, err := g.Read(ctx); err != nil || len(router.Diff(want, got)) > 0 {
		t.Fatalf("read back %v: %v", err, router.Diff(want, got))
	}
}

// A route Lifeboat cannot map region by region is refused on read and never written.
func TestGatewayAPIUnmappableRoutesRefused(t *testing.T) {
	r := newKubeRig(t)
	ctx := testbed.Ctx(t)
	ref := func(name string, extra ...any) map[string]any {
		m := map[string]any{"name": name, "port": int64(8000), "weight": int64(50)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	good := []any{ref("svc-eu-west-1"), ref("svc-eu-central-1")}
	cases := []struct {
		name  string
		rules []any
		want  string
	}{
		{"second-rule", []any{map[string]any{"backendRefs": good}, map[string]any{"backendRefs": []any{ref("svc-us-east-1")}}}, "2 rules"},
		{"unknown-backend", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), ref("vllm-somewhere")}}}, "vllm-somewhere:8000, no region's backend"},
		{"wrong-port", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), map[string]any{"name": "svc-eu-central-1", "port": int64(9000)}}}}, "svc-eu-central-1:9000"},
		{"cross-namespace", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), ref("svc-eu-central-1", "namespace", "elsewhere")}}}, "elsewhere/svc-eu-central-1:8000"},
		{"mirror", []any{map[string]any{"backendRefs": good, "filters": []any{map[string]any{"type": "RequestMirror", "requestMirror": map[string]any{"backendRef": map[string]any{"name": "svc-us-east-1", "port": int64(8000)}}}}}}, "mirrors requests to svc-us-east-1"},
		{"redirect", []any{map[string]any{"filters": []any{map[string]any{"type": "RequestRedirect", "requestRedirect": map[string]any{"hostname": "us.example.com"}}}}}, "redirects"},
		{"extension", []any{map[string]any{"backendRefs": good, "filters": []any{map[string]any{"type": "ExtensionRef", "extensionRef": map[string]any{"group": "example.com", "kind": "Hook", "name": "h"}}}}}, `"ExtensionRef"`},
		{"backend-filters", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1", "filters", []any{map[string]any{"type": "RequestMirror", "requestMirror": map[string]any{"backendRef": map[string]any{"name": "svc-us-east-1", "port": int64(8000)}}}}), ref("svc-eu-central-1")}}}, "filters of its own"},
		{"not-a-service", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), ref("bucket", "group", "example.com", "kind", "Bucket")}}}, "not a Service"},
		{"duplicate", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), ref("svc-eu-west-1")}}}, "both region eu-west-1"},
		{"ineligible", []any{map[string]any{"backendRefs": []any{ref("svc-eu-west-1"), ref("svc-us-east-1", "weight", int64(0))}}}, "region us-east-1's Service, which class eu-only must never reach"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := "route-" + c.name
			obj := r.route(name, "eu-only", testStart)
			unstructured.SetNestedSlice(obj.Object, c.rules, "spec", "rules")
			created := r.create(t, obj)
			g, err := NewForCluster(Config{Namespace: r.ns, Routes: map[string]string{"eu-only": name}, Services: testServices(), Classes: euOnly},
				kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Read(ctx)
			if !errors.Is(err, router.ErrRouterTopology) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "httproute "+r.ns+"/"+name) {
				t.Fatalf("read: %v, want ErrRouterTopology naming the HTTPRoute %s/%s and %q", err, r.ns, name, c.want)
			}
			t.Logf("%s: %v", c.name, err)
			// even a write with the current version is refused, and the route stays as it is
			err = g.ApplyIf(ctx, router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 100, "eu-central-1": 0}}}, router.RouterVersion{"eu-only": created.GetResourceVersion()}, noFence)
			if !errors.Is(err, router.ErrRouterTopology) {
				t.Fatalf("write: %v", err)
			}
			if rv := r.get(t, name).GetResourceVersion(); rv != created.GetResourceVersion() {
				t.Fatalf("refused route written: %s → %s", created.GetResourceVersion(), rv)
			}
		})
	}
	// header and rewrite filters do not move traffic between regions: accepted
	obj := r.route("route-headers", "eu-only", testStart)
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	rules[0].(map[string]any)["filters"] = []any{map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "x-class", "value": "eu"}}}}}
	unstructured.SetNestedSlice(obj.Object, rules, "spec", "rules")
	r.create(t, obj)
	g, err := NewForCluster(Config{Namespace: r.ns, Routes: map[string]string{"eu-only": "route-headers"}, Services: testServices(), Classes: euOnly}, kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Read(ctx); err != nil {
		t.Fatalf("a header filter: %v", err)
	}
}

// The conditions a gateway controller writes on the route's status are reported as they are:
// none, Accepted, a ResolvedRefs failure with its reason, and a stale generation.
func TestGatewayAPIConditionsReported(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	g := r.driver(t)
	if _, err := g.Read(ctx); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(g.Notes(), "\n")
	if !strings.Contains(notes, "class eu-only: httproute "+r.ns+"/route-eu: no gateway controller has reported on it") {
		t.Fatalf("notes without status: %s", notes)
	}
	// a controller reports on route-eu (the status subresource, as a controller writes it)
	obj := r.get(t, "route-eu")
	unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
		"parentRef":      map[string]any{"name": "gw", "sectionName": "http"},
		"controllerName": "example.com/gateway-controller",
		"conditions": []any{
			map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "observedGeneration": obj.GetGeneration(), "lastTransitionTime": "2026-01-01T00:00:00Z"},
			map[string]any{"type": "ResolvedRefs", "status": "False", "reason": "BackendNotFound", "message": "service svc-eu-west-1 not found", "observedGeneration": obj.GetGeneration(), "lastTransitionTime": "2026-01-01T00:00:00Z"},
		},
	}}, "status", "parents")
	if _, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	notes = strings.Join(g.Notes(), "\n")
	want := "class eu-only: httproute " + r.ns + "/route-eu: gateway gw/http (example.com/gateway-controller): Accepted=True, ResolvedRefs=False (BackendNotFound: service svc-eu-west-1 not found)"
	if !strings.Contains(notes, want) {
		t.Fatalf("notes:\n%s\nwant:\n%s", notes, want)
	}
	// Lifeboat writes the spec (a new generation); the controller has not caught up yet
	w := testStart.Clone()
	w.Weights["eu-only"] = map[string]int{"eu-west-1": 20, "eu-central-1": 80}
	if err := g.ApplyIf(ctx, w, v, noFence); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Read(ctx); err != nil {
		t.Fatal(err)
	}
	notes = strings.Join(g.Notes(), "\n")
	if !strings.Contains(notes, "Accepted=True [for generation 1 of 2]") {
		t.Fatalf("stale conditions not said: %s", notes)
	}
}

var euOnly = map[string][]string{"eu-only": testClasses["eu-only"]}

// signals: every region warm and calm, for --signals.
const gwSignals = `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 40, "eu-west-1": 30, "ap-southeast-1": 30}},
 "regions": {
 "us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 0, "prefill_tokens_per_s": 9600},
 "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 30, "running": 0, "prefill_tokens_per_s": 6400},
 "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "prefill_tokens_per_s": 6400},
 "ap-southeast-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "prefill_tokens_per_s": 4800}}}`

// binDir writes a fleet on this rig's routes (the admin kubeconfig, the rig's namespace) with a
// file state store, and the signals.
func (r *kubeRig) binDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	keys := fmt.Sprintf("  kubeconfig: %q\n  namespace: %s\n  timeout: 5s\n%s", r.k.Kubeconfig, r.ns, gwRouterKeys)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(gwFleet(keys, "file://"+filepath.Join(dir, "state"))), 0o644)
	os.WriteFile(filepath.Join(dir, "signals.json"), []byte(gwSignals), 0o644)
	return dir
}

// lifeboat runs the binary in dir to its end: exit code, stdout, stderr.
func lifeboat(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	r := clitest.Run(t, clitest.Options{Dir: dir, Timeout: 60 * time.Second}, args...)
	return r.Code, r.Stdout, r.Stderr
}

// watchRefs records the backendRefs of every version of route name from now on.
func (r *kubeRig) watchRefs(t *testing.T, name string) func() [][]string {
	t.Helper()
	ctx, cancel := context.WithCancel(testbed.Ctx(t))
	w, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: r.get(t, name).GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen [][]string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if obj, ok := ev.Object.(*unstructured.Unstructured); ok {
				mu.Lock()
				seen = append(seen, backendRefs(t, obj))
				mu.Unlock()
			}
		}
	}()
	return func() [][]string {
		time.Sleep(200 * time.Millisecond) // the last event's delivery
		cancel()
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// The binary ramps eu-west-1 out on a real API server: `failover plan` reads the routes, `failover
// run` applies every step through the driver, and the routes' history (a watch) shows each class
// only ever on its own regions, and eu-west-1 drained (weight 0, kept) in an earlier version than
// the one that removes its backendRef.
func TestGatewayAPIBinaryRamp(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	dir := r.binDir(t)
	stopEU, stopGlobal := r.watchRefs(t, "route-eu"), r.watchRefs(t, "route-global")
	code, out, errOut := lifeboat(t, dir, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "router reports") || !strings.Contains(errOut, "no gateway controller has reported on it") {
		t.Fatalf("the routes' (missing) conditions are not reported:\n%s", errOut)
	}
	for name, history := range map[string][][]string{"route-eu": stopEU(), "route-global": stopGlobal()} {
		if len(history) < 2 {
			t.Fatalf("%s: %d versions during the run: %v", name, len(history), history)
		}
		drained, removed := -1, -1
		for i, refs := range history {
			for _, ref := range refs {
				svc, _, _ := strings.Cut(ref, ":")
				region := strings.TrimPrefix(svc, "svc-")
				if name == "route-eu" && region != "eu-west-1" && region != "eu-central-1" {
					t.Fatalf("%s version %d routes eu-only to %s: %v", name, i, region, refs)
				}
			}
			has0, has := slices.Contains(refs, "svc-eu-west-1:0"), slices.ContainsFunc(refs, func(s string) bool { return strings.HasPrefix(s, "svc-eu-west-1:") })
			if has0 && drained < 0 {
				drained = i
			}
			if !has && removed < 0 {
				removed = i
				if drained < 0 {
					t.Fatalf("%s: eu-west-1 removed at version %d before being drained: %v", name, i, history)
				}
			}
			if removed >= 0 && has {
				t.Fatalf("%s: eu-west-1 back after its removal: %v", name, history)
			}
		}
		if drained < 0 || removed <= drained {
			t.Fatalf("%s: drain at %d, withdraw at %d: %v", name, drained, removed, history)
		}
		t.Logf("%s: %v", name, history)
	}
	code, out, errOut = lifeboat(t, dir, "failover", "status", "--fleet", "fleet.yaml")
	t.Logf("status: exit %d\n%s\n%s", code, out, errOut)
	rs, err := r.driver(t).Read(testbed.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"eu-only", "global"} {
		if rs.States.Get(class, "eu-west-1") != router.Maint {
			t.Fatalf("%s: eu-west-1 is %s after the evacuation", class, rs.States.Get(class, "eu-west-1"))
		}
	}
}

// An HTTPRoute edited by hand to send the EU-only class to us-east-1 is refused by the binary
// before anything changes (exit 3, topology), and the route is left as the hand edit made it.
func TestGatewayAPIHandEditOutsideRegionsRefused(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	dir := r.binDir(t)
	r.edit(t, "route-eu", func(rule map[string]any) {
		rule["backendRefs"] = append(rule["backendRefs"].([]any), map[string]any{"name": "svc-us-east-1", "port": int64(8000), "weight": int64(5)})
	})
	before := r.get(t, "route-eu").GetResourceVersion()
	for _, args := range [][]string{
		{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-central-1"},
		{"failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-central-1", "--signals", "signals.json", "--yes", "--reason", "test"},
	} {
		code, out, errOut := lifeboat(t, dir, args...)
		if code != 3 || !strings.Contains(errOut+out, "httproute "+r.ns+"/route-eu of class eu-only") ||
			!strings.Contains(errOut+out, "region us-east-1's Service, which class eu-only must never reach") || !strings.Contains(errOut+out, "topology") {
			t.Fatalf("%v: exit %d, want 3 naming the HTTPRoute %s/route-eu and us-east-1\n%s\n%s", args[:2], code, r.ns, out, errOut)
		}
	}
	if rv := r.get(t, "route-eu").GetResourceVersion(); rv != before {
		t.Fatalf("the refused route was written: %s → %s", before, rv)
	}
}

// An API server that does not answer: exit 4.
func TestGatewayAPIBinaryUnreachable(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: s3cr3t-never-printed}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, closedPort(t))
	os.WriteFile(filepath.Join(dir, "kubeconfig"), []byte(kc), 0o600)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(gwFleet("  kubeconfig: ./kubeconfig\n  timeout: 1s\n"+gwRouterKeys, "file://"+filepath.Join(dir, "state"))), 0o644)
	code, out, errOut := lifeboat(t, dir, "failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1")
	if code != 4 || strings.Contains(out+errOut, "s3cr3t") {
		t.Fatalf("exit %d, want 4 without the token\n%s\n%s", code, out, errOut)
	}
}

// The README's Role is enough for the driver, and a Role without update is refused with the
// verbs the driver needs named.
func TestGatewayAPIRBACRole(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	bind := func(user string, verbs ...string) string {
		rbac := r.k.Clientset().RbacV1()
		_, err := rbac.Roles(r.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes"}, Verbs: verbs}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = rbac.RoleBindings(r.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.k.UserKubeconfig(t, user)
	}
	open := func(kubeconfig string) *Router {
		g, err := New(Config{Kubeconfig: kubeconfig, Namespace: r.ns, Routes: testRoutes, Services: testServices(), Classes: testClasses, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	want := testStart.Clone()
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 30, "eu-central-1": 70}
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) { // RBAC caches
		g := open(bind("lifeboat-router", "get", "list", "watch", "update", "patch"))
		_, v, rerr := g.ReadVersion(ctx)
		if err = rerr; err == nil {
			err = g.ApplyIf(ctx, want, v, noFence)
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
		r.k.Clientset().RbacV1().Roles(r.ns).Delete(ctx, "lifeboat-router", metav1.DeleteOptions{})
		r.k.Clientset().RbacV1().RoleBindings(r.ns).Delete(ctx, "lifeboat-router", metav1.DeleteOptions{})
	}
	if err != nil {
		t.Fatalf("with the README's Role: %v", err)
	}
	g := open(bind("read-only", "get"))
	_, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = g.ApplyIf(ctx, testStart, v, noFence)
	if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "get, list, watch, update and patch") || errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("without update: %v", err)
	}
	t.Logf("without update: %v", err)
}

// A gateway controller writes its conditions on the route's status between this run's read and
// its write (every controller does after each change of the spec): the resourceVersion moves,
// nothing this run read does, and the write goes through on the route as it is now, the
// controller's status kept. A change of the route's metadata (a label) in the same place is
// someone else's edit: ErrRouterConflict, nothing overwritten.
func TestGatewayAPIStatusWriteIsNoConflict(t *testing.T) {
	r := newKubeRig(t)
	r.start(t)
	ctx := testbed.Ctx(t)
	g := r.driver(t)
	_, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	report := func() {
		obj := r.get(t, "route-eu")
		unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
			"parentRef": map[string]any{"name": "gw"}, "controllerName": "example.com/gateway-controller",
			"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
				"observedGeneration": obj.GetGeneration(), "lastTransitionTime": "2026-01-01T00:00:00Z"}},
		}}, "status", "parents")
		if _, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 20, "eu-central-1": 80}}}
	fences := 0
	if err := g.ApplyIf(ctx, want, v, func() error {
		if fences++; fences == 1 {
			report() // in the fence: after every check of ours, before our write
		}
		return nil
	}); err != nil {
		t.Fatalf("write after a status report: %v", err)
	}
	if fences != 2 {
		t.Fatalf("fence called %d times, want once per write sent (2)", fences)
	}
	obj := r.get(t, "route-eu")
	if got := backendRefs(t, obj); !slices.Equal(got, []string{"svc-eu-central-1:80", "svc-eu-west-1:20"}) {
		t.Fatalf("route-eu: %v", got)
	}
	if p, _, _ := unstructured.NestedSlice(obj.Object, "status", "parents"); len(p) != 1 {
		t.Fatalf("the controller's status is gone: %v", p)
	}
	// a label is someone's edit, not a report
	_, v, err = g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want.Weights["eu-only"] = map[string]int{"eu-west-1": 50, "eu-central-1": 50}
	err = g.ApplyIf(ctx, want, v, func() error {
		obj := r.get(t, "route-eu")
		obj.SetLabels(map[string]string{"owner": "someone-else"})
		if _, err := r.dyn.Resource(HTTPRoutes).Namespace(r.ns).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return nil
	})
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("write after a label edit: %v, want ErrRouterConflict", err)
	}
	if got := backendRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"svc-eu-central-1:80", "svc-eu-west-1:20"}) {
		t.Fatalf("written over the label edit: %v", got)
	}
}
