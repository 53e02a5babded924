package fleet

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet/launch"
	"lifeboat/fleet/notify"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/providers"
)

// Fleet is a parsed, validated fleet file: the model, its regions (replica, endpoint, capacity,
// launcher), the residency classes of tenants, the router, the failover policy, the state store
// and the SLA. Relative paths (model.manifest, file replicas, a file state store) are resolved
// against the fleet file's directory.
type Fleet struct {
	File     string              `json:"file"` // the name given to ParseFleet
	Model    Model               `json:"model"`
	Regions  map[string]*Region  `json:"regions"`
	Tenants  map[string][]string `json:"tenants"` // class → the only regions it may ever reach, in file order
	Router   Router              `json:"router"`
	Failover Policy              `json:"failover"`
	State    string              `json:"state,omitempty"` // store URL for lock, journal, drill history
	SLA      SLA                 `json:"sla"`
	// Notify are the webhooks told of runs and drill verdicts (fleet_notify.go).
	Notify []notify.Webhook `json:"notify,omitempty"`
	Trust  *Trust           `json:"trust,omitempty"` // accepted signers of the manifest; nil: none required
	// Probe is how the warm prober reaches every region's replicas (a region's own probe
	// section replaces it): where the bearer token of a vLLM started with --api-key comes from.
	Probe *ProbeConfig `json:"probe,omitempty"`
	// Prometheus is the server stop conditions query (fleet_stop.go); nil: none.
	Prometheus *Prometheus `json:"prometheus,omitempty"`
	// StopConditions are checked before every router write of a failover or a drill.
	StopConditions []StopCondition `json:"stop_conditions,omitempty"`
}

// ProbeConfig is a probe section: probe: {api_key_env: NAME} or {api_key_file: PATH}. It names
// where the token is, never the token: the variable is read from Lifeboat's own environment, the
// file (resolved against the fleet file's directory) when a probe starts.
type ProbeConfig struct {
	Auth launch.APIKeySource `json:"auth"`
}

// ProbeAuth is where the warm prober of region gets its bearer token: the region's probe
// section, else the fleet's; zero when neither names one.
func (f *Fleet) ProbeAuth(region string) launch.APIKeySource {
	if r := f.Regions[region]; r != nil && r.Probe != nil {
		return r.Probe.Auth
	}
	if f.Probe != nil {
		return f.Probe.Auth
	}
	return launch.APIKeySource{}
}

// Model names the served model and its DR manifest.
type Model struct {
	Name     string `json:"name"`
	Manifest string `json:"manifest"` // a path resolved against the fleet file's directory, or oci://…
}

// Region is one serving region.
type Region struct {
	Name     string    `json:"name"`
	Line     int       `json:"-"` // where the region is defined in the fleet file
	Geo      string    `json:"geo,omitempty"`
	Replica  string    `json:"replica"`            // store URL of the region's replica (canonical form)
	Endpoint string    `json:"endpoint,omitempty"` // base URL of the region's serving endpoint
	Capacity Capacity  `json:"capacity"`
	Launcher *Launcher `json:"launcher,omitempty"`
	Signals  Signals   `json:"signals"`
	// Probe replaces the fleet's probe section for this region's replicas.
	Probe *ProbeConfig `json:"probe,omitempty"`
}

// Signals says where the failover reads a region's load.
type Signals struct {
	// Metrics is the region's Prometheus endpoint (vLLM /metrics, one replica or a federation of
	// the region's); empty means Endpoint + "/metrics".
	Metrics string `json:"metrics,omitempty"`
	// MeanPromptTokens is used when the metrics carry no vllm:request_prompt_tokens histogram
	// (and no prompt-token counter to derive it from); 0 means unknown.
	MeanPromptTokens float64 `json:"mean_prompt_tokens,omitempty"`
}

// MetricsURL is where the region's /metrics are read; "" when it has none.
func (r *Region) MetricsURL() string {
	if r.Signals.Metrics != "" {
		return r.Signals.Metrics
	}
	if r.Endpoint != "" {
		return r.Endpoint + "/metrics"
	}
	return ""
}

// PrefillCapacity is replicas × prefill_tokens_per_s, the region's prefill rate in tokens/s;
// 0 when either is unset.
func (r *Region) PrefillCapacity() float64 {
	return float64(r.Capacity.Replicas) * r.Capacity.PrefillTokensPerS
}

// Capacity is what a region was provisioned for.
type Capacity struct {
	Replicas          int     `json:"replicas"`
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
}

// Launcher says how to start a candidate replica of a region: its kind (a registered
// LauncherKind), the env every kind takes, and the kind's own configuration.
type Launcher struct {
	Kind string            `json:"kind"`
	Env  map[string]string `json:"env,omitempty"`
	// PassEnv names variables of Lifeboat's own environment the candidate gets as they are
	// (pass_env:); beyond them and execlauncher.BaseEnvNames it gets none (its secrets stay home).
	PassEnv []string `json:"pass_env,omitempty"`
	// Config is the kind's configuration (*execlauncher.Config, *endpoint.Config, or another registered kind's).
	Config LauncherConfig `json:"config,omitempty"`
}

// AttachesOnly: the launcher starts nothing, it attaches to a replica already serving (see
// AttachLauncher).
func (l *Launcher) AttachesOnly() bool {
	a, ok := l.Config.(AttachLauncher)
	return ok && a.AttachesOnly()
}

// Candidate says whether a drill boots a candidate replica in the region: it has a launcher
// that starts one (not one that only attaches to a replica already serving).
func (r *Region) Candidate() bool {
	return r.Launcher != nil && r.Launcher.Config != nil && !r.Launcher.AttachesOnly()
}

// Router says which driver moves traffic and how it reaches the router.
type Router struct {
	Driver string `json:"driver"`
	// Backends names, per tenant class, what holds that class's regions in the router (the
	// HAProxy backend, the Caddy route @id, the http document, a registered driver's object).
	Backends map[string]string `json:"backends,omitempty"`
	// Frontends is, per tenant class, the URL where that class's requests enter the router's
	// data plane; a drill sends its synthetic traffic there, and learns where each request
	// landed from the FrontendServedBy response header the router adds.
	Frontends map[string]string `json:"frontends,omitempty"`
	// Timeout bounds one exchange with the router.
	Timeout time.Duration `json:"timeout"`
	// Config is the driver kind's configuration (*FileConfig, *HAProxyConfig, *CaddyConfig,
	// *HTTPConfig, or a registered kind's).
	Config DriverConfig `json:"config,omitempty"`
}

// FrontendServedBy is the response header a router with frontends adds to say where a request
// went: the region (HAProxy: http-response set-header X-Served-By %[srv_name], servers named by
// region) or the upstream's host:port (Caddy: header_down X-Served-By {http.reverse_proxy.upstream.hostport}).
const FrontendServedBy = "X-Served-By"

// The built-in router drivers' names.
const (
	DriverFile    = "file"
	DriverHAProxy = "haproxy"
	DriverCaddy   = "caddy"
	DriverHTTP    = "http"
)

// The built-in launchers' names.
const (
	LauncherExec     = "exec"     // run a command on this host
	LauncherEndpoint = "endpoint" // an already-running replica at a URL (or the region's endpoint)
)

// DefaultLockTTL is failover.lock_ttl when the fleet file does not set it.
const DefaultLockTTL = 60 * time.Second

// DefaultRouterTimeout bounds one router exchange when router.timeout is unset.
const DefaultRouterTimeout = 5 * time.Second

// Policy is the failover section: how fast and how far traffic moves.
type Policy struct {
	StepPercent     int           `json:"step_percent"`
	StepInterval    time.Duration `json:"step_interval"`
	SpillStartMS    int           `json:"spill_start_ms"`
	SpillStopMS     int           `json:"spill_stop_ms"`
	SpillCapPercent int           `json:"spill_cap_percent"`
	Expires         time.Duration `json:"expires"`
	// MaxTransitionsPerHour bounds the weight changes of one region in any hour (no flapping).
	MaxTransitionsPerHour int `json:"max_transitions_per_hour"`
	// DrainTimeout is how long a draining region may keep in-flight requests before it is cut
	// off; at least the p99 stream length.
	DrainTimeout time.Duration `json:"drain_timeout"`
	// DrainRunningBelow: a draining region is cut off once vllm:num_requests_running is below it.
	DrainRunningBelow int `json:"drain_running_below"`
	// FailbackDwell is how long a region must stay warm and under spill_stop_ms before it takes
	// traffic back.
	FailbackDwell time.Duration `json:"failback_dwell"`
	// AssumedUtilizationPercent is the prefill utilisation assumed for a region whose inflow is
	// not measured (docs/failover.md says how queue wait is predicted).
	AssumedUtilizationPercent int `json:"assumed_utilization_percent"`
	// LockTTL is how long the failover lock outlives its holder's last renewal: a holder stops
	// writing TTL/4 before it on its own monotonic clock; a taker waits it out on its own.
	LockTTL time.Duration `json:"lock_ttl"`
}

// Defaults of the failover section.
const (
	DefaultStepPercent           = 10
	DefaultStepInterval          = 60 * time.Second
	DefaultSpillStartMS          = 400
	DefaultSpillStopMS           = 150
	DefaultSpillCapPercent       = 30
	DefaultExpires               = 72 * time.Hour
	DefaultMaxTransitionsPerHour = 12
	DefaultDrainTimeout          = 10 * time.Minute
	DefaultDrainRunningBelow     = 1
	DefaultFailbackDwell         = 10 * time.Minute
	DefaultAssumedUtilization    = 50
)

// Bounds of failover.lock_ttl.
const (
	MinLockTTL = time.Second
	MaxLockTTL = time.Hour
)

// DefaultPolicy is the failover section of a fleet file that sets none of it.
func DefaultPolicy() Policy {
	return Policy{
		StepPercent: DefaultStepPercent, StepInterval: DefaultStepInterval,
		SpillStartMS: DefaultSpillStartMS, SpillStopMS: DefaultSpillStopMS, SpillCapPercent: DefaultSpillCapPercent,
		Expires: DefaultExpires, MaxTransitionsPerHour: DefaultMaxTransitionsPerHour,
		DrainTimeout: DefaultDrainTimeout, DrainRunningBelow: DefaultDrainRunningBelow,
		FailbackDwell: DefaultFailbackDwell, AssumedUtilizationPercent: DefaultAssumedUtilization,
		LockTTL: DefaultLockTTL,
	}
}

// SLA is the recovery target drills are measured against.
type SLA struct {
	RTO time.Duration `json:"rto"`
}

// RegionNames returns the region names, sorted.
func (f *Fleet) RegionNames() []string {
	out := make([]string, 0, len(f.Regions))
	for n := range f.Regions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FleetError lists every problem found in a fleet file, each as "file:line: field: message".
type FleetError struct {
	Problems []string
}

func (e *FleetError) Error() string { return strings.Join(e.Problems, "\n") }

// ErrInvalidFleet is matched (errors.Is) by every error ParseFleet returns.
var ErrInvalidFleet = errors.New("invalid fleet file")

// ErrRefused is matched by a refusal for safety (exit 3): nothing was changed. The executor's
// refusals (failover.ErrRefused is this error) and a launcher kind's (a bundle the kubernetes
// launcher will not apply) match it.
var ErrRefused = errors.New("refused for safety")

func (e *FleetError) Is(target error) bool { return target == ErrInvalidFleet }

// maxFleetProblems bounds the problems reported for one file.
const MaxProblems = yamlnode.MaxProblems

// ParseFleet parses and validates a fleet file. name is used in messages and, when it has a
// directory, to resolve relative paths (model.manifest, file:// replicas and state, the file
// router's path); an empty directory means the current one. Unknown keys, anchors and aliases,
// duplicate keys, values of the wrong type and references to undefined regions or classes are
// errors; every error is a *FleetError naming the line and the field.
func Parse(data []byte, name string) (*Fleet, error) {
	p := &fleetParser{Checker: yamlnode.Checker{Name: name}, dir: filepath.Dir(name)}
	if name == "" {
		p.Name, p.dir = "fleet", "."
	}
	f := p.parse(data)
	if p.Failed() {
		return nil, &FleetError{Problems: p.Problems}
	}
	return f, nil
}

// fleetParser decodes one fleet file; lines remembers where things are for cross-checks.
type fleetParser struct {
	yamlnode.Checker
	dir   string
	lines fleetLines
}

type fleetLines struct {
	model, regions, tenants, router, failover int
	prometheus, stop                          int
	tenant                                    map[string]int // class → line
	tenantItem                                map[string]int // class NUL region → line
	backend                                   map[string]int // class → line
	frontend                                  map[string]int // class → line
	field                                     map[string]int // dotted field → line of its value
}

// Short names for the checker's decoders, as the rest of this file uses them.
func (p *fleetParser) errf(line int, field, format string, args ...any) {
	p.Errf(line, field, format, args...)
}
func (p *fleetParser) str(n *yaml.Node, at string, required bool) string {
	return p.Str(n, at, required)
}
func (p *fleetParser) mapping(n *yaml.Node, at string, top bool, fields map[string]func(*yaml.Node, string)) {
	p.Mapping(n, at, top, fields)
}
func (p *fleetParser) eachKey(n *yaml.Node, at string, fn func(k, v *yaml.Node, at string)) {
	p.EachKey(n, at, fn)
}
func kindName(n *yaml.Node) string { return yamlnode.KindName(n) }

// boolean decodes true or false.
func (p *fleetParser) boolean(n *yaml.Node, at string) bool {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		if v, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return v
		}
	}
	p.errf(n.Line, at, "want true or false, got %s", kindName(n))
	return false
}

// parse decodes the document, then cross-checks it — also when some fields did not decode, so
// that every mistake in the file is reported at once; a cross-check about a field that already
// has a problem (or one inside or around it) is left out, as it would only repeat it.
func (p *fleetParser) parse(data []byte) *Fleet {
	root := p.Root(data, "a fleet file")
	if root == nil {
		return nil
	}
	p.lines = fleetLines{tenant: map[string]int{}, tenantItem: map[string]int{}, backend: map[string]int{}, frontend: map[string]int{}, field: map[string]int{}}
	f := &Fleet{File: p.Name, Regions: map[string]*Region{}, Tenants: map[string][]string{}, Failover: DefaultPolicy()}
	f.Router.Timeout = DefaultRouterTimeout
	p.mapping(root, "", true, map[string]func(*yaml.Node, string){
		"model":    func(n *yaml.Node, at string) { p.model(f, n, at) },
		"regions":  func(n *yaml.Node, at string) { p.regions(f, n, at) },
		"tenants":  func(n *yaml.Node, at string) { p.tenants(f, n, at) },
		"router":   func(n *yaml.Node, at string) { p.lines.router = n.Line; f.Router = p.router(n, at) },
		"failover": func(n *yaml.Node, at string) { p.policy(&f.Failover, n, at) },
		"state": func(n *yaml.Node, at string) {
			if s := p.str(n, at, true); s != "" {
				if loc, err := providers.ParseURL(s); err == nil {
					if err := providers.CheckStateLocation(loc); err != nil {
						p.errf(n.Line, at, "%v", err)
						return
					}
				}
				f.State = p.storeURL(n, at, s)
			}
		},
		"notify":          func(n *yaml.Node, at string) { f.Notify = p.notifyHooks(n, at) },
		"trust":           func(n *yaml.Node, at string) { p.trust(f, n, at) },
		"probe":           func(n *yaml.Node, at string) { f.Probe = p.probe(n, at) },
		"prometheus":      func(n *yaml.Node, at string) { f.Prometheus = p.prometheus(n, at) },
		"stop_conditions": func(n *yaml.Node, at string) { p.stopConditions(f, n, at) },
		"sla": func(n *yaml.Node, at string) {
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"rto": func(n *yaml.Node, at string) { f.SLA.RTO = p.Duration(n, at) },
			})
		},
	})
	settled := len(p.Problems)
	p.checkModel(f)
	p.checkTenants(f)
	p.checkRouter(f)
	p.checkPolicy(f)
	p.checkLaunchers(f)
	p.checkStop(f)
	if settled > 0 {
		p.Problems = append(p.Problems[:settled], UnrelatedProblems(p.Name, p.Problems[:settled], p.Problems[settled:])...)
	}
	return f
}

// UnrelatedProblems returns the problems of later whose field is not that of a problem of
// earlier, nor inside or around it ("router" and "router.socket" are related): the checks of
// a file that run after some of its fields failed to decode (so that every mistake is reported
// at once) leave out what would only repeat a problem already reported.
func UnrelatedProblems(file string, earlier, later []string) []string {
	var out []string
	for _, l := range later {
		lf := problemField(file, l)
		related := false
		for _, e := range earlier {
			ef := problemField(file, e)
			related = related || lf != "" && ef != "" && (lf == ef || strings.HasPrefix(lf, ef+".") || strings.HasPrefix(ef, lf+".") ||
				strings.HasPrefix(lf, ef+"[") || strings.HasPrefix(ef, lf+"["))
		}
		if !related {
			out = append(out, l)
		}
	}
	return out
}

// problemField is the field of a problem worded by yamlnode.Checker.Errf ("file:line: field:
// message" or "file: field: message"); "" when it has none.
func problemField(file, problem string) string {
	rest, ok := strings.CutPrefix(problem, file+":")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, ' '); i >= 0 && strings.Trim(rest[:i], "0123456789") == ":" {
		rest = rest[i+1:]
	} else {
		rest = strings.TrimPrefix(rest, " ")
	}
	field, _, ok := strings.Cut(rest, ": ")
	if !ok || strings.ContainsRune(field, ' ') {
		return ""
	}
	return field
}

func (p *fleetParser) model(f *Fleet, n *yaml.Node, at string) {
	p.lines.model = n.Line
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"name":     func(n *yaml.Node, at string) { f.Model.Name = p.str(n, at, true) },
		"manifest": func(n *yaml.Node, at string) { f.Model.Manifest = p.manifestRef(n, at) },
	})
}

// manifestRef is model.manifest: a local path (resolved against the fleet file's directory) or
// an oci://REGISTRY/REPO:TAG|@sha256:… reference — the DR manifest a registry holds.
func (p *fleetParser) manifestRef(n *yaml.Node, at string) string {
	if s := strings.TrimSpace(n.Value); n.Kind == yaml.ScalarNode && strings.HasPrefix(s, "oci://") {
		if _, err := providers.ParseURL(s); err != nil {
			p.errf(n.Line, at, "%v", err)
			return ""
		}
		return s
	}
	return p.path(n, at)
}

func (p *fleetParser) regions(f *Fleet, n *yaml.Node, at string) {
	p.lines.regions = n.Line
	p.eachKey(n, at, func(k, v *yaml.Node, at string) {
		if p.CheckName(k, at) {
			f.Regions[k.Value] = p.region(k.Value, k.Line, v, at)
		}
	})
}

func (p *fleetParser) tenants(f *Fleet, n *yaml.Node, at string) {
	p.lines.tenants = n.Line
	p.eachKey(n, at, func(k, v *yaml.Node, at string) {
		if !p.CheckName(k, at) {
			return
		}
		f.Tenants[k.Value] = p.StrList(v, at, "region names")
		p.lines.tenant[k.Value] = k.Line
		p.lines.field[at] = k.Line
		for _, c := range v.Content {
			p.lines.tenantItem[k.Value+"\x00"+c.Value] = c.Line
		}
	})
}

func (p *fleetParser) policy(pol *Policy, n *yaml.Node, at string) {
	p.lines.failover = n.Line
	field := func(set func(n *yaml.Node, at string)) func(*yaml.Node, string) {
		return func(n *yaml.Node, at string) { p.lines.field[at] = n.Line; set(n, at) }
	}
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"step_percent":      field(func(n *yaml.Node, at string) { pol.StepPercent = p.IntIn(n, at, 1, 100) }),
		"step_interval":     field(func(n *yaml.Node, at string) { pol.StepInterval = p.Duration(n, at) }),
		"spill_start_ms":    field(func(n *yaml.Node, at string) { pol.SpillStartMS = p.IntIn(n, at, 1, math.MaxInt32) }),
		"spill_stop_ms":     field(func(n *yaml.Node, at string) { pol.SpillStopMS = p.IntIn(n, at, 0, math.MaxInt32) }),
		"spill_cap_percent": field(func(n *yaml.Node, at string) { pol.SpillCapPercent = p.IntIn(n, at, 0, 100) }),
		"expires":           field(func(n *yaml.Node, at string) { pol.Expires = p.Duration(n, at) }),
		"max_transitions_per_hour": field(func(n *yaml.Node, at string) {
			pol.MaxTransitionsPerHour = p.IntIn(n, at, 1, 3600)
		}),
		"drain_timeout":       field(func(n *yaml.Node, at string) { pol.DrainTimeout = p.Duration(n, at) }),
		"drain_running_below": field(func(n *yaml.Node, at string) { pol.DrainRunningBelow = p.IntIn(n, at, 1, math.MaxInt32) }),
		"failback_dwell":      field(func(n *yaml.Node, at string) { pol.FailbackDwell = p.Duration(n, at) }),
		"lock_ttl":            field(func(n *yaml.Node, at string) { pol.LockTTL = p.Duration(n, at) }),
		"assumed_utilization_percent": field(func(n *yaml.Node, at string) {
			pol.AssumedUtilizationPercent = p.IntIn(n, at, 1, 99)
		}),
	})
}

func (p *fleetParser) checkModel(f *Fleet) {
	if f.Model.Name == "" {
		p.errf(p.lines.model, "model.name", "required")
	}
	if f.Model.Manifest == "" {
		p.errf(p.lines.model, "model.manifest", "required")
	}
	if len(f.Regions) == 0 {
		p.errf(p.lines.regions, "regions", "at least one region is required")
	}
}

// checkTenants: every class names at least one region, each defined, none twice.
func (p *fleetParser) checkTenants(f *Fleet) {
	for _, class := range slices.Sorted(maps.Keys(f.Tenants)) {
		if len(f.Tenants[class]) == 0 {
			p.errf(p.lines.tenant[class], "tenants."+class, "names no region: a class must have at least one eligible region")
		}
		seen := map[string]bool{}
		for _, r := range f.Tenants[class] {
			line := p.lines.tenantItem[class+"\x00"+r]
			if _, ok := f.Regions[r]; !ok {
				p.errf(line, "tenants."+class, "region %q is not defined under regions%s", r, DidYouMean(r, f.RegionNames()))
			}
			if seen[r] {
				p.errf(line, "tenants."+class, "region %q is listed twice", r)
			}
			seen[r] = true
		}
	}
}

// checkRouter: every backend and frontend names a class, no two classes share a backend; then
// the driver kind's own checks.
func (p *fleetParser) checkRouter(f *Fleet) {
	r := f.Router
	for _, class := range slices.Sorted(maps.Keys(r.Backends)) {
		if _, ok := f.Tenants[class]; !ok {
			p.errf(p.lines.backend[class], "router.backends."+class, "tenant class %q is not defined under tenants%s", class, DidYouMean(class, slices.Sorted(maps.Keys(f.Tenants))))
		}
	}
	for _, class := range slices.Sorted(maps.Keys(r.Frontends)) {
		if _, ok := f.Tenants[class]; !ok {
			p.errf(p.lines.frontend[class], "router.frontends."+class, "tenant class %q is not defined under tenants%s", class, DidYouMean(class, slices.Sorted(maps.Keys(f.Tenants))))
		}
	}
	seen := map[string]string{}
	for _, class := range slices.Sorted(maps.Keys(r.Backends)) {
		b := r.Backends[class]
		if other, dup := seen[b]; dup {
			p.errf(p.lines.backend[class], "router.backends."+class, "backend %q is also class %s's: a class's backend holds only that class's regions", b, other)
		}
		seen[b] = class
	}
	if r.Config != nil {
		r.Config.Check(p.decoder(), f)
	}
}

// RequireBackends reports each tenant class without a backend under router.backends, for a
// driver kind whose classes each need their own (HAProxy backends, Caddy routes, HTTPRoutes).
func (d *Decoder) RequireBackends(f *Fleet) {
	for _, class := range slices.Sorted(maps.Keys(f.Tenants)) {
		if f.Router.Backends[class] == "" {
			d.Errf(d.Line("router"), "router.backends", "class %q has no backend: each class needs its own, holding only its eligible regions", class)
		}
	}
}

// RequireRouter reports a router key a driver kind needs and that is unset.
func (d *Decoder) RequireRouter(f *Fleet, set bool, key, what string) {
	if !set {
		d.Errf(d.Line("router"), "router."+key, "required with driver %s: %s", f.Router.Driver, what)
	}
}

func (p *fleetParser) decoder() *Decoder { return &Decoder{Checker: &p.Checker, p: p} }

// checkPolicy: thresholds that make sense together.
func (p *fleetParser) checkPolicy(f *Fleet) {
	pol := f.Failover
	line := func(field string) int {
		if l := p.lines.field["failover."+field]; l > 0 {
			return l
		}
		return p.lines.failover
	}
	if pol.LockTTL < MinLockTTL || pol.LockTTL > MaxLockTTL {
		p.errf(line("lock_ttl"), "failover.lock_ttl", "%s is outside %s–%s (a holder stops writing at 3/4 of it; a taker waits all of it)", pol.LockTTL, MinLockTTL, MaxLockTTL)
	}
	if pol.SpillStopMS >= pol.SpillStartMS {
		p.errf(line("spill_stop_ms"), "failover.spill_stop_ms", "%d is not below spill_start_ms %d: spilling would never stop (hysteresis needs stop < start)", pol.SpillStopMS, pol.SpillStartMS)
	}
}

func (p *fleetParser) checkLaunchers(f *Fleet) {
	for _, name := range f.RegionNames() {
		if r := f.Regions[name]; r.Launcher != nil && r.Launcher.Config != nil {
			r.Launcher.Config.Check(p.decoder(), f, r)
		}
	}
}

// path resolves a local path against the fleet file's directory.
func (p *fleetParser) path(n *yaml.Node, at string) string {
	s := p.str(n, at, true)
	if s == "" {
		return ""
	}
	if strings.ContainsRune(s, 0) {
		p.errf(n.Line, at, "path contains a NUL byte")
		return ""
	}
	if strings.Contains(s, "://") {
		p.errf(n.Line, at, "want a local path, got the URL %q", s)
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return filepath.Clean(s)
}

// storeURL checks a store URL and resolves a relative local directory against the fleet file's.
func (p *fleetParser) storeURL(n *yaml.Node, at, s string) string {
	loc, err := providers.ParseURL(s)
	if err != nil {
		p.errf(n.Line, at, "%v", err)
		return ""
	}
	if loc.Scheme == "file" && !filepath.IsAbs(loc.Path) {
		loc.Path = filepath.Join(p.dir, loc.Path)
		if !filepath.IsAbs(loc.Path) {
			return "./" + filepath.ToSlash(loc.Path) // relative to the working directory, as given
		}
	}
	return loc.String()
}

func (p *fleetParser) httpURL(n *yaml.Node, at string) string {
	s := p.str(n, at, true)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.errf(n.Line, at, "want an http:// or https:// URL, got %q", s)
		return ""
	}
	if u.User != nil {
		p.errf(n.Line, at, "credentials do not belong in the URL")
		return ""
	}
	return strings.TrimSuffix(s, "/")
}

func (p *fleetParser) region(name string, line int, n *yaml.Node, at string) *Region {
	r := &Region{Name: name, Line: line}
	p.lines.field[at] = line
	if n.Kind != yaml.MappingNode {
		p.errf(n.Line, at, "want a mapping with at least a replica, got %s", kindName(n))
		return r
	}
	var replicaSeen bool
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"geo": func(n *yaml.Node, at string) { r.Geo = p.str(n, at, true) },
		"replica": func(n *yaml.Node, at string) {
			replicaSeen = true
			if s := p.str(n, at, true); s != "" {
				r.Replica = p.storeURL(n, at, s)
			}
		},
		"endpoint": func(n *yaml.Node, at string) { r.Endpoint = p.httpURL(n, at) },
		"capacity": func(n *yaml.Node, at string) {
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"replicas":             func(n *yaml.Node, at string) { r.Capacity.Replicas = p.IntIn(n, at, 0, math.MaxInt32) },
				"prefill_tokens_per_s": func(n *yaml.Node, at string) { r.Capacity.PrefillTokensPerS = p.Positive(n, at) },
			})
		},
		"launcher": func(n *yaml.Node, at string) { r.Launcher = p.launcher(n, at) },
		"probe":    func(n *yaml.Node, at string) { r.Probe = p.probe(n, at) },
		"signals": func(n *yaml.Node, at string) {
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"metrics":            func(n *yaml.Node, at string) { r.Signals.Metrics = p.httpURL(n, at) },
				"mean_prompt_tokens": func(n *yaml.Node, at string) { r.Signals.MeanPromptTokens = p.Positive(n, at) },
			})
		},
	})
	if !replicaSeen {
		p.errf(line, at+".replica", "required")
	}
	return r
}

func (p *fleetParser) launcher(n *yaml.Node, at string) *Launcher {
	if n.Kind != yaml.MappingNode {
		p.errf(n.Line, at, "want a mapping such as {kind: exec, command: ...}, got %s", kindName(n))
		return nil
	}
	p.lines.field[at] = n.Line
	l := &Launcher{}
	common := yamlnode.Fields{
		"kind": func(n *yaml.Node, at string) {},
		"env": func(n *yaml.Node, at string) {
			l.Env = map[string]string{}
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				if !envNameRE.MatchString(k.Value) {
					p.errf(k.Line, at, "not an environment variable name")
					return
				}
				if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
					p.errf(v.Line, at, "want a string, got %s", kindName(v))
					return
				}
				l.Env[k.Value] = v.Value
			})
		},
		"pass_env": func(n *yaml.Node, at string) {
			for _, name := range p.StrList(n, at, "environment variable names") {
				if !envNameRE.MatchString(name) {
					p.errf(n.Line, at, "%q is not an environment variable name", name)
					continue
				}
				l.PassEnv = append(l.PassEnv, name)
			}
		},
	}
	kinds := LauncherKinds()
	kn := p.kindNode(n, "kind")
	switch {
	case kn == nil:
		p.errf(n.Line, at+".kind", "required: one of %s", strings.Join(kinds, ", "))
	default:
		l.Kind = p.str(kn, at+".kind", true)
		if l.Kind == "" {
			break
		}
		k, ok := launcherKind(l.Kind)
		if !ok {
			p.errf(kn.Line, at+".kind", "%s", UnknownKind(l.Kind, kinds))
			break
		}
		l.Config = k.Config()
	}
	var own yamlnode.Fields
	if l.Config != nil {
		own = l.Config.Keys(p.decoder())
	}
	p.kindMapping(n, at, "launcher kind", l.Kind, l.Config != nil, common, own, func(name string) (yamlnode.Fields, bool) {
		k, ok := launcherKind(name)
		if !ok {
			return nil, false
		}
		return k.Config().Keys(p.decoder()), true
	}, kinds)
	return l
}

// kindNode is the value of key in mapping n, nil when absent.
func (p *fleetParser) kindNode(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// kindMapping decodes a mapping of common keys and a kind's own: every key's line is kept (for
// FleetDecoder.Line), an unknown key lists the keys the kind takes and, when another
// registered kind takes it, says whose it is. Without a known kind (already reported), only
// the common keys are decoded: the others cannot be judged.
func (p *fleetParser) kindMapping(n *yaml.Node, at, what, kindDesc string, known bool, common, own yamlnode.Fields,
	keysOf func(string) (yamlnode.Fields, bool), kinds []string) {
	fields := yamlnode.Fields{}
	line := func(fn func(*yaml.Node, string)) func(*yaml.Node, string) {
		return func(n *yaml.Node, at string) { p.lines.field[at] = n.Line; fn(n, at) }
	}
	for k, fn := range common {
		fields[k] = line(fn)
	}
	for k, fn := range own {
		if _, dup := fields[k]; !dup {
			fields[k] = line(fn)
		}
	}
	if !known {
		// only the common keys; the kind's own cannot be judged without it
		c := *n
		c.Content = nil
		for i := 0; i+1 < len(n.Content); i += 2 {
			if _, ok := common[n.Content[i].Value]; ok || n.Content[i].Kind != yaml.ScalarNode {
				c.Content = append(c.Content, n.Content[i], n.Content[i+1])
			}
		}
		p.mapping(&c, at, false, fields)
		return
	}
	takes := strings.Join(slices.Sorted(maps.Keys(fields)), ", ")
	c := *n
	c.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if _, ok := fields[k.Value]; !ok && k.Kind == yaml.ScalarNode {
			var others []string
			for _, name := range kinds {
				if fs, ok := keysOf(name); ok {
					if _, has := fs[k.Value]; has {
						others = append(others, name)
					}
				}
			}
			if len(others) > 0 {
				p.errf(k.Line, yamlnode.Join(at, k.Value), "unknown key for %s %s (it is for %s %s); %s %s takes %s", what, kindDesc, what, strings.Join(others, ", "), what, kindDesc, takes)
				continue
			}
		}
		c.Content = append(c.Content, k, n.Content[i+1])
	}
	p.mapping(&c, at, false, fields)
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// probe decodes a probe section: exactly one of api_key_env (an environment variable's name) and
// api_key_file (a local path). A token itself has no key to go in: a value that looks like one
// in api_key_env is refused as not a variable name.
func (p *fleetParser) probe(n *yaml.Node, at string) *ProbeConfig {
	c := &ProbeConfig{}
	p.lines.field[at] = n.Line
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"api_key_env": func(n *yaml.Node, at string) {
			v := p.str(n, at, true)
			switch {
			case v == "":
			case !envNameRE.MatchString(v):
				p.errf(n.Line, at, "want the name of an environment variable (such as VLLM_API_KEY) that holds the token, not the token itself")
			default:
				c.Auth.Env = v
			}
		},
		"api_key_file": func(n *yaml.Node, at string) { c.Auth.File = p.path(n, at) },
	})
	if c.Auth.Env != "" && c.Auth.File != "" {
		p.errf(n.Line, at, "api_key_env and api_key_file both set: name one")
	}
	return c
}

func (p *fleetParser) router(n *yaml.Node, at string) Router {
	r := Router{Timeout: DefaultRouterTimeout}
	p.lines.field[at] = n.Line
	common := yamlnode.Fields{
		"driver":  func(n *yaml.Node, at string) {},
		"timeout": func(n *yaml.Node, at string) { r.Timeout = p.Duration(n, at) },
		"backends": func(n *yaml.Node, at string) {
			r.Backends = map[string]string{}
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				p.lines.backend[k.Value] = k.Line
				p.lines.field[at] = k.Line
				if s := p.str(v, at, true); s != "" {
					if !yamlnode.ValidName(s) {
						p.errf(v.Line, at, "not a valid backend name (letters, digits, '.', '_', '-'; at most 63)")
						return
					}
					r.Backends[k.Value] = s
				}
			})
		},
		"frontends": func(n *yaml.Node, at string) {
			r.Frontends = map[string]string{}
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				p.lines.frontend[k.Value] = k.Line
				p.lines.field[at] = k.Line
				if u := p.httpURL(v, at); u != "" {
					r.Frontends[k.Value] = u
				}
			})
		},
	}
	if n.Kind != yaml.MappingNode {
		p.mapping(n, at, false, common) // reports what it is instead
		return r
	}
	kinds := DriverKinds()
	dn := p.kindNode(n, "driver")
	switch {
	case dn == nil:
		p.errf(n.Line, at+".driver", "required: one of %s", strings.Join(kinds, ", "))
	default:
		r.Driver = p.str(dn, at+".driver", true)
		if r.Driver == "" {
			break
		}
		k, ok := driverKind(r.Driver)
		if !ok {
			p.errf(dn.Line, at+".driver", "%s", UnknownKind(r.Driver, kinds))
			break
		}
		r.Config = k.Config()
	}
	var own yamlnode.Fields
	if r.Config != nil {
		own = r.Config.Keys(p.decoder())
	}
	p.kindMapping(n, at, "driver", r.Driver, r.Config != nil, common, own, func(name string) (yamlnode.Fields, bool) {
		k, ok := driverKind(name)
		if !ok {
			return nil, false
		}
		return k.Config().Keys(p.decoder()), true
	}, kinds)
	return r
}

// UnknownClass says that name is not one of the fleet's tenant classes, listing them and
// suggesting the closest when it looks like a typo; nil when the fleet has the class.
func (f *Fleet) UnknownClass(name string) error {
	if _, ok := f.Tenants[name]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(f.Tenants))
	return fmt.Errorf("class %q: not a tenant class of %s (tenants: %s)%s", name, f.File, strings.Join(names, ", "), DidYouMean(name, names))
}

// UnknownRegion says that name is not one of the fleet's regions, listing them and suggesting
// the closest when it looks like a typo; nil when the fleet has the region.
func (f *Fleet) UnknownRegion(name string) error {
	if f.Regions[name] != nil {
		return nil
	}
	names := f.RegionNames()
	return fmt.Errorf("region %s: not in %s (regions: %s)%s", name, f.File, strings.Join(names, ", "), DidYouMean(name, names))
}
