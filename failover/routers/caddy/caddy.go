package caddy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go.yaml.in/yaml/v3"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
	"lifeboat/internal/base/yamlnode"
)

// Router drives Caddy (v2.11+) through its admin API: each tenant class is a route tagged
// "@id" (router.backends) whose reverse_proxy handler uses the weighted_round_robin selection
// policy. Upstreams are the class's regions' endpoints (host:port). A region that must receive
// nothing is not in the upstreams at all (maint); a drained region stays with weight 0, which
// Caddy never selects, so in-flight requests finish. The executor's writes (ApplyIf) are PATCHes
// with If-Match on the Etag this run last wrote or read back: another's edit answers 412
// (ErrRouterConflict), never overwritten.
type Router struct {
	Admin    string              // http://127.0.0.1:2019
	Routes   map[string]string   // class → route @id
	Classes  map[string][]string // class → eligible regions
	Dials    map[string]string   // region → upstream dial address (host:port of its endpoint)
	Timeout  time.Duration
	Client   *http.Client
	Attempts int // conflicts the unconditional Apply retries (re-read, re-apply); 0 means 3
	// AllowNoETag (router.allow_no_etag): a Caddy that sends no Etag is written after comparing
	// the route with this run's last read-back immediately before the PATCH, instead of refused.
	AllowNoETag bool
}

// New builds the driver from a fleet.
func New(f *fleet.Fleet) (*Router, error) {
	cfg, ok := f.Router.Config.(*Config)
	if !ok {
		return nil, fmt.Errorf("%s: router.driver is %q, not caddy", f.File, f.Router.Driver)
	}
	c := &Router{Admin: cfg.URL, Routes: f.Router.Backends, Classes: f.Tenants, Dials: map[string]string{}, Timeout: f.Router.Timeout, AllowNoETag: cfg.AllowNoETag}
	for name, r := range f.Regions {
		if r.Endpoint == "" {
			continue
		}
		u, err := url.Parse(r.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("regions.%s.endpoint: %v", name, err)
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		c.Dials[name] = net.JoinHostPort(host, port)
	}
	return c, nil
}

func (c *Router) String() string { return "caddy:" + c.Admin }

// MaxWeight: Caddy takes any int weight; 1,000,000 keeps it sane.
func (c *Router) MaxWeight() int { return 1_000_000 }

// ZeroWeightIsDrain: Caddy has no drain state; a kept upstream with weight 0 is the drain.
func (c *Router) ZeroWeightIsDrain() bool { return true }

// caddyReadAttempts bounds how often a read is sent again after the connection failed. Caddy
// replaces its admin server on every config change (each of this driver's PATCHes) and stops the
// old one in the background, so a GET sent just after a write can meet a connection reset by the
// server being retired, and so can a write sent right after a read. A read has no effect, so
// sending it again is safe. A conditional write (If-Match) is sent again only when the route still
// answers the Etag it was conditional on (notLanded): then the first did not land, and the second
// is as conditional as the first (should the first land after all, one of the two answers 412:
// nothing is overwritten). Any other failed write stays ErrRouterUnreachable for the executor's
// read-back and resume to settle.
const caddyReadAttempts = 4

// Do sends one request to the admin API and reads its answer, bounded.
func (c *Router) Do(ctx context.Context, method, path, etag string, body []byte) (int, http.Header, []byte, error) {
	to := c.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	var resp *http.Response
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, c.Admin+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, nil, err
		}
		// A fresh connection each time: an idle one may belong to an admin server Caddy retired.
		req.Close = true
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if etag != "" {
			req.Header.Set("If-Match", etag)
		}
		resp, err = router.Client(c.Client).Do(req)
		if err == nil {
			break
		}
		if attempt >= caddyReadAttempts || ctx.Err() != nil || (method != http.MethodGet && !c.notLanded(ctx, method, path, etag)) {
			return 0, nil, nil, fmt.Errorf("caddy %s %s: %v: %w", method, path, err, router.ErrRouterUnreachable)
		}
		if werr := wait.Sleep(ctx, time.Duration(attempt)*50*time.Millisecond); werr != nil {
			return 0, nil, nil, fmt.Errorf("caddy %s %s: %v: %w", method, path, err, router.ErrRouterUnreachable)
		}
	}
	defer resp.Body.Close()
	b, err := router.Answer("caddy "+method+" "+path, resp)
	if err != nil {
		return resp.StatusCode, resp.Header, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// notLanded says whether a conditional PATCH whose connection failed has not landed, so
// that sending it again is safe: the route still answers the Etag the PATCH was conditional on
// (had it landed, the Etag would have moved). The connection of a write can meet the admin
// server Caddy is retiring after the previous write, as a read can. Anything else — no If-Match,
// another method, the route not read back — is not known, and the write is not sent again.
func (c *Router) notLanded(ctx context.Context, method, path, etag string) bool {
	if method != http.MethodPatch || etag == "" {
		return false
	}
	code, h, _, err := c.Do(ctx, http.MethodGet, path, "", nil)
	return err == nil && code == http.StatusOK && h.Get("Etag") == etag
}

// Route fetches a class's route and its ETag.
func (c *Router) Route(ctx context.Context, class string) (map[string]any, string, error) {
	id, ok := c.Routes[class]
	if !ok {
		return nil, "", fmt.Errorf("caddy: class %s has no route (router.backends)", class)
	}
	code, h, b, err := c.Do(ctx, http.MethodGet, "/id/"+url.PathEscape(id), "", nil)
	if err != nil {
		return nil, "", err
	}
	if code != http.StatusOK {
		return nil, "", router.Status("caddy GET /id/"+id, code, b)
	}
	var route map[string]any
	if err := json.Unmarshal(b, &route); err != nil {
		return nil, "", fmt.Errorf("caddy GET /id/%s: %v", id, err)
	}
	etag := h.Get("Etag")
	if etag == "" {
		etag = router.DigestOf(b) // no compare-and-swap: ApplyIf refuses, or compares (AllowNoETag)
	}
	return route, etag, nil
}

// proxyHandler finds the route's reverse_proxy handler.
func ProxyHandler(route map[string]any) (map[string]any, error) {
	hs, _ := route["handle"].([]any)
	for _, h := range hs {
		if m, ok := h.(map[string]any); ok && m["handler"] == "reverse_proxy" {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the route has no reverse_proxy handler")
}

func (c *Router) regionOf(dial string) string {
	for r, d := range c.Dials {
		if d == dial {
			return r
		}
	}
	return "dial:" + dial // not a fleet region: checkTopology refuses it
}

// unseen says what in a route sends traffic to upstreams Lifeboat cannot read: dynamic upstreams
// (SRV or A lookups, multi-source modules), a second reverse_proxy anywhere in the route (in a
// subroute, say), or an upstream that is not one literal host:port. Such a route could carry a
// class to any region whatever its weights say: refused (ErrRouterTopology), not planned on.
func unseen(route map[string]any) []string {
	var why []string
	proxies := 0
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if x["handler"] == "reverse_proxy" {
				proxies++
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if k == "dynamic_upstreams" {
					why = append(why, at+".dynamic_upstreams (upstreams looked up at request time)")
				}
				walk(x[k], at+"."+k)
			}
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s[%d]", at, i))
			}
		}
	}
	walk(route, "route")
	if proxies > 1 {
		why = append(why, fmt.Sprintf("%d reverse_proxy handlers (only one per class route can be read)", proxies))
	}
	if h, err := ProxyHandler(route); err == nil {
		ups, ok := h["upstreams"].([]any)
		if !ok && h["upstreams"] != nil {
			why = append(why, "upstreams is not a list")
		}
		for i, u := range ups {
			m, _ := u.(map[string]any)
			dial, _ := m["dial"].(string)
			_, port, err := net.SplitHostPort(dial)
			switch {
			case m == nil || dial == "":
				why = append(why, fmt.Sprintf("upstream %d has no dial address", i))
			case strings.ContainsAny(dial, "{}") || err != nil || port == "" || strings.ContainsAny(port, "-"):
				why = append(why, fmt.Sprintf("upstream %d dials %q (a placeholder, range or name Lifeboat cannot resolve to one region)", i, dial))
			}
			for k := range m {
				if k != "dial" && k != "max_requests" {
					why = append(why, fmt.Sprintf("upstream %d has %q", i, k))
				}
			}
		}
	}
	return why
}

// fallbacks refuses Caddy's own way to leak: the error routes (handle_errors) of a server that
// holds a class's route. When every upstream of the route fails, Caddy hands the request to the
// server's error routes, and a reverse_proxy there sends the class wherever it points, whatever
// the route's weights say. Such a server is refused (ErrRouterTopology), never half-managed.
func (c *Router) fallbacks(ctx context.Context) error {
	code, _, b, err := c.Do(ctx, http.MethodGet, "/config/apps/http/servers", "", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return router.Status("caddy GET /config/apps/http/servers", code, b)
	}
	var servers map[string]map[string]any
	if err := json.Unmarshal(b, &servers); err != nil {
		return fmt.Errorf("caddy GET /config/apps/http/servers: %v", err)
	}
	ids := map[string]string{} // route id → class
	for class, id := range c.Routes {
		ids[id] = class
	}
	var why []string
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		srv := servers[name]
		var classes []string
		walkJSON(srv["routes"], func(m map[string]any) {
			if id, ok := m["@id"].(string); ok && ids[id] != "" {
				classes = append(classes, ids[id])
			}
		})
		proxies := 0
		walkJSON(srv["errors"], func(m map[string]any) {
			if m["handler"] == "reverse_proxy" {
				proxies++
			}
		})
		if len(classes) > 0 && proxies > 0 {
			slices.Sort(classes)
			why = append(why, fmt.Sprintf("server %s (class %s): its error routes (handle_errors) proxy a failed request to upstreams of their own", name, strings.Join(classes, ", ")))
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("caddy: %w: %s: a fallback that can carry the class to any region when its upstreams fail; remove the reverse_proxy from the server's errors routes", router.ErrRouterTopology, strings.Join(why, "; "))
	}
	return nil
}

// walkJSON calls fn on every object within v (decoded JSON), depth first.
func walkJSON(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, k := range slices.Sorted(maps.Keys(x)) {
			walkJSON(x[k], fn)
		}
	case []any:
		for _, e := range x {
			walkJSON(e, fn)
		}
	}
}

// parse reads a class's upstreams and weights from its route.
func (c *Router) parse(class string, route map[string]any) (map[string]int, map[string]router.State, error) {
	h, err := ProxyHandler(route)
	if err != nil {
		return nil, nil, fmt.Errorf("caddy route %s: %v", c.Routes[class], err)
	}
	if why := unseen(route); len(why) > 0 {
		return nil, nil, fmt.Errorf("caddy route %s of class %s: %w: its upstreams are not all visible to Lifeboat: %s; list them as literal upstreams with weighted_round_robin weights", c.Routes[class], class, router.ErrRouterTopology, strings.Join(why, "; "))
	}
	ups, _ := h["upstreams"].([]any)
	var weights []any
	if lb, ok := h["load_balancing"].(map[string]any); ok {
		if sp, ok := lb["selection_policy"].(map[string]any); ok {
			if sp["policy"] != "weighted_round_robin" {
				return nil, nil, fmt.Errorf("caddy route %s: selection policy %v, want weighted_round_robin", c.Routes[class], sp["policy"])
			}
			weights, _ = sp["weights"].([]any)
		}
	}
	if weights == nil {
		return nil, nil, fmt.Errorf("caddy route %s: no weighted_round_robin weights", c.Routes[class])
	}
	w, st := map[string]int{}, map[string]router.State{}
	for i, u := range ups {
		m, _ := u.(map[string]any)
		dial, _ := m["dial"].(string)
		r := c.regionOf(dial)
		v := 1 // Caddy's default for a missing weight
		if i < len(weights) {
			f, ok := weights[i].(float64)
			if !ok || f < 0 || f != float64(int(f)) {
				return nil, nil, fmt.Errorf("caddy route %s: weight %v", c.Routes[class], weights[i])
			}
			v = int(f)
		}
		w[r] += v
		if v == 0 {
			st[r] = router.Drain
		}
	}
	for _, r := range c.Classes[class] {
		if _, ok := w[r]; !ok {
			w[r] = 0
			st[r] = router.Maint // not an upstream: receives nothing
		}
	}
	return w, st, nil
}

// Read returns every class's upstream weights.
func (c *Router) Read(ctx context.Context) (router.RouterState, error) {
	rs, _, err := c.ReadVersion(ctx)
	return rs, err
}

// ReadVersion returns every class's upstream weights with its route's Etag.
func (c *Router) ReadVersion(ctx context.Context) (router.RouterState, router.RouterVersion, error) {
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	v := router.RouterVersion{}
	if err := c.fallbacks(ctx); err != nil {
		return rs, nil, err
	}
	for _, class := range slices.Sorted(maps.Keys(c.Routes)) {
		route, etag, err := c.Route(ctx, class)
		if err != nil {
			return rs, nil, err
		}
		w, st, err := c.parse(class, route)
		if err != nil {
			return rs, nil, err
		}
		rs.Weights[class], v[class] = w, etag
		for r, s := range st {
			rs.States.Set(class, r, s)
		}
	}
	return rs, v, nil
}

// ApplyIf rewrites each class's route with a PATCH carrying If-Match on the Etag this run last
// saw (since): a route changed since answers 412, ErrRouterConflict, never retried. A Caddy that
// sends no Etag is refused unless AllowNoETag, which compares the route with since right before an
// unconditional PATCH.
func (c *Router) ApplyIf(ctx context.Context, desired router.RouterState, since router.RouterVersion, fence func() error) error {
	if err := c.fallbacks(ctx); err != nil {
		return err
	}
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		route, now, err := c.Route(ctx, class)
		if err != nil {
			return err
		}
		want := since[class]
		ifMatch := want
		if strings.HasPrefix(want, "digest:") {
			if !c.AllowNoETag {
				return fmt.Errorf("caddy GET /id/%s: no Etag, so a write cannot be conditional on what this run saw; refused (router.allow_no_etag: true accepts a compare before each write instead, leaving a window)", c.Routes[class])
			}
			ifMatch = ""
		}
		if err := router.SameVersion(c.String(), class, since, now); err != nil {
			return err
		}
		body, err := c.routeBody(class, route, desired)
		if err != nil {
			return err
		}
		if err := fence(); err != nil {
			return err
		}
		code, _, b, err := c.Do(ctx, http.MethodPatch, "/id/"+url.PathEscape(c.Routes[class]), ifMatch, body)
		if err != nil {
			return err
		}
		switch code {
		case http.StatusOK:
		case http.StatusPreconditionFailed:
			return fmt.Errorf("caddy PATCH /id/%s: If-Match answered 412: the route changed since this run last wrote or read it back (someone else edited the router); nothing overwritten: %s: %w", c.Routes[class], router.FirstLine(string(b)), router.ErrRouterConflict)
		default:
			return router.Status("caddy PATCH /id/"+c.Routes[class], code, b)
		}
	}
	return nil
}

// routeBody is route rewritten to desired's upstreams and weights for class.
func (c *Router) routeBody(class string, route map[string]any, desired router.RouterState) ([]byte, error) {
	h, err := ProxyHandler(route)
	if err != nil {
		return nil, fmt.Errorf("caddy route %s: %v", c.Routes[class], err)
	}
	if why := unseen(route); len(why) > 0 {
		return nil, fmt.Errorf("caddy route %s of class %s: %w: %s", c.Routes[class], class, router.ErrRouterTopology, strings.Join(why, "; "))
	}
	names := slices.Sorted(maps.Keys(desired.Weights[class]))
	var ups, weights []any
	for _, r := range names {
		st := desired.States.Get(class, r)
		w := desired.Weights[class][r]
		if st == router.Maint {
			continue
		}
		if st == router.Drain {
			w = 0
		}
		dial, ok := c.Dials[r]
		if !ok {
			return nil, fmt.Errorf("caddy: region %s has no endpoint to dial", r)
		}
		ups = append(ups, map[string]any{"dial": dial})
		weights = append(weights, w)
	}
	if len(ups) == 0 {
		return nil, fmt.Errorf("caddy: class %s would have no upstream", class)
	}
	h["upstreams"] = ups
	lb, _ := h["load_balancing"].(map[string]any)
	if lb == nil {
		lb = map[string]any{}
		h["load_balancing"] = lb
	}
	lb["selection_policy"] = map[string]any{"policy": "weighted_round_robin", "weights": weights}
	return json.Marshal(route)
}

// Apply rewrites each class's upstreams: ready and drained regions are upstreams (a drained one
// with weight 0), cut-off ones are left out; a PATCH with If-Match on the ETag of the route just
// read (unconditional on what any run saw: the executor uses ApplyIf).
func (c *Router) Apply(ctx context.Context, desired router.RouterState) error {
	if err := c.fallbacks(ctx); err != nil {
		return err
	}
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		if err := c.applyClass(ctx, class, desired); err != nil {
			return err
		}
	}
	return nil
}

func (c *Router) applyClass(ctx context.Context, class string, desired router.RouterState) error {
	attempts := c.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var last error
	for range attempts {
		route, etag, err := c.Route(ctx, class)
		if err != nil {
			return err
		}
		if strings.HasPrefix(etag, "digest:") {
			etag = ""
		}
		body, err := c.routeBody(class, route, desired)
		if err != nil {
			return err
		}
		code, _, b, err := c.Do(ctx, http.MethodPatch, "/id/"+url.PathEscape(c.Routes[class]), etag, body)
		if err != nil {
			return err
		}
		switch code {
		case http.StatusOK:
			return nil
		case http.StatusPreconditionFailed:
			last = fmt.Errorf("caddy PATCH /id/%s: %s: %w", c.Routes[class], router.FirstLine(string(b)), router.ErrRouterConflict)
			continue
		}
		return router.Status("caddy PATCH /id/"+c.Routes[class], code, b)
	}
	return last
}

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverCaddy, Order: 3, Config: func() fleet.DriverConfig { return &Config{} }})
}

// The configuration's interface and the driver's capabilities, checked at compile time.
var (
	_ fleet.DriverConfig       = (*Config)(nil)
	_ router.ConditionalDriver = (*Router)(nil)
	_ router.ZeroDrainDriver   = (*Router)(nil)
)

// CaddyConfig is the Caddy driver's: router: {driver: caddy, url: http://127.0.0.1:2019}.
type Config struct {
	URL string `json:"url"` // Caddy's admin API
	// AllowNoETag: a Caddy that sends no ETag is written after comparing with the run's last
	// read-back immediately before each write (a window remains), instead of refused.
	AllowNoETag bool `json:"allow_no_etag,omitempty"`
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"url":           func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) },
		"allow_no_etag": func(n *yaml.Node, at string) { c.AllowNoETag = d.Bool(n, at) },
	}
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.URL != "", "url", "Caddy's admin API, such as http://127.0.0.1:2019")
	for _, class := range slices.Sorted(maps.Keys(f.Tenants)) {
		for _, name := range f.Tenants[class] {
			if reg := f.Regions[name]; reg != nil && reg.Endpoint == "" {
				d.Errf(reg.Line, "regions."+name+".endpoint", "required with driver caddy: it is the upstream of class %s", class)
			}
		}
	}
	d.RequireBackends(f)
}

func (c *Config) Open(f *fleet.Fleet) (router.Driver, error) { return New(f) }
func (c *Config) Identity() []string                         { return []string{"", c.URL, ""} }
