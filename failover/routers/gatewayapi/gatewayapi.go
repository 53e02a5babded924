package gatewayapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

// Backend is a region's Service port: the backendRef that carries a class's traffic to it.
type Backend struct {
	Namespace string // "" is the route's namespace
	Name      string
	Port      int
}

func (b Backend) String() string {
	s := b.Name + ":" + strconv.Itoa(b.Port)
	if b.Namespace != "" {
		s = b.Namespace + "/" + s
	}
	return s
}

// ParseBackend reads "[namespace/]service:port".
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
	// Services is, per region, its backend (router.services).
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
	// Attempts is how often the unconditional Apply re-reads after a conflict (0: 3). The
	// executor's ApplyIf never does.
	Attempts int

	mu sync.Mutex
	// last is each class's route as this run last read or wrote it back: ApplyIf writes on it
	// when its resourceVersion is the one the executor says it saw.
	last map[string]*unstructured.Unstructured
	// notes is what the gateway controllers report on each class's route.
	notes map[string][]string
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
				return nil, fmt.Errorf("gateway-api: region %s (of class %s) has no backend Service (router.services.%s)", r, class, r)
			}
		}
	}
	seen := map[Backend]string{}
	for _, r := range slices.Sorted(maps.Keys(cfg.Services)) {
		b := cfg.Services[r]
		if b.Namespace == ns {
			b.Namespace = ""
		}
		if other, dup := seen[b]; dup {
			return nil, fmt.Errorf("gateway-api: regions %s and %s have the same backend %s (router.services): a route could not tell them apart", other, r, b)
		}
		seen[b] = r
	}
	return &Router{cfg: cfg, namespace: ns, server: c.Server, routes: dc.Resource(HTTPRoutes).Namespace(ns),
		last: map[string]*unstructured.Unstructured{}, notes: map[string][]string{}}, nil
}

func (g *Router) String() string { return "gateway-api:" + g.server + "/namespaces/" + g.namespace }

// MaxWeight is the Gateway API's bound on a backendRef weight.
func (g *Router) MaxWeight() int { return MaxWeight }

// ZeroWeightIsDrain: a backendRef kept with weight 0 is the drain.
func (g *Router) ZeroWeightIsDrain() bool { return true }

// Notes is what the gateway controllers last reported on each class's route (its parents'
// Accepted and ResolvedRefs conditions), one line per class and parent, sorted.
func (g *Router) Notes() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range slices.Sorted(maps.Keys(g.notes)) {
		out = append(out, g.notes[c]...)
	}
	return out
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

// Read returns every class's backend weights and states.
func (g *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := g.ReadVersion(ctx)
	return rs, err
}

// ReadVersion is Read with each route's resourceVersion.
func (g *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	for _, class := range slices.Sorted(maps.Keys(g.cfg.Routes)) {
		obj, err := g.get(ctx, class)
		if err != nil {
			return rs, nil, err
		}
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
	return rs, v, nil
}

func (g *Router) remember(class string, obj *unstructured.Unstructured) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.last[class] = obj
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
		return fmt.Errorf("%s: %w: %s; Lifeboat manages a route of one rule whose backendRefs are the class's regions' Services (router.services), no more", at, router.ErrRouterTopology, fmt.Sprintf(format, args...))
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
		if group != "" || (kind != "" && kind != "Service") {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is a %s (group %q), not a Service", i, providers.Sanitize(kind, 60), providers.Sanitize(group, 60))
		}
		if fl, _ := bm["filters"].([]any); len(fl) > 0 {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] (%s) has filters of its own", i, providers.Sanitize(name, 63))
		}
		port, _ := number(bm["port"])
		if ns == g.namespace {
			ns = ""
		}
		region, ok := g.regionOf(Backend{Namespace: ns, Name: name, Port: int(port)})
		if !ok {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is %s, no region's backend (router.services)", i, providers.Sanitize(Backend{Namespace: ns, Name: name, Port: int(port)}.String(), 140))
		}
		if j, dup := seen[region]; dup {
			return nil, nil, topo("spec.rules[0].backendRefs[%d] and [%d] are both region %s", j, i, region)
		}
		if elig, known := g.cfg.Classes[class]; known && !slices.Contains(elig, region) {
			// a hand edit put an ineligible region's Service into the class's route: whatever its
			// weight (0 is a drain, still reachable), the route breaks residency
			return nil, nil, topo("spec.rules[0].backendRefs[%d] is %s, region %s's Service, which class %s must never reach (its regions: %s)",
				i, providers.Sanitize(Backend{Namespace: ns, Name: name, Port: int(port)}.String(), 140), region, class, strings.Join(elig, ", "))
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

func (g *Router) regionOf(b Backend) (string, bool) {
	for r, s := range g.cfg.Services {
		if s.Namespace == g.namespace {
			s.Namespace = ""
		}
		if s == b {
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
			return nil, fmt.Errorf("gateway-api: httproute %s/%s of class %s: region %s has no backend Service (router.services.%s)", g.namespace, obj.GetName(), class, r, r)
		}
		m := map[string]any{"kind": "Service", "name": b.Name, "port": int64(b.Port), "weight": int64(w)}
		if b.Namespace != "" && b.Namespace != g.namespace {
			m["namespace"] = b.Namespace
		}
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
// overwritten, never re-read and retried. fence runs immediately before each update.
func (g *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		want, ok := since[class]
		if !ok {
			return fmt.Errorf("%s: class %s: httproute %s/%s: this run has not read it back, so it cannot write it conditionally: %w", g, class, g.namespace, g.cfg.Routes[class], router.ErrRouterConflict)
		}
		g.mu.Lock()
		base := g.last[class]
		g.mu.Unlock()
		if base == nil || base.GetResourceVersion() != want {
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
		if err := g.update(ctx, class, next); err != nil {
			return err
		}
	}
	return nil
}

func (g *Router) update(ctx context.Context, class string, obj *unstructured.Unstructured) error {
	got, err := g.routes.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return g.kerr(ctx, "update", obj.GetName(), err)
	}
	g.remember(class, got)
	return nil
}

// Apply sets desired whatever the routes hold: each update is conditional on the route just
// read, and a conflict re-reads (Attempts times). The executor writes with ApplyIf.
func (g *Router) Apply(ctx context.Context, desired router.RouterState) error {
	attempts := g.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		var err error
		for range attempts {
			var obj, next *unstructured.Unstructured
			if obj, err = g.get(ctx, class); err != nil {
				return err
			}
			if next, err = g.rewrite(class, obj, desired); err != nil {
				return err
			}
			if err = g.update(ctx, class, next); !errors.Is(err, router.ErrRouterConflict) {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
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
		pr, _ := pm["parentRef"].(map[string]any)
		name, _ := pr["name"].(string)
		parent := name
		if ns, _ := pr["namespace"].(string); ns != "" {
			parent = ns + "/" + name
		}
		if sec, _ := pr["sectionName"].(string); sec != "" {
			parent += "/" + sec
		}
		ctl, _ := pm["controllerName"].(string)
		conds, _ := pm["conditions"].([]any)
		var parts []string
		for _, want := range []string{"Accepted", "ResolvedRefs"} {
			s := want + "=?"
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] != want {
					continue
				}
				status, _ := cm["status"].(string)
				s = want + "=" + status
				if status != "True" {
					reason, _ := cm["reason"].(string)
					msg, _ := cm["message"].(string)
					s += " (" + strings.TrimSuffix(reason+": "+msg, ": ") + ")"
				}
				if og, ok := number(cm["observedGeneration"]); ok && og < gen {
					s += fmt.Sprintf(" [for generation %d of %d]", og, gen)
				}
			}
			parts = append(parts, s)
		}
		out = append(out, providers.Sanitize(fmt.Sprintf("%s: gateway %s (%s): %s", at, parent, ctl, strings.Join(parts, ", ")), 400))
	}
	slices.Sort(out)
	return out
}
