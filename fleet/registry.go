package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
)

// A router driver kind and a launcher kind are each one registration: a name, a typed
// configuration that decodes its own keys of the fleet file and cross-checks them with the
// whole fleet, and how to open the driver or build the launcher. The fleet parser, OpenRouter,
// warm.FleetBootOptions, the executor and the drills know no kind by name: they go through the
// registry and through the capability interfaces below. See doc.go for why the registry is a
// package-level one, filled from init functions.

// DriverKind registers one router driver kind (router: {driver: Name, ...}).
type DriverKind struct {
	// Name is the value of router.driver: a plain name such as "haproxy" or "gateway-api".
	Name string
	// Order places the kind in the lists of kinds (DriverKinds, "want one of …"): ascending,
	// kinds without one (0) after those with one, each group in registration order. Package
	// init order follows import paths, not a list, so the built-in kinds say where they go.
	Order int
	// Config returns a new, empty configuration for one fleet file's router.
	Config func() DriverConfig
}

// DriverConfig is one fleet file's configuration of a router driver kind: a pointer to the
// kind's own struct, which the fleet parser fills and keeps in Router.Config.
type DriverConfig interface {
	// Keys are the kind's own keys under router:, beyond driver, timeout, backends and
	// frontends, which every driver has and the parser decodes into Router. Each decoder is given
	// the value node and its dotted field ("router.socket"), decodes it with d (which records every
	// problem with its line and field) and keeps the result in the configuration.
	Keys(d *Decoder) yamlnode.Fields
	// Check cross-checks the configuration with the whole fleet (tenants, regions, backends),
	// once every field decoded without a problem; problems go to d (d.Line finds lines).
	Check(d *Decoder, f *Fleet)
	// Open returns the fleet's driver; f.Router.Config is this configuration.
	Open(f *Fleet) (router.Driver, error)
	// Identity is what the router is (addresses, paths, names; never a secret): it goes into
	// the fleet's digest, by which the journal tells the runs of different fleets apart.
	Identity() []string
}

// LauncherKind registers one launcher kind (regions.X.launcher: {kind: Name, ...}).
type LauncherKind struct {
	// Name is the value of launcher.kind: a plain name such as "exec" or "kubernetes".
	Name string
	// Order places the kind in LauncherKinds, as DriverKind.Order.
	Order int
	// Config returns a new, empty configuration for one region's launcher.
	Config func() LauncherConfig
}

// LauncherConfig is one region's configuration of a launcher kind: a pointer to the kind's own
// struct, which the fleet parser fills and keeps in Launcher.Config.
type LauncherConfig interface {
	// Keys are the kind's own keys under launcher:, beyond kind and env, which every launcher
	// has (Launcher.Kind, Launcher.Env). As DriverConfig.Keys.
	Keys(d *Decoder) yamlnode.Fields
	// Check cross-checks the configuration with the whole fleet once every field decoded.
	Check(d *Decoder, f *Fleet, r *Region)
	// Launcher builds the launch.Launcher that boots a candidate of region r.
	Launcher(f *Fleet, r *Region, o LaunchOptions) (launch.Launcher, error)
}

// LaunchOptions are the caller's part of building a launcher.
type LaunchOptions struct {
	// Command rewrites a CommandLauncher's command line before it is checked and run (the CLI
	// makes "lifeboat …" run its own binary; a drill's boot-fails and saturate faults replace or
	// extend it); nil leaves it as written. Other kinds ignore it.
	Command func(string) string
	// Log receives the launcher's own progress (what it applied, port-forwards, leftovers it
	// removed) at info and debug level; nil: none.
	Log *slog.Logger
}

// Launcher capabilities: optional interfaces a LauncherConfig implements, checked by type
// assertion (never by kind name) wherever they matter.

// AttachLauncher is a launcher kind that starts nothing: it attaches to a replica that already
// serves (endpoint). Nothing is restored for it, and a drill boots no candidate in its region:
// the region serves at its own endpoint.
type AttachLauncher interface {
	LauncherConfig
	AttachesOnly() bool
}

// CommandLauncher is a launcher kind whose candidate runs a command line that
// LaunchOptions.Command rewrites (exec). Drill faults that alter the command (boot-fails,
// saturate) need it.
type CommandLauncher interface {
	LauncherConfig
	CommandLine() string
}

// InPlaceLauncher is a launcher kind that restores the model where its replica runs (kubernetes:
// an init container in the pod restores it from the region's replica): only the manifest's engine
// and deployment parts are restored on this host (warm.BootOptions.ModelInPlace).
type InPlaceLauncher interface {
	LauncherConfig
	RestoresModelInPlace() bool
}

// LeftoverCleaner is a launch.Launcher that finds and removes what its earlier boots left behind
// when their process died (kill -9, a lost host), by its own labels, never touching anything it
// did not create. It returns what it removed. `lifeboat drill cleanup` calls it for every region
// whose launcher has it.
type LeftoverCleaner interface {
	CleanupLeftovers(ctx context.Context) ([]string, error)
}

// BootChecker is a launch.Launcher whose boots are recorded by namespace and run label
// (warm.Started.Run) rather than by process group: BootLeft lists what of one boot is still
// there, so that a clean-up says "nothing left" only when that is so.
type BootChecker interface {
	BootLeft(ctx context.Context, namespace, run string) ([]string, error)
}

// registry holds the registered kinds. It is written by init functions (RegisterDriver,
// RegisterLauncher) and only read afterwards; the mutex makes a late registration safe anyway.
var registry = struct {
	sync.RWMutex
	drivers   []DriverKind
	launchers []LauncherKind
}{}

// RegisterDriver registers a router driver kind; call it from the driver package's init (and
// import that package in cmd/lifeboat). It panics on an empty or invalid name, a nil Config or a
// name registered twice: those are programming errors found at start-up.
func RegisterDriver(k DriverKind) {
	registry.Lock()
	defer registry.Unlock()
	checkKind("router driver", k.Name, k.Config == nil, slices.ContainsFunc(registry.drivers, func(o DriverKind) bool { return o.Name == k.Name }))
	registry.drivers = append(registry.drivers, k)
	slices.SortStableFunc(registry.drivers, func(a, b DriverKind) int { return orderKey(a.Order) - orderKey(b.Order) })
}

// RegisterLauncher registers a launcher kind, as RegisterDriver.
func RegisterLauncher(k LauncherKind) {
	registry.Lock()
	defer registry.Unlock()
	checkKind("launcher", k.Name, k.Config == nil, slices.ContainsFunc(registry.launchers, func(o LauncherKind) bool { return o.Name == k.Name }))
	registry.launchers = append(registry.launchers, k)
	slices.SortStableFunc(registry.launchers, func(a, b LauncherKind) int { return orderKey(a.Order) - orderKey(b.Order) })
}

// orderKey sorts a kind without an Order after every kind with one.
func orderKey(order int) int {
	if order <= 0 {
		return math.MaxInt32
	}
	return order
}

func checkKind(what, name string, nilConfig, dup bool) {
	switch {
	case !yamlnode.ValidName(name):
		panic(fmt.Sprintf("failover: register %s %q: not a plain name", what, name))
	case nilConfig:
		panic(fmt.Sprintf("failover: register %s %s: nil Config", what, name))
	case dup:
		panic(fmt.Sprintf("failover: register %s %s: registered twice", what, name))
	}
}

// DriverKinds are the registered router driver names, in registration order.
func DriverKinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.drivers))
	for _, k := range registry.drivers {
		out = append(out, k.Name)
	}
	return out
}

// LauncherKinds are the registered launcher kind names, in registration order.
func LauncherKinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.launchers))
	for _, k := range registry.launchers {
		out = append(out, k.Name)
	}
	return out
}

func driverKind(name string) (DriverKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	for _, k := range registry.drivers {
		if k.Name == name {
			return k, true
		}
	}
	return DriverKind{}, false
}

func launcherKind(name string) (LauncherKind, bool) {
	registry.RLock()
	defer registry.RUnlock()
	for _, k := range registry.launchers {
		if k.Name == name {
			return k, true
		}
	}
	return LauncherKind{}, false
}

// unknownKind is the message for a name that is not registered: the registered ones, and the
// closest of them when it looks like a typo.
func UnknownKind(got string, names []string) string {
	msg := fmt.Sprintf("want one of %s, got %q", strings.Join(names, ", "), got)
	return msg + DidYouMean(got, names)
}

// didYouMean is the one " (did you mean X?)" ending (yamlnode.DidYouMean), for kinds, classes and
// regions.
func DidYouMean(got string, names []string) string { return yamlnode.DidYouMean(got, names) }

// Decoder is what a driver or launcher kind decodes its keys and reports its problems
// with: the fleet parser's own checker (Errf, Str, StrList, IntIn, Positive, Duration,
// Mapping, EachKey, CheckName), so that every problem reads "file:line: field: message" and a
// file's problems are all reported at once.
type Decoder struct {
	*yamlnode.Checker
	p *fleetParser
}

// Path decodes a local path, resolved against the fleet file's directory.
func (d *Decoder) Path(n *yaml.Node, at string) string { return d.p.path(n, at) }

// HTTPURL decodes an http:// or https:// URL without credentials, without a trailing slash.
func (d *Decoder) HTTPURL(n *yaml.Node, at string) string { return d.p.httpURL(n, at) }

// Bool decodes true or false.
func (d *Decoder) Bool(n *yaml.Node, at string) bool { return d.p.boolean(n, at) }

// StoreURL decodes a store URL (a relative file:// directory resolved like the fleet's).
func (d *Decoder) StoreURL(n *yaml.Node, at string) string {
	if s := d.Str(n, at, true); s != "" {
		return d.p.storeURL(n, at, s)
	}
	return ""
}

// Line is the line of a field of the fleet file: "router", "router.<key>" (any key under
// router:), "router.backends.<class>", "router.frontends.<class>", "regions.<name>",
// "regions.<name>.launcher", "regions.<name>.launcher.<key>", "tenants.<class>"; 0 when
// unknown (a problem without a line is still reported, with its field).
func (d *Decoder) Line(field string) int { return d.p.lines.field[field] }

// OpenRouter returns the fleet's router driver, opened by its registered kind.
func OpenRouter(f *Fleet) (router.Driver, error) {
	switch {
	case f.Router.Driver == "":
		return nil, fmt.Errorf("%s: router.driver: required for failover", f.File)
	case f.Router.Config == nil:
		if _, ok := driverKind(f.Router.Driver); !ok {
			return nil, fmt.Errorf("%s: router.driver: %s", f.File, UnknownKind(f.Router.Driver, DriverKinds()))
		}
		return nil, fmt.Errorf("%s: router.driver %s: the fleet was not parsed by ParseFleet (no configuration)", f.File, f.Router.Driver)
	}
	return f.Router.Config.Open(f)
}
