package gatewayapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"lifeboat/fleet/router"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/providers"
)

// Driver is the driver's name in a fleet file (router.driver).
const Driver = "gateway-api"

// HTTPRoutes is the resource the driver reads and updates.
var HTTPRoutes = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// FieldManager names Lifeboat's writes in the routes' managedFields.
const FieldManager = "lifeboat"

// MaxWeight is the Gateway API's largest backendRef weight.
const MaxWeight = 1_000_000

// The kinds a region's backend may be: a backendRef's group and kind, the resource the driver
// reads for it, and whether its backendRef carries a port.
const (
	KindService             = "Service"
	KindServiceImport       = "ServiceImport"
	KindInferencePool       = "InferencePool"
	KindInferencePoolImport = "InferencePoolImport"
)

type kindInfo struct {
	gvr   schema.GroupVersionResource
	ports bool // its backendRef needs a port (a Service's or ServiceImport's); a pool's has none
}

var kinds = map[string]kindInfo{
	KindService:             {schema.GroupVersionResource{Group: "", Version: "v1", Resource: "services"}, true},
	KindServiceImport:       {schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}, true},
	KindInferencePool:       {InferencePools, false},
	KindInferencePoolImport: {InferencePoolImports, false},
}

// Kinds is the backend kinds a region may have, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(kinds)) }

// KindGroup is kind's API group ("" for a Service, the core group), and whether kind is one of Kinds.
func KindGroup(kind string) (string, bool) {
	k, ok := kinds[kind]
	return k.gvr.Group, ok
}

// KindHasPort says whether a backendRef to kind carries a port (Service, ServiceImport).
func KindHasPort(kind string) bool { return kinds[kind].ports }

// InferencePools and InferencePoolImports are the Gateway API Inference Extension's resources
// the driver reads for a region whose backend is a pool or a pool's import.
var (
	InferencePools       = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}
	InferencePoolImports = schema.GroupVersionResource{Group: "inference.networking.x-k8s.io", Version: "v1alpha1", Resource: "inferencepoolimports"}
	services             = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// Backend is a region's backend: the object (a Service port, a ServiceImport port, an
// InferencePool or an InferencePoolImport) whose backendRef carries a class's traffic to it.
type Backend struct {
	Kind      string // "" is a Service
	Namespace string // "" is the route's namespace
	Name      string
	Port      int // a Service's or ServiceImport's; 0 for a pool
}

// kind is b's kind, "" read as Service.
func (b Backend) kind() string {
	if b.Kind == "" {
		return KindService
	}
	return b.Kind
}

// key is b as the driver compares backends in namespace ns (the routes'): the kind spelled
// out, the namespace "" when it is ns, no port for a kind without one.
func (b Backend) key(ns string) Backend {
	b.Kind = b.kind()
	if b.Namespace == ns {
		b.Namespace = ""
	}
	if !KindHasPort(b.Kind) {
		b.Port = 0
	}
	return b
}

// String is "[namespace/]name:port" for a Service (the fleet's string form), else the kind
// before it: "InferencePool [namespace/]name", "ServiceImport [namespace/]name:port".
func (b Backend) String() string {
	s := b.Name
	if b.Namespace != "" {
		s = b.Namespace + "/" + s
	}
	if KindHasPort(b.kind()) || b.Port != 0 {
		s += ":" + strconv.Itoa(b.Port)
	}
	if b.kind() != KindService {
		s = b.kind() + " " + s
	}
	return s
}

// ParseBackend reads a Service port: "[namespace/]service:port".
func ParseBackend(s string) (Backend, error) {
	var b Backend
	rest := s
	if ns, r, ok := strings.Cut(s, "/"); ok {
		if !dnsLabel(ns) {
			return b, fmt.Errorf("%q: namespace %q is not a DNS label", s, ns)
		}
		b.Namespace, rest = ns, r
	}
	name, port, ok := strings.Cut(rest, ":")
	if !ok {
		return b, fmt.Errorf("%q: want [namespace/]service:port", s)
	}
	if !dnsLabel(name) {
		return b, fmt.Errorf("%q: service %q is not a DNS label (lower-case letters, digits, '-'; at most 63)", s, name)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return b, fmt.Errorf("%q: port %q is not 1-65535", s, port)
	}
	b.Name, b.Port = name, p
	return b, nil
}

// dnsSubdomain: an object name that is a DNS subdomain (lower-case letters, digits, '-', '.';
// at most 253), as an InferencePool's or an import's name may be.
func dnsSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !dnsLabel(l) {
			return false
		}
	}
	return true
}

func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Config is the driver's part of a fleet.
type Config struct {
	Kubeconfig string // "" is $KUBECONFIG, ~/.kube/config, then the pod's service account
	Context    string // "" is the kubeconfig's current context
	Namespace  string // of the HTTPRoutes; "" is the context's namespace
	// Routes is, per tenant class, its HTTPRoute's name (router.backends).
	Routes map[string]string
	// Services is, per region, its backend (router.services or router.targets): a Service, a
	// ServiceImport, an InferencePool or an InferencePoolImport.
	Services map[string]Backend
	// Classes is each class's eligible regions (the fleet's tenants).
	Classes map[string][]string
	Timeout time.Duration
}

// Router is the driver.
type Router struct {
	cfg       Config
	namespace string
	server    string
	routes    dynamic.ResourceInterface
	dyn       dynamic.Interface // the pools, the imports and the endpoint pickers' Services
	// Attempts is how often the unconditional Apply re-reads after a conflict (0: 3). The
	// executor's ApplyIf never does.
	Attempts int

	mu sync.Mutex
	// seen is each class's route at the last few versions this run read or wrote back (newest
	// last): ApplyIf writes on the one whose resourceVersion the executor says it saw, which may
	// be older than the last read when a controller's status report came between.
	seen map[string][]*unstructured.Unstructured
	// notes is what the gateway controllers report on each class's route.
	notes map[string][]string
	// poolNotes is what the last read found of each pool and import (its selector, endpoint
	// picker and status conditions).
	poolNotes []string
}

// Compile-time capability checks.
var (
	_ router.ConditionalDriver = (*Router)(nil)
	_ router.ZeroDrainDriver   = (*Router)(nil)
	_ router.NotingDriver      = (*Router)(nil)
)

// New opens the cluster cfg names (contacting nothing yet).
func New(cfg Config) (*Router, error) {
	c, err := kubeclient.Open(kubeclient.Config{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context, Timeout: cfg.Timeout})
	if err != nil {
		return nil, err
	}
	return NewForCluster(cfg, c)
}

// NewForCluster is New on an opened cluster.
func NewForCluster(cfg Config, c *kubeclient.Cluster) (*Router, error) {
	ns := cfg.Namespace
	if ns == "" {
		ns = c.Namespace
	}
	dc, err := dynamic.NewForConfig(c.REST)
	if err != nil {
		return nil, fmt.Errorf("gateway-api: %s", kubeclient.Message(err))
	}
	for _, class := range slices.Sorted(maps.Keys(cfg.Classes)) {
		if cfg.Routes[class] == "" {
			return nil, fmt.Errorf("gateway-api: class %s has no HTTPRoute (router.backends.%s)", class, class)
		}
		for _, r := range cfg.Classes[class] {
			if _, ok := cfg.Services[r]; !ok {
				return nil, fmt.Errorf("gateway-api: region %s (of class %s) has no backend (router.services.%s)", r, class, r)
			}
		}
	}
	seen := map[Backend]string{}
	for _, r := range slices.Sorted(maps.Keys(cfg.Services)) {
		b := cfg.Services[r]
		if _, ok := kinds[b.kind()]; !ok {
			return nil, fmt.Errorf("gateway-api: region %s: backend kind %q is not one of %s (router.services.%s)", r, b.Kind, strings.Join(Kinds(), ", "), r)
		}
		if b.Name == "" || (KindHasPort(b.kind()) && (b.Port < 1 || b.Port > 65535)) {
			return nil, fmt.Errorf("gateway-api: region %s: backend %s has no name or no port (router.services.%s)", r, b, r)
		}
		b = b.key(ns)
		if other, dup := seen[b]; dup {
			return nil, fmt.Errorf("gateway-api: regions %s and %s have the same backend %s (router.services): a route could not tell them apart", other, r, b)
		}
		seen[b] = r
	}
	return &Router{cfg: cfg, namespace: ns, server: c.Server, routes: dc.Resource(HTTPRoutes).Namespace(ns), dyn: dc,
		seen: map[string][]*unstructured.Unstructured{}, notes: map[string][]string{}}, nil
}

func (g *Router) String() string { return "gateway-api:" + g.server + "/namespaces/" + g.namespace }

// MaxWeight is the Gateway API's bound on a backendRef weight.
func (g *Router) MaxWeight() int { return MaxWeight }

// ZeroWeightIsDrain: a backendRef kept with weight 0 is the drain.
func (g *Router) ZeroWeightIsDrain() bool { return true }

// Notes is what the gateway controllers last reported on each class's route (its parents'
// Accepted and ResolvedRefs conditions), one line per class and parent, sorted; then, per region
// whose backend is an InferencePool or an InferencePoolImport, what the last read found of it:
// the pool's selector and endpoint picker, and the status conditions its controllers wrote.
func (g *Router) Notes() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range slices.Sorted(maps.Keys(g.notes)) {
		out = append(out, g.notes[c]...)
	}
	return append(out, g.poolNotes...)
}

func (g *Router) route(class string) (string, error) {
	name, ok := g.cfg.Routes[class]
	if !ok || name == "" {
		return "", fmt.Errorf("gateway-api: class %s has no HTTPRoute (router.backends)", class)
	}
	return name, nil
}

// kerr turns a client-go error into one of the router's: unreachable (unreachable) when the API
// server did not answer, a conflict on 409, else a content or permission problem.
func (g *Router) kerr(ctx context.Context, verb, name string, err error) error {
	what := fmt.Sprintf("gateway-api %s httproute %s/%s", verb, g.namespace, name)
	switch {
	case kubeclient.Canceled(ctx, err):
		return fmt.Errorf("%s: %w", what, context.Canceled)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s: 409 Conflict: the route changed since this run last read or wrote it back (someone else edited it); nothing overwritten: %w", what, router.ErrRouterConflict)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: not found (is the HTTPRoute created, in namespace %s, and are the Gateway API CRDs installed?)", what, g.namespace)
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: %s (the driver needs get, list, watch, update and patch on httproutes.gateway.networking.k8s.io)", what, kubeclient.Message(err))
	case !kubeclient.Answered(err):
		return fmt.Errorf("%s: %s: %w", what, kubeclient.Message(err), router.ErrRouterUnreachable)
	}
	return fmt.Errorf("%s: %s", what, kubeclient.Message(err))
}

func (g *Router) get(ctx context.Context, class string) (*unstructured.Unstructured, error) {
	name, err := g.route(class)
	if err != nil {
		return nil, err
	}
	obj, err := g.routes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, g.kerr(ctx, "get", name, err)
	}
	return obj, nil
}

// getAll GETs the routes of classes all at once (each route is its own object, and one
// round trip per route in turn was most of a step's time), and returns them in the same order;
// the first error by class order is returned.
func (g *Router) getAll(ctx context.Context, classes []string) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(classes))
	errs := make([]error, len(classes))
	var wg sync.WaitGroup
	for i, class := range classes {
		wg.Go(func() { objs[i], errs[i] = g.get(ctx, class) })
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		return nil, err
	}
	return objs, nil
}

// firstErr is the first non-nil error of errs, or nil.
func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Read returns every class's backend weights and states.
func (g *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := g.ReadVersion(ctx)
	return rs, err
}

// ReadVersion is Read with each route's resourceVersion.
func (g *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	classes := slices.Sorted(maps.Keys(g.cfg.Routes))
	objs, err := g.getAll(ctx, classes)
	if err != nil {
		return rs, nil, err
	}
	for i, class := range classes {
		obj := objs[i]
		w, st, err := g.parse(class, obj)
		if err != nil {
			return rs, nil, err
		}
		rs.Weights[class], v[class] = w, obj.GetResourceVersion()
		for r, s := range st {
			rs.States.Set(class, r, s)
		}
		g.remember(class, obj)
	}
	notes, err := g.checkPools(ctx)
	if err != nil {
		return rs, nil, err
	}
	g.mu.Lock()
	g.poolNotes = notes
	g.mu.Unlock()
	return rs, v, nil
}

func (g *Router) remember(class string, obj *unstructured.Unstructured) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if seen := g.seen[class]; len(seen) == 0 || seen[len(seen)-1].GetResourceVersion() != obj.GetResourceVersion() {
		g.seen[class] = append(seen[max(0, len(seen)-maxSeen+1):], obj)
	}
	g.notes[class] = conditions(class, obj)
}

// ref is one backendRef as read.
type ref struct {
	region string
	weight int
	m      map[string]any
}

// refs reads the route's one rule and its backendRefs, refusing what it cannot map.
func (g *Router) refs(class string, obj *unstructured.Unstructured) (rule map[string]any, out []ref, err error) {
	at := fmt.Sprintf("gateway-api: httproute %s/%s of class %s", g.namespace, obj.GetName(), class)
	topo := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: %s; Lifeboat manages a route of one rule whose backendRefs are the class's regions' backends (router.services), no more", at, router.ErrRouterTopology, fmt.Sprintf(format, args...))
	}
	rules, found, err := unstructured.NestedSlice(obj.Object, "spec", "rules")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: spec.rules: %v", at, err)
	}
	switch {
	case !found || len(rules) == 0:
		return nil, nil, fmt.Errorf("%s: spec.rules: none; give it one rule (its backendRefs are set by Lifeboat)", at)
	case len(rules) > 1:
		return nil, nil, topo("spec.rules has %d rules: a second rule's backends could carry the class anywhere", len(rules))
	}
	rule, ok := rules[0].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%s: spec.rules[0]: not an object", at)
	}
	fs, _ := rule["filters"].([]any)
	for i, f := range fs {
		fm, _ := f.(map[string]any)
		switch t, _ := fm["type"].(string); t {
		case "RequestHeaderModifier", "ResponseHeaderModifier", "URLRewrite", "CORS":
		case "RequestMirror":
			return nil, nil, topo("spec.rules[0].filters[%d] mirrors requests to %s", i, mirrorTarget(fm))
		case "RequestRedirect":
			return nil, nil, topo("spec.rules[0].filters[%d] redirects requests elsewhere", i)
		default:
			return nil, nil, topo("spec.rules[0].filters[%d] is %q, which may send requests where Lifeboat cannot see", i, providers.Sanitize(t, 60))
		}
	}
	brs, _ := rule["backendRefs"].([]any)
	seen := map[string]int{}
	for i, b := range brs {
		bm, ok := b.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: spec.rules[0].backendRefs[%d]: not an object", at, i)
		}
		group, _ := bm["group"].(string)
		kind, _ := bm["kind"].(string)
		name, _ := bm["name"].(string)
		ns, _ := bm["namespace"].(string)
		if kind == "" {
			kind = KindService // the Gateway API's default
		}
		if kg, known := KindGroup(kind); !known || kg != group {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is a backend of kind %s (group %q), not a Service, ServiceImport, InferencePool or InferencePoolImport", i, providers.Sanitize(kind, 60), providers.Sanitize(group, 60))
		}
		if fl, _ := bm["filters"].([]any); len(fl) > 0 {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] (%s) has filters of its own", i, providers.Sanitize(name, 63))
		}
		port, _ := number(bm["port"])
		b := Backend{Kind: kind, Namespace: ns, Name: name, Port: int(port)}.key(g.namespace)
		region, ok := g.regionOf(b)
		if !ok {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is %s, no region's backend (router.services)", i, providers.Sanitize(b.String(), 140))
		}
		if j, dup := seen[region]; dup {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] and [%d] are both region %s", j, i, region)
		}
		if elig, known := g.cfg.Classes[class]; known && !slices.Contains(elig, region) {
			// a hand edit put an ineligible region's Service into the class's route: whatever its
			// weight (0 is a drain, still reachable), the route breaks residency
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is %s, region %s's %s, which class %s must never reach (its regions: %s)",
				i, providers.Sanitize(b.String(), 140), region, kind, class, strings.Join(elig, ", "))
		}
		seen[region] = i
		w := int64(1) // the Gateway API's default
		if raw, ok := bm["weight"]; ok {
			if w, ok = number(raw); !ok || w < 0 || w > MaxWeight {
				return nil, nil, fmt.Errorf("%s: spec.rules[0].backendRefs[%d].weight: %v is not 0-%d", at, i, raw, MaxWeight)
			}
		}
		out = append(out, ref{region: region, weight: int(w), m: bm})
	}
	return rule, out, nil
}

// backendRef is a new backendRef to b from a route in namespace ns: group and kind, name, the
// namespace when it is another, the port when the kind has one.
func backendRef(b Backend, ns string) map[string]any {
	m := map[string]any{"kind": b.kind(), "name": b.Name}
	if group, _ := KindGroup(b.kind()); group != "" {
		m["group"] = group
	}
	if KindHasPort(b.kind()) {
		m["port"] = int64(b.Port)
	}
	if b.Namespace != "" && b.Namespace != ns {
		m["namespace"] = b.Namespace
	}
	return m
}

func mirrorTarget(f map[string]any) string {
	rm, _ := f["requestMirror"].(map[string]any)
	br, _ := rm["backendRef"].(map[string]any)
	name, _ := br["name"].(string)
	if name == "" {
		return "another backend"
	}
	return providers.Sanitize(name, 63)
}

func number(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	}
	return 0, false
}

// regionOf is the region whose backend is b (compared by kind, namespace, name and, for a kind
// with ports, port).
func (g *Router) regionOf(b Backend) (string, bool) {
	b = b.key(g.namespace)
	for r, s := range g.cfg.Services {
		if s.key(g.namespace) == b {
			return r, true
		}
	}
	return "", false
}

// parse is a class's weights and states as its route holds them.
func (g *Router) parse(class string, obj *unstructured.Unstructured) (map[string]int, map[string]router.State, error) {
	_, refs, err := g.refs(class, obj)
	if err != nil {
		return nil, nil, err
	}
	w, st := map[string]int{}, map[string]router.State{}
	for _, r := range refs {
		w[r.region] = r.weight
		if r.weight == 0 {
			st[r.region] = router.Drain
		}
	}
	for _, r := range g.cfg.Classes[class] {
		if _, ok := w[r]; !ok {
			w[r], st[r] = 0, router.Maint // no backendRef: receives nothing
		}
	}
	return w, st, nil
}

// rewrite is obj with its rule's backendRefs set to desired's for class: a ready region keeps
// (or gets) its backendRef with its weight, a drained one keeps it with weight 0, a withdrawn
// one loses it. Kept backendRefs keep their position and fields; new ones follow, sorted.
func (g *Router) rewrite(class string, obj *unstructured.Unstructured, desired router.RouterState) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	rule, refs, err := g.refs(class, out)
	if err != nil {
		return nil, err
	}
	want := desired.Weights[class]
	weight := func(r string) (int, bool) {
		st := desired.States.Get(class, r)
		if _, ok := want[r]; !ok || st == router.Maint {
			return 0, false
		}
		if st == router.Drain {
			return 0, true
		}
		return want[r], true
	}
	var brs []any
	placed := map[string]bool{}
	for _, r := range refs {
		if w, keep := weight(r.region); keep {
			r.m["weight"] = int64(w)
			brs = append(brs, r.m)
			placed[r.region] = true
		}
	}
	for _, r := range slices.Sorted(maps.Keys(want)) {
		w, keep := weight(r)
		if !keep || placed[r] {
			continue
		}
		b, ok := g.cfg.Services[r]
		if !ok {
			return nil, fmt.Errorf("gateway-api: httproute %s/%s of class %s: region %s has no backend (router.services.%s)", g.namespace, obj.GetName(), class, r, r)
		}
		m := backendRef(b, g.namespace)
		m["weight"] = int64(w)
		brs = append(brs, m)
	}
	if len(brs) == 0 {
		return nil, fmt.Errorf("gateway-api: class %s would have no backendRef left in httproute %s/%s (the gateway would answer 500): refused", class, g.namespace, obj.GetName())
	}
	for _, w := range want {
		if w < 0 || w > MaxWeight {
			return nil, fmt.Errorf("gateway-api: httproute %s/%s of class %s: weight %d is not 0-%d", g.namespace, obj.GetName(), class, w, MaxWeight)
		}
	}
	rule["backendRefs"] = brs
	if err := unstructured.SetNestedSlice(out.Object, []any{rule}, "spec", "rules"); err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyIf updates each class's route on the resourceVersion this run last saw (since): the API
// server refuses with 409 a route changed since, which is router.ErrRouterConflict — nothing
// overwritten, never re-read and retried — unless all that changed is the route's status (a
// gateway controller reporting its conditions, which moves the resourceVersion too): then the
// write is sent once more on the route as it is now (retryAfterStatus). fence runs immediately
// before each update.
func (g *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		want, ok := since[class]
		if !ok {
			return fmt.Errorf("%s: class %s: httproute %s/%s: this run has not read it back, so it cannot write it conditionally: %w", g, class, g.namespace, g.cfg.Routes[class], router.ErrRouterConflict)
		}
		g.mu.Lock()
		var base *unstructured.Unstructured
		for _, o := range g.seen[class] {
			if o.GetResourceVersion() == want {
				base = o
			}
		}
		g.mu.Unlock()
		if base == nil {
			// what this run saw is not at hand: read it, and write only if it is still that
			obj, err := g.get(ctx, class)
			if err != nil {
				return err
			}
			if obj.GetResourceVersion() != want {
				return fmt.Errorf("%s: class %s: httproute %s/%s is at resourceVersion %s, not %s as this run last read it back (someone else edited it); nothing overwritten: %w", g, class, g.namespace, obj.GetName(), obj.GetResourceVersion(), want, router.ErrRouterConflict)
			}
			base = obj
		}
		next, err := g.rewrite(class, base, desired)
		if err != nil {
			return err
		}
		next.SetResourceVersion(want) // the compare-and-swap
		if err := fence(); err != nil {
			return err
		}
		err = g.update(ctx, class, next)
		if errors.Is(err, router.ErrRouterConflict) {
			err = g.retryAfterStatus(ctx, class, base, desired, fence, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lastSeen is the route of class as this driver last read or wrote it back, nil if none.
func (g *Router) lastSeen(class string) *unstructured.Unstructured {
	g.mu.Lock()
	defer g.mu.Unlock()
	if seen := g.seen[class]; len(seen) > 0 {
		return seen[len(seen)-1]
	}
	return nil
}

// maxSeen bounds Router.seen per class.
const maxSeen = 8

// retryAfterStatus handles a 409 on a write conditional on base: a gateway controller writing
// its conditions on the route's status (as every one does after each change of the spec) moves
// the route's resourceVersion without changing anything this run read. When the route as read
// now holds exactly what base held — spec, generation, labels, annotations and the rest of its
// metadata, everything but status, resourceVersion and managedFields — the write is sent once
// more, conditional on the route as read now; any other difference is the conflict (conflict).
func (g *Router) retryAfterStatus(ctx context.Context, class string, base *unstructured.Unstructured, desired router.RouterState, fence func() error, conflict error) error {
	obj, err := g.get(ctx, class)
	if err != nil || !sameButStatus(base, obj) {
		return conflict
	}
	next, err := g.rewrite(class, obj, desired)
	if err != nil {
		return err
	}
	if err := fence(); err != nil {
		return err
	}
	return g.update(ctx, class, next)
}

// sameButStatus: a and b differ at most in status, resourceVersion and managedFields.
func sameButStatus(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		delete(c.Object, "status")
		unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		return c.Object
	}
	return a.GetGeneration() == b.GetGeneration() && reflect.DeepEqual(strip(a), strip(b))
}

func (g *Router) update(ctx context.Context, class string, obj *unstructured.Unstructured) error {
	got, err := g.routes.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return g.kerr(ctx, "update", obj.GetName(), err)
	}
	g.remember(class, got)
	return nil
}

// Apply sets desired whatever the routes hold: each update is conditional on the route as this
// driver last read or wrote it (no GET first: one round trip a class instead of two), and a
// conflict — a route changed since, or none read yet — reads it and tries again (Attempts
// times). The executor writes with ApplyIf.
func (g *Router) Apply(ctx context.Context, desired router.RouterState) error {
	attempts := g.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	// Each class's route is its own object, updated on its own resourceVersion: the classes go
	// at once (the first error by class order is returned, as one class after another would).
	classes := slices.Sorted(maps.Keys(desired.Weights))
	errs := make([]error, len(classes))
	var wg sync.WaitGroup
	for i, class := range classes {
		wg.Go(func() {
			var err error
			for attempt := range attempts {
				var obj, next *unstructured.Unstructured
				if attempt == 0 {
					obj = g.lastSeen(class)
				}
				if obj == nil {
					if obj, err = g.get(ctx, class); err != nil {
						break
					}
				}
				if next, err = g.rewrite(class, obj, desired); err != nil {
					break
				}
				if err = g.update(ctx, class, next); !errors.Is(err, router.ErrRouterConflict) {
					break
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return firstErr(errs)
}

// conditions are the Accepted and ResolvedRefs conditions each parent's controller wrote on a
// class's route, as lines; a route no controller reported on says so.
func conditions(class string, obj *unstructured.Unstructured) []string {
	at := fmt.Sprintf("class %s: httproute %s/%s", class, obj.GetNamespace(), obj.GetName())
	parents, _, _ := unstructured.NestedSlice(obj.Object, "status", "parents")
	if len(parents) == 0 {
		return []string{at + ": no gateway controller has reported on it (status.parents is empty): its weights are not known to be in effect"}
	}
	gen := obj.GetGeneration()
	var out []string
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		ctl, _ := pm["controllerName"].(string)
		conds, _ := pm["conditions"].([]any)
		var parts []string
		for _, want := range []string{"Accepted", "ResolvedRefs"} {
			s := want + "=?"
			for _, c := range conds {
				if cm, _ := c.(map[string]any); cm["type"] == want {
					s = condition(cm, gen)
				}
			}
			parts = append(parts, s)
		}
		out = append(out, providers.Sanitize(fmt.Sprintf("%s: gateway %s (%s): %s", at, parentName(pm), ctl, strings.Join(parts, ", ")), 400))
	}
	slices.Sort(out)
	return out
}

// parentName is a status parent's parentRef as "[namespace/]name[/section]".
func parentName(pm map[string]any) string {
	pr, _ := pm["parentRef"].(map[string]any)
	name, _ := pr["name"].(string)
	parent := name
	if ns, _ := pr["namespace"].(string); ns != "" {
		parent = ns + "/" + name
	}
	if sec, _ := pr["sectionName"].(string); sec != "" {
		parent += "/" + sec
	}
	return parent
}

// condition is one status condition as "Type=Status", with its reason and message when it is
// not True and the generation it was written for when that is not the object's.
func condition(cm map[string]any, gen int64) string {
	typ, _ := cm["type"].(string)
	status, _ := cm["status"].(string)
	s := typ + "=" + status
	if status != "True" {
		reason, _ := cm["reason"].(string)
		msg, _ := cm["message"].(string)
		s += " (" + strings.TrimSuffix(reason+": "+msg, ": ") + ")"
	}
	if og, ok := number(cm["observedGeneration"]); ok && og < gen {
		s += fmt.Sprintf(" [for generation %d of %d]", og, gen)
	}
	return s
}

// allConditions is every condition in conds: Accepted and ResolvedRefs first, the others by
// type; "no conditions" when there are none.
func allConditions(conds []any, gen int64) string {
	rank := func(t string) string {
		switch t {
		case "Accepted":
			return "0"
		case "ResolvedRefs":
			return "1"
		}
		return "2" + t
	}
	var cms []map[string]any
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok {
			cms = append(cms, cm)
		}
	}
	slices.SortFunc(cms, func(a, b map[string]any) int {
		ta, _ := a["type"].(string)
		tb, _ := b["type"].(string)
		return strings.Compare(rank(ta), rank(tb))
	})
	var parts []string
	for _, cm := range cms {
		parts = append(parts, condition(cm, gen))
	}
	if len(parts) == 0 {
		return "no conditions"
	}
	return strings.Join(parts, ", ")
}
