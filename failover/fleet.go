package failover

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/providers"
	"lifeboat/verify/warm"
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
}

// Model names the served model and its DR manifest.
type Model struct {
	Name     string `json:"name"`
	Manifest string `json:"manifest"` // resolved against the fleet file's directory
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
}

// Capacity is what a region was provisioned for.
type Capacity struct {
	Replicas          int     `json:"replicas"`
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
}

// Launcher kinds.
const (
	LauncherExec     = "exec"     // run Command on this host
	LauncherEndpoint = "endpoint" // an already-running replica at URL (or the region's endpoint)
)

// Launcher says how to start a candidate replica of a region.
type Launcher struct {
	Kind string `json:"kind"`
	// Command is the exec launcher's command line (see warm.ExecLauncher), a Go template over
	// .ModelDir, .EngineConfig, .Host and .Port (e.g. "vllm serve {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}").
	Command string            `json:"command,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is the endpoint launcher's replica; empty means the region's endpoint.
	URL string `json:"url,omitempty"`
}

// Router says which driver moves traffic and how it reaches the router.
type Router struct {
	Driver   string            `json:"driver"`
	Socket   string            `json:"socket,omitempty"`
	URL      string            `json:"url,omitempty"`
	Path     string            `json:"path,omitempty"`
	Backends map[string]string `json:"backends,omitempty"` // tenant class → backend name
}

// Router drivers.
var routerDrivers = []string{"file", "haproxy", "http"}

// Policy is the failover section: how fast and how far traffic moves.
type Policy struct {
	StepPercent     int           `json:"step_percent"`
	StepInterval    time.Duration `json:"step_interval"`
	SpillStartMS    int           `json:"spill_start_ms"`
	SpillStopMS     int           `json:"spill_stop_ms"`
	SpillCapPercent int           `json:"spill_cap_percent"`
	Expires         time.Duration `json:"expires"`
}

// Defaults of the failover section.
const (
	DefaultStepPercent     = 10
	DefaultStepInterval    = 60 * time.Second
	DefaultSpillStartMS    = 400
	DefaultSpillStopMS     = 150
	DefaultSpillCapPercent = 30
	DefaultExpires         = 72 * time.Hour
)

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

func (e *FleetError) Is(target error) bool { return target == ErrInvalidFleet }

// maxFleetProblems bounds the problems reported for one file.
const maxFleetProblems = 50

// ParseFleet parses and validates a fleet file. name is used in messages and, when it has a
// directory, to resolve relative paths (model.manifest, file:// replicas and state); an empty
// directory means the current one. Unknown keys, anchors and aliases, duplicate keys, values of
// the wrong type and references to undefined regions or classes are errors; every error is a
// *FleetError naming the line and the field.
func ParseFleet(data []byte, name string) (*Fleet, error) {
	p := &fleetParser{name: name, dir: filepath.Dir(name)}
	if name == "" {
		p.name, p.dir = "fleet", "."
	}
	f := p.parse(data)
	if len(p.problems) > 0 {
		return nil, &FleetError{Problems: p.problems}
	}
	return f, nil
}

type fleetParser struct {
	name, dir string
	problems  []string
}

func (p *fleetParser) errf(line int, field, format string, args ...any) {
	if len(p.problems) >= maxFleetProblems {
		return
	}
	msg := fmt.Sprintf(format, args...)
	switch {
	case line > 0 && field != "":
		p.problems = append(p.problems, fmt.Sprintf("%s:%d: %s: %s", p.name, line, field, msg))
	case line > 0:
		p.problems = append(p.problems, fmt.Sprintf("%s:%d: %s", p.name, line, msg))
	case field != "":
		p.problems = append(p.problems, fmt.Sprintf("%s: %s: %s", p.name, field, msg))
	default:
		p.problems = append(p.problems, fmt.Sprintf("%s: %s", p.name, msg))
	}
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *fleetParser) parse(data []byte) *Fleet {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			p.errf(0, "", "empty file")
			return nil
		}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			p.errf(line, "", "%s", m[2])
		} else {
			p.errf(0, "", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		p.errf(extra.Line, "", "a fleet file holds one YAML document")
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		p.errf(0, "", "empty file")
		return nil
	}
	root := doc.Content[0]
	if !p.noAliases(root) {
		return nil
	}
	f := &Fleet{File: p.name, Regions: map[string]*Region{}, Tenants: map[string][]string{}}
	f.Failover = Policy{DefaultStepPercent, DefaultStepInterval, DefaultSpillStartMS, DefaultSpillStopMS, DefaultSpillCapPercent, DefaultExpires}
	var lines struct{ model, regions, tenants, router, failover int }
	tenantLines, itemLines := map[string]int{}, map[string]int{} // class → line; class NUL region → line
	p.mapping(root, "", true, map[string]func(*yaml.Node, string){
		"model": func(n *yaml.Node, at string) {
			lines.model = n.Line
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"name":     func(n *yaml.Node, at string) { f.Model.Name = p.str(n, at, true) },
				"manifest": func(n *yaml.Node, at string) { f.Model.Manifest = p.path(n, at) },
			})
		},
		"regions": func(n *yaml.Node, at string) {
			lines.regions = n.Line
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				if !p.checkName(k, at) {
					return
				}
				f.Regions[k.Value] = p.region(k.Value, k.Line, v, at)
			})
		},
		"tenants": func(n *yaml.Node, at string) {
			lines.tenants = n.Line
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				if !p.checkName(k, at) {
					return
				}
				f.Tenants[k.Value] = p.strList(v, at)
				tenantLines[k.Value] = k.Line
				for _, c := range v.Content {
					itemLines[k.Value+"\x00"+c.Value] = c.Line
				}
			})
		},
		"router": func(n *yaml.Node, at string) {
			lines.router = n.Line
			f.Router = p.router(n, at)
		},
		"failover": func(n *yaml.Node, at string) {
			lines.failover = n.Line
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"step_percent":      func(n *yaml.Node, at string) { f.Failover.StepPercent = p.intIn(n, at, 1, 100) },
				"step_interval":     func(n *yaml.Node, at string) { f.Failover.StepInterval = p.duration(n, at) },
				"spill_start_ms":    func(n *yaml.Node, at string) { f.Failover.SpillStartMS = p.intIn(n, at, 0, math.MaxInt32) },
				"spill_stop_ms":     func(n *yaml.Node, at string) { f.Failover.SpillStopMS = p.intIn(n, at, 0, math.MaxInt32) },
				"spill_cap_percent": func(n *yaml.Node, at string) { f.Failover.SpillCapPercent = p.intIn(n, at, 0, 100) },
				"expires":           func(n *yaml.Node, at string) { f.Failover.Expires = p.duration(n, at) },
			})
		},
		"state": func(n *yaml.Node, at string) {
			if s := p.str(n, at, true); s != "" {
				f.State = p.storeURL(n, at, s)
			}
		},
		"sla": func(n *yaml.Node, at string) {
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"rto": func(n *yaml.Node, at string) { f.SLA.RTO = p.duration(n, at) },
			})
		},
	})
	if len(p.problems) > 0 {
		return f
	}

	// Cross-references.
	if f.Model.Name == "" {
		p.errf(lines.model, "model.name", "required")
	}
	if f.Model.Manifest == "" {
		p.errf(lines.model, "model.manifest", "required")
	}
	if len(f.Regions) == 0 {
		p.errf(lines.regions, "regions", "at least one region is required")
	}
	for _, class := range sortedKeys(f.Tenants) {
		if len(f.Tenants[class]) == 0 {
			p.errf(tenantLines[class], "tenants."+class, "names no region: a class must have at least one eligible region")
		}
		seen := map[string]bool{}
		for _, r := range f.Tenants[class] {
			if _, ok := f.Regions[r]; !ok {
				p.errf(itemLines[class+"\x00"+r], "tenants."+class, "region %q is not defined under regions", r)
			}
			if seen[r] {
				p.errf(itemLines[class+"\x00"+r], "tenants."+class, "region %q is listed twice", r)
			}
			seen[r] = true
		}
	}
	for _, class := range sortedKeys(f.Router.Backends) {
		if _, ok := f.Tenants[class]; !ok {
			p.errf(lines.router, "router.backends."+class, "tenant class %q is not defined under tenants", class)
		}
	}
	if f.Failover.SpillStopMS > f.Failover.SpillStartMS {
		p.errf(lines.failover, "failover.spill_stop_ms", "%d is above spill_start_ms %d: spilling would never stop", f.Failover.SpillStopMS, f.Failover.SpillStartMS)
	}
	for _, name := range f.RegionNames() {
		r := f.Regions[name]
		if r.Launcher != nil && r.Launcher.Kind == LauncherEndpoint && r.Launcher.URL == "" && r.Endpoint == "" {
			p.errf(r.Line, "regions."+name+".launcher.url", "an endpoint launcher needs a url, or the region's endpoint")
		}
	}
	return f
}

// noAliases rejects anchors, aliases and merge keys: a fleet file is read by people during an
// outage, and must mean what it says on each line.
func (p *fleetParser) noAliases(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		p.errf(n.Line, "", "YAML anchors and aliases are not supported in a fleet file")
		return false
	}
	for _, c := range n.Content {
		if !p.noAliases(c) {
			return false
		}
	}
	return true
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// eachKey walks a mapping whose keys are names (regions, tenant classes, env variables).
func (p *fleetParser) eachKey(n *yaml.Node, at string, fn func(k, v *yaml.Node, at string)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n.Line, at, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errf(k.Line, at, "keys must be plain names")
			continue
		}
		if seen[k.Value] {
			p.errf(k.Line, join(at, k.Value), "defined twice")
			continue
		}
		seen[k.Value] = true
		fn(k, v, join(at, k.Value))
	}
}

// mapping walks a mapping with a fixed set of keys: an unknown or repeated key is an error.
func (p *fleetParser) mapping(n *yaml.Node, at string, top bool, fields map[string]func(*yaml.Node, string)) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && !top {
		return
	}
	if n.Kind != yaml.MappingNode {
		what := at
		if top {
			what = ""
		}
		p.errf(n.Line, what, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fn, ok := fields[k.Value]
		switch {
		case k.Kind != yaml.ScalarNode:
			p.errf(k.Line, at, "keys must be plain names")
		case !ok:
			p.errf(k.Line, join(at, k.Value), "unknown key (want one of %s)", strings.Join(sortedKeys(fields), ", "))
		case seen[k.Value]:
			p.errf(k.Line, join(at, k.Value), "defined twice")
		default:
			seen[k.Value] = true
			fn(v, join(at, k.Value))
		}
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func (p *fleetParser) checkName(k *yaml.Node, at string) bool {
	if !nameRE.MatchString(k.Value) {
		p.errf(k.Line, at, "not a valid name (letters, digits, '.', '_', '-'; at most 63)")
		return false
	}
	return true
}

func (p *fleetParser) str(n *yaml.Node, at string, required bool) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		if required || n.Kind != yaml.ScalarNode {
			p.errf(n.Line, at, "want a string, got %s", kindName(n))
		}
		return ""
	}
	if required && strings.TrimSpace(n.Value) == "" {
		p.errf(n.Line, at, "must not be empty")
	}
	return n.Value
}

func (p *fleetParser) strList(n *yaml.Node, at string) []string {
	if n.Kind != yaml.SequenceNode {
		p.errf(n.Line, at, "want a list of region names, got %s", kindName(n))
		return nil
	}
	out := []string{}
	for i, c := range n.Content {
		if s := p.str(c, fmt.Sprintf("%s[%d]", at, i), true); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (p *fleetParser) intIn(n *yaml.Node, at string, lo, hi int) int {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errf(n.Line, at, "want a whole number, got %s", kindName(n))
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		p.errf(n.Line, at, "want a whole number from %d to %d, got %s", lo, hi, n.Value)
		return 0
	}
	return int(v)
}

func (p *fleetParser) positive(n *yaml.Node, at string) float64 {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errf(n.Line, at, "want a number, got %s", kindName(n))
		return 0
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		p.errf(n.Line, at, "want a number above 0, got %s", n.Value)
		return 0
	}
	return v
}

func (p *fleetParser) duration(n *yaml.Node, at string) time.Duration {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n.Line, at, "want a duration such as 60s or 30m, got %s", kindName(n))
		return 0
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d <= 0 {
		p.errf(n.Line, at, "want a positive duration such as 60s or 30m, got %q", n.Value)
		return 0
	}
	return d
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
				"replicas":             func(n *yaml.Node, at string) { r.Capacity.Replicas = p.intIn(n, at, 0, math.MaxInt32) },
				"prefill_tokens_per_s": func(n *yaml.Node, at string) { r.Capacity.PrefillTokensPerS = p.positive(n, at) },
			})
		},
		"launcher": func(n *yaml.Node, at string) { r.Launcher = p.launcher(n, at) },
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
	l := &Launcher{}
	var kindLine int
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"kind": func(n *yaml.Node, at string) {
			kindLine = n.Line
			l.Kind = p.str(n, at, true)
			if l.Kind != "" && l.Kind != LauncherExec && l.Kind != LauncherEndpoint {
				p.errf(n.Line, at, "want exec or endpoint, got %q", l.Kind)
			}
		},
		"command": func(n *yaml.Node, at string) {
			l.Command = p.str(n, at, true)
			if l.Command == "" {
				return
			}
			// Render it once, as the exec launcher will, so that a bad template fails here.
			el := &warm.ExecLauncher{Command: l.Command}
			if _, err := el.CommandArgs(warm.ExecVars{ModelDir: "/m", EngineConfig: "/e", Host: "127.0.0.1", Port: 8000}); err != nil {
				p.errf(n.Line, at, "%s (fields: {{.ModelDir}}, {{.EngineConfig}}, {{.Host}}, {{.Port}})", strings.TrimPrefix(err.Error(), "exec launcher: "))
			}
		},
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
		"url": func(n *yaml.Node, at string) { l.URL = p.httpURL(n, at) },
	})
	switch {
	case l.Kind == "" && kindLine == 0:
		p.errf(n.Line, at+".kind", "required: exec or endpoint")
	case l.Kind == LauncherExec && l.Command == "":
		p.errf(n.Line, at+".command", "an exec launcher needs a command")
	case l.Kind == LauncherEndpoint && l.Command != "":
		p.errf(n.Line, at+".command", "an endpoint launcher starts nothing; remove the command")
	case l.Kind == LauncherExec && l.URL != "":
		p.errf(n.Line, at+".url", "an exec launcher listens on the port it is given; remove the url")
	}
	return l
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p *fleetParser) router(n *yaml.Node, at string) Router {
	var r Router
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"driver": func(n *yaml.Node, at string) {
			r.Driver = p.str(n, at, true)
			ok := false
			for _, d := range routerDrivers {
				ok = ok || d == r.Driver
			}
			if r.Driver != "" && !ok {
				p.errf(n.Line, at, "want one of %s, got %q", strings.Join(routerDrivers, ", "), r.Driver)
			}
		},
		"socket": func(n *yaml.Node, at string) { r.Socket = p.str(n, at, true) },
		"url":    func(n *yaml.Node, at string) { r.URL = p.httpURL(n, at) },
		"path":   func(n *yaml.Node, at string) { r.Path = p.path(n, at) },
		"backends": func(n *yaml.Node, at string) {
			r.Backends = map[string]string{}
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				if s := p.str(v, at, true); s != "" {
					r.Backends[k.Value] = s
				}
			})
		},
	})
	if n.Kind == yaml.MappingNode && r.Driver == "" {
		p.errf(n.Line, at+".driver", "required: one of %s", strings.Join(routerDrivers, ", "))
	}
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
