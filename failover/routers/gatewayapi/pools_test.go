//go:build integration

package gatewayapi

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/internal/testbed"
)

var serviceImports = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}

// poolServices: every region's backend is the InferencePool pool-<region>.
func poolServices() map[string]Backend {
	out := map[string]Backend{}
	for r := range testServices() {
		out[r] = Backend{Kind: KindInferencePool, Name: "pool-" + r}
	}
	return out
}

// mixedServices: one region of each kind.
func mixedServices() map[string]Backend {
	return map[string]Backend{
		"eu-west-1":      {Kind: KindInferencePool, Name: "pool-eu-west-1"},
		"eu-central-1":   {Name: "svc-eu-central-1", Port: 8000},
		"us-east-1":      {Kind: KindServiceImport, Name: "vllm-us", Port: 8000},
		"ap-southeast-1": {Kind: KindInferencePoolImport, Name: "pool-ap"},
	}
}

func (r *kubeRig) createObj(t testing.TB, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := r.dyn.Resource(gvr).Namespace(r.ns).Create(testbed.Ctx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s: %v", gvr.Resource, obj.GetName(), err)
	}
	return got
}

// service creates a Service name with one port.
func (r *kubeRig) service(t testing.TB, name string, port int32) {
	t.Helper()
	_, err := r.k.Clientset().CoreV1().Services(r.ns).Create(testbed.Ctx(t), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "grpc", Port: port}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
}

// pool creates the InferencePool name selecting app=name on port 8000; with picker, its
// endpoint picker is the Service name-epp:9002 (created too).
func (r *kubeRig) pool(t testing.TB, name string, picker bool) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{
		"selector":    map[string]any{"matchLabels": map[string]any{"app": name}},
		"targetPorts": []any{map[string]any{"number": int64(8000)}},
	}
	if picker {
		r.service(t, name+"-epp", 9002)
		spec["endpointPickerRef"] = map[string]any{"name": name + "-epp", "port": map[string]any{"number": int64(9002)}}
	}
	return r.createObj(t, InferencePools, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": name, "namespace": r.ns},
		"spec":     spec,
	}})
}

// poolImport creates the InferencePoolImport name (it has no spec: a controller writes its status).
func (r *kubeRig) poolImport(t testing.TB, name string) *unstructured.Unstructured {
	t.Helper()
	return r.createObj(t, InferencePoolImports, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "InferencePoolImport",
		"metadata": map[string]any{"name": name, "namespace": r.ns},
	}})
}

// serviceImport creates the ServiceImport name with one port.
func (r *kubeRig) serviceImport(t testing.TB, name string, port int64) {
	t.Helper()
	r.createObj(t, serviceImports, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
		"metadata": map[string]any{"name": name, "namespace": r.ns},
		"spec":     map[string]any{"type": "ClusterSetIP", "ports": []any{map[string]any{"port": port, "protocol": "TCP"}}},
	}})
}

// routeWith is route with each region's backendRef to its backend in svcs.
func (r *kubeRig) routeWith(name, class string, rs router.RouterState, svcs map[string]Backend) *unstructured.Unstructured {
	obj := r.route(name, class, rs)
	var refs []any
	for _, reg := range slices.Sorted(maps.Keys(rs.Weights[class])) {
		if rs.States.Get(class, reg) == router.Maint {
			continue
		}
		m := backendRef(svcs[reg], r.ns)
		m["weight"] = int64(rs.Weights[class][reg])
		refs = append(refs, m)
	}
	unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"backendRefs": refs}}, "spec", "rules")
	return obj
}

// startWith creates the backends of svcs (pools with their endpoint pickers, imports, Services,
// ServiceImports) and the two classes' routes at testStart on them.
func (r *kubeRig) startWith(t testing.TB, svcs map[string]Backend) {
	t.Helper()
	for _, reg := range slices.Sorted(maps.Keys(svcs)) {
		switch b := svcs[reg]; b.kind() {
		case KindInferencePool:
			r.pool(t, b.Name, true)
		case KindInferencePoolImport:
			r.poolImport(t, b.Name)
		case KindServiceImport:
			r.serviceImport(t, b.Name, int64(b.Port))
		case KindService:
			r.service(t, b.Name, int32(b.Port))
		}
	}
	for class, name := range testRoutes {
		r.create(t, r.routeWith(name, class, testStart, svcs))
	}
}

func (r *kubeRig) driverWith(t testing.TB, svcs map[string]Backend) *Router {
	t.Helper()
	g, err := NewForCluster(Config{Namespace: r.ns, Routes: testRoutes, Services: svcs, Classes: testClasses, Timeout: 5 * time.Second},
		kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// typedRefs is the route's backendRefs as "[group/]Kind name[:port]=weight", sorted.
func typedRefs(t testing.TB, obj *unstructured.Unstructured) []string {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
	var out []string
	for _, b := range rules[0].(map[string]any)["backendRefs"].([]any) {
		m := b.(map[string]any)
		s := fmt.Sprintf("%v %v", m["kind"], m["name"])
		if g, _ := m["group"].(string); g != "" {
			s = g + "/" + s
		}
		if p, ok := m["port"]; ok {
			s += fmt.Sprintf(":%v", p)
		}
		out = append(out, fmt.Sprintf("%s=%v", s, m["weight"]))
	}
	slices.Sort(out)
	return out
}

const (
	gie  = "inference.networking.k8s.io/InferencePool "
	giex = "inference.networking.x-k8s.io/InferencePoolImport "
	mcs  = "multicluster.x-k8s.io/ServiceImport "
)

// A class whose regions are InferencePools, on a real API server: read, drain (weight 0,
// kept), withdraw (the backendRef goes), back (it returns with group, kind and name, no port).
func TestGatewayAPIPoolRoundTrip(t *testing.T) {
	r := newKubeRig(t)
	svcs := poolServices()
	r.startWith(t, svcs)
	ctx := testbed.Ctx(t)
	g := r.driverWith(t, svcs)
	rs, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(testStart, rs); len(d) > 0 {
		t.Fatalf("read: %v", d)
	}
	want := testStart.Clone()
	want.Weights["global"] = map[string]int{"us-east-1": 55, "eu-west-1": 0, "ap-southeast-1": 45}
	want.States.Set("global", "eu-west-1", router.Drain)
	if err := g.ApplyIf(ctx, want, v, noFence); err != nil {
		t.Fatal(err)
	}
	if got := typedRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{gie + "pool-ap-southeast-1=45", gie + "pool-eu-west-1=0", gie + "pool-us-east-1=55"}) {
		t.Fatalf("global after drain: %v", got)
	}
	back, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(want, back); len(d) > 0 {
		t.Fatalf("read back the drain: %v", d)
	}
	want.States.Set("global", "eu-west-1", router.Maint)
	if err := g.ApplyIf(ctx, want, v, noFence); err != nil {
		t.Fatal(err)
	}
	if got := typedRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{gie + "pool-ap-southeast-1=45", gie + "pool-us-east-1=55"}) {
		t.Fatalf("global after withdraw: %v", got)
	}
	back, v, err = g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if back.States.Get("global", "eu-west-1") != router.Maint {
		t.Fatalf("withdrawn pool reads %s", back.States.Get("global", "eu-west-1"))
	}
	want.States.Set("global", "eu-west-1", router.Ready)
	want.Weights["global"]["eu-west-1"] = 20
	if err := g.ApplyIf(ctx, want, v, noFence); err != nil {
		t.Fatal(err)
	}
	if got := typedRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{gie + "pool-ap-southeast-1=45", gie + "pool-eu-west-1=20", gie + "pool-us-east-1=55"}) {
		t.Fatalf("global after restore: %v", got)
	}
	back, err = g.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(want, back); len(d) > 0 {
		t.Fatalf("read back the restore: %v", d)
	}
	// a backendRef to a pool may carry a port (the Gateway API allows one; a pool ignores it):
	// still the region's pool
	r.edit(t, "route-eu", func(rule map[string]any) {
		rule["backendRefs"].([]any)[0].(map[string]any)["port"] = int64(8000)
	})
	if _, err := g.Read(ctx); err != nil {
		t.Fatalf("a pool's backendRef with a port: %v", err)
	}
}

// A region whose pool is missing, has no endpoint picker, or whose picker cannot be seen is
// refused on every read, naming the region, the pool and what is missing; nothing is written.
func TestGatewayAPIPoolRefusals(t *testing.T) {
	r := newKubeRig(t)
	ctx := testbed.Ctx(t)
	r.pool(t, "pool-ok", true)
	r.pool(t, "pool-no-picker", false)
	r.pool(t, "pool-lost-picker", true)
	if err := r.k.Clientset().CoreV1().Services(r.ns).Delete(ctx, "pool-lost-picker-epp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// a picker reference on a port its Service does not have
	r.service(t, "epp-other-port", 9003)
	wp := r.pool(t, "pool-wrong-port", false)
	unstructured.SetNestedMap(wp.Object, map[string]any{"name": "epp-other-port", "port": map[string]any{"number": int64(9002)}}, "spec", "endpointPickerRef")
	if _, err := r.dyn.Resource(InferencePools).Namespace(r.ns).Update(ctx, wp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// a picker that is not a Service
	xp := r.pool(t, "pool-odd-picker", false)
	unstructured.SetNestedMap(xp.Object, map[string]any{"group": "example.com", "kind": "Picker", "name": "p"}, "spec", "endpointPickerRef")
	if _, err := r.dyn.Resource(InferencePools).Namespace(r.ns).Update(ctx, xp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, pool, kind, want string }{
		{"missing", "pool-nowhere", KindInferencePool, "inferencepool " + r.ns + "/pool-nowhere: not found"},
		{"no-picker", "pool-no-picker", KindInferencePool, "inferencepool " + r.ns + "/pool-no-picker: no spec.endpointPickerRef"},
		{"picker-gone", "pool-lost-picker", KindInferencePool, "its endpoint picker, Service " + r.ns + "/pool-lost-picker-epp: not found"},
		{"picker-port", "pool-wrong-port", KindInferencePool, "Service " + r.ns + "/epp-other-port: has no port 9002"},
		{"picker-kind", "pool-odd-picker", KindInferencePool, `its endpoint picker is a Picker (group "example.com") p`},
		{"missing-import", "import-nowhere", KindInferencePoolImport, "inferencepoolimport " + r.ns + "/import-nowhere: not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svcs := map[string]Backend{"eu-west-1": {Kind: KindInferencePool, Name: "pool-ok"}, "eu-central-1": {Kind: c.kind, Name: c.pool}}
			route := r.create(t, r.routeWith("route-"+c.name, "eu-only", testStart, svcs))
			g, err := NewForCluster(Config{Namespace: r.ns, Routes: map[string]string{"eu-only": route.GetName()}, Services: svcs, Classes: euOnly},
				kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = g.ReadVersion(ctx)
			if err == nil || !strings.Contains(err.Error(), "region eu-central-1: ") || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not a reading") {
				t.Fatalf("read: %v, want the region, %q and the refusal", err, c.want)
			}
			if errors.Is(err, router.ErrRouterUnreachable) {
				t.Fatalf("a refusal read as unreachable: %v", err)
			}
			t.Logf("%s: %v", c.name, err)
			// the executor reads before it writes: with the read refused, nothing is written
			if rv := r.get(t, route.GetName()).GetResourceVersion(); rv != route.GetResourceVersion() {
				t.Fatalf("route written: %s → %s", route.GetResourceVersion(), rv)
			}
		})
	}
	// a pool without spec.selector cannot be stored: the CRD requires it (the driver's own
	// check is for an API server that lets one through)
	_, err := r.dyn.Resource(InferencePools).Namespace(r.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
		"metadata": map[string]any{"name": "pool-no-selector"},
		"spec":     map[string]any{"targetPorts": []any{map[string]any{"number": int64(8000)}}, "endpointPickerRef": map[string]any{"name": "pool-ok-epp", "port": map[string]any{"number": int64(9002)}}},
	}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "selector") {
		t.Fatalf("a pool without a selector: %v", err)
	}
}

// A user who may read and update the routes but not the pools (or not the endpoint picker's
// Service) is refused, with what the driver needs named.
func TestGatewayAPIPoolForbidden(t *testing.T) {
	r := newKubeRig(t)
	svcs := poolServices()
	r.startWith(t, svcs)
	ctx := testbed.Ctx(t)
	bind := func(user string, rules ...rbacv1.PolicyRule) string {
		rbac := r.k.Clientset().RbacV1()
		if _, err := rbac.Roles(r.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rbac.RoleBindings(r.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r.k.WaitAllowed(t, r.ns, user, nil, "get", "gateway.networking.k8s.io", "httproutes", "")
		return r.k.UserKubeconfig(t, user)
	}
	routes := rbacv1.PolicyRule{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}
	pools := rbacv1.PolicyRule{APIGroups: []string{"inference.networking.k8s.io"}, Resources: []string{"inferencepools"}, Verbs: []string{"get"}}
	svcGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get"}}
	open := func(kubeconfig string) *Router {
		g, err := New(Config{Kubeconfig: kubeconfig, Namespace: r.ns, Routes: testRoutes, Services: svcs, Classes: testClasses, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	_, err := open(bind("routes-only", routes)).Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot be read") || !strings.Contains(err.Error(), "get on inferencepools.inference.networking.k8s.io") || errors.Is(err, router.ErrRouterUnreachable) {
		t.Fatalf("without get on inferencepools: %v", err)
	}
	t.Logf("without pools: %v", err)
	kc := bind("no-services", routes, pools)
	r.k.WaitAllowed(t, r.ns, "no-services", nil, "get", "inference.networking.k8s.io", "inferencepools", "")
	_, err = open(kc).Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "its endpoint picker, Service") || !strings.Contains(err.Error(), "get on services") {
		t.Fatalf("without get on services: %v", err)
	}
	t.Logf("without services: %v", err)
	kc = bind("enough", routes, pools, svcGet)
	r.k.WaitAllowed(t, r.ns, "enough", nil, "get", "", "services", "")
	if _, err := open(kc).Read(ctx); err != nil {
		t.Fatalf("with get on routes, pools and services: %v", err)
	}
}

// A route over one region of each kind: an InferencePool, a Service, a ServiceImport and an
// InferencePoolImport. Each backendRef is matched by its group, kind, name and (for the kinds
// with ports) port; drain, withdraw and back write each with its own group and kind; a
// backendRef of a kind or group no region has is refused.
func TestGatewayAPIMixedTargets(t *testing.T) {
	r := newKubeRig(t)
	svcs := mixedServices()
	r.startWith(t, svcs)
	ctx := testbed.Ctx(t)
	g := r.driverWith(t, svcs)
	rs, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(testStart, rs); len(d) > 0 {
		t.Fatalf("read: %v", d)
	}
	// drain the ServiceImport, withdraw the pool import
	want := testStart.Clone()
	want.Weights["global"] = map[string]int{"us-east-1": 0, "eu-west-1": 100, "ap-southeast-1": 0}
	want.States.Set("global", "us-east-1", router.Drain)
	want.States.Set("global", "ap-southeast-1", router.Maint)
	if err := g.ApplyIf(ctx, want, v, noFence); err != nil {
		t.Fatal(err)
	}
	if got := typedRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{gie + "pool-eu-west-1=100", mcs + "vllm-us:8000=0"}) {
		t.Fatalf("global: %v", got)
	}
	back, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := router.Diff(want, back); len(d) > 0 {
		t.Fatalf("read back: %v", d)
	}
	// both back
	want.Weights["global"] = map[string]int{"us-east-1": 30, "eu-west-1": 40, "ap-southeast-1": 30}
	want.States = router.States{}
	if err := g.ApplyIf(ctx, want, v, noFence); err != nil {
		t.Fatal(err)
	}
	if got := typedRefs(t, r.get(t, "route-global")); !slices.Equal(got, []string{gie + "pool-eu-west-1=40", giex + "pool-ap=30", mcs + "vllm-us:8000=30"}) {
		t.Fatalf("global: %v", got)
	}
	if got := typedRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{"Service svc-eu-central-1:8000=50", gie + "pool-eu-west-1=50"}) {
		t.Fatalf("eu-only: %v", got)
	}
	if back, err = g.Read(ctx); err != nil || len(router.Diff(want, back)) > 0 {
		t.Fatalf("read back: %v %v", err, router.Diff(want, back))
	}

	// what no region has: refused (topology), the route left as it is
	poolRef := map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool-eu-west-1", "weight": int64(50)}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(poolRef)
		m[k] = v
		return m
	}
	svcRef := map[string]any{"name": "svc-eu-central-1", "port": int64(8000), "weight": int64(50)}
	for _, c := range []struct {
		name string
		refs []any
		want string
	}{
		{"pool-as-service", []any{map[string]any{"kind": "Service", "name": "pool-eu-west-1", "port": int64(8000)}, svcRef}, "is pool-eu-west-1:8000, no region's backend"},
		{"pool-old-group", []any{with("group", "inference.networking.x-k8s.io"), svcRef}, `is a backend of kind InferencePool (group "inference.networking.x-k8s.io"), not a Service, ServiceImport, InferencePool or InferencePoolImport`},
		{"pool-no-group", []any{with("group", ""), svcRef}, `is a backend of kind InferencePool (group ""), not a Service`},
		{"other-pool", []any{with("name", "pool-elsewhere"), svcRef}, "is InferencePool pool-elsewhere, no region's backend"},
		{"other-namespace", []any{with("namespace", "elsewhere"), svcRef}, "is InferencePool elsewhere/pool-eu-west-1, no region's backend"},
		{"service-import-port", []any{poolRef, map[string]any{"group": "multicluster.x-k8s.io", "kind": "ServiceImport", "name": "vllm-us", "port": int64(9000)}}, "is ServiceImport vllm-us:9000, no region's backend"},
		{"ineligible-import", []any{poolRef, svcRef, map[string]any{"group": "inference.networking.x-k8s.io", "kind": "InferencePoolImport", "name": "pool-ap", "weight": int64(0)}}, "region ap-southeast-1's InferencePoolImport, which class eu-only must never reach"},
		{"two-refs", []any{poolRef, with("port", int64(8000)), svcRef}, "both region eu-west-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := r.route("route-"+c.name, "eu-only", testStart)
			unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"backendRefs": c.refs}}, "spec", "rules")
			created := r.create(t, obj)
			g, err := NewForCluster(Config{Namespace: r.ns, Routes: map[string]string{"eu-only": created.GetName()}, Services: svcs, Classes: euOnly},
				kubeclient.FromREST(r.k.RESTConfig(), r.ns, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Read(ctx)
			if !errors.Is(err, router.ErrRouterTopology) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("read: %v, want ErrRouterTopology and %q", err, c.want)
			}
			t.Logf("%s: %v", c.name, err)
			err = g.ApplyIf(ctx, router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 100, "eu-central-1": 0}}}, router.RouterVersion{"eu-only": created.GetResourceVersion()}, noFence)
			if !errors.Is(err, router.ErrRouterTopology) {
				t.Fatalf("write: %v", err)
			}
			if rv := r.get(t, created.GetName()).GetResourceVersion(); rv != created.GetResourceVersion() {
				t.Fatalf("refused route written: %s → %s", created.GetResourceVersion(), rv)
			}
		})
	}
}

// Another client edits a pool route between this run's read and its write: 409, ErrRouterConflict,
// the other client's content kept.
func TestGatewayAPIPoolConflict(t *testing.T) {
	r := newKubeRig(t)
	svcs := poolServices()
	r.startWith(t, svcs)
	ctx := testbed.Ctx(t)
	g := r.driverWith(t, svcs)
	_, v, err := g.ReadVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = g.ApplyIf(ctx, router.RouterState{Weights: router.Weights{"eu-only": {"eu-west-1": 0, "eu-central-1": 100}}}, v, func() error {
		r.edit(t, "route-eu", func(rule map[string]any) {
			for _, b := range rule["backendRefs"].([]any) {
				b.(map[string]any)["weight"] = int64(7)
			}
		})
		return nil
	})
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("write after another's: %v, want ErrRouterConflict", err)
	}
	if got := typedRefs(t, r.get(t, "route-eu")); !slices.Equal(got, []string{gie + "pool-eu-central-1=7", gie + "pool-eu-west-1=7"}) {
		t.Fatalf("the other client's write was overwritten: %v", got)
	}
}

// What the pools' and imports' controllers write on their status is in the notes, with each
// pool's selector and endpoint picker.
func TestGatewayAPIPoolConditionsReported(t *testing.T) {
	r := newKubeRig(t)
	svcs := mixedServices()
	r.startWith(t, svcs)
	ctx := testbed.Ctx(t)
	g := r.driverWith(t, svcs)
	if _, err := g.Read(ctx); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(g.Notes(), "\n")
	for _, want := range []string{
		"region eu-west-1: inferencepool " + r.ns + "/pool-eu-west-1: selector app=pool-eu-west-1; endpoint picker Service pool-eu-west-1-epp:9002 (failureMode FailClose)",
		"region eu-west-1: inferencepool " + r.ns + "/pool-eu-west-1: no gateway controller has reported on it",
		"region ap-southeast-1: inferencepoolimport " + r.ns + "/pool-ap: no controller has reported on it",
		"class eu-only: httproute " + r.ns + "/route-eu: no gateway controller has reported on it",
	} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes:\n%s\nwant:\n%s", notes, want)
		}
	}
	// the controllers report, through the status subresource
	cond := func(typ, status, reason, msg string, gen int64) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "observedGeneration": gen, "lastTransitionTime": "2026-01-01T00:00:00Z"}
	}
	pool, err := r.dyn.Resource(InferencePools).Namespace(r.ns).Get(ctx, "pool-eu-west-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedSlice(pool.Object, []any{map[string]any{
		"parentRef":      map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"},
		"controllerName": "example.com/gateway-controller",
		"conditions": []any{
			cond("ResolvedRefs", "False", "InvalidExtensionRef", "endpoint picker pool-eu-west-1-epp has no ready endpoint", pool.GetGeneration()),
			cond("Accepted", "True", "Accepted", "", pool.GetGeneration()),
		},
	}}, "status", "parents")
	if _, err := r.dyn.Resource(InferencePools).Namespace(r.ns).UpdateStatus(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	imp, err := r.dyn.Resource(InferencePoolImports).Namespace(r.ns).Get(ctx, "pool-ap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedSlice(imp.Object, []any{map[string]any{
		"name":              "example.com/mcs-controller",
		"conditions":        []any{cond("Accepted", "True", "Accepted", "", imp.GetGeneration())},
		"exportingClusters": []any{map[string]any{"name": "ap-cluster-1"}},
		"parents": []any{map[string]any{
			"parentRef":      map[string]any{"name": "gw"},
			"controllerName": "example.com/gateway-controller",
			"conditions":     []any{cond("Accepted", "False", "NotSupported", "no cross-cluster routing", imp.GetGeneration())},
		}},
	}}, "status", "controllers")
	if _, err := r.dyn.Resource(InferencePoolImports).Namespace(r.ns).UpdateStatus(ctx, imp, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Read(ctx); err != nil {
		t.Fatal(err)
	}
	notes = strings.Join(g.Notes(), "\n")
	for _, want := range []string{
		"region eu-west-1: inferencepool " + r.ns + "/pool-eu-west-1: gateway gw (example.com/gateway-controller): Accepted=True, ResolvedRefs=False (InvalidExtensionRef: endpoint picker pool-eu-west-1-epp has no ready endpoint)",
		"region ap-southeast-1: inferencepoolimport " + r.ns + "/pool-ap: controller example.com/mcs-controller: Accepted=True; exported by ap-cluster-1",
		"region ap-southeast-1: inferencepoolimport " + r.ns + "/pool-ap: controller example.com/mcs-controller: gateway gw (example.com/gateway-controller): Accepted=False (NotSupported: no cross-cluster routing)",
	} {
		if !strings.Contains(notes, want) {
			t.Fatalf("notes:\n%s\nwant:\n%s", notes, want)
		}
	}
	if strings.Contains(notes, "pool-eu-west-1: no gateway controller") {
		t.Fatalf("stale note:\n%s", notes)
	}
	t.Logf("notes:\n%s", notes)
}
