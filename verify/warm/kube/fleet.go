package kube

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/providers"
)

// Kind is the launcher kind's name in a fleet file (launcher: {kind: kubernetes, …}).
const Kind = "kubernetes"

func init() {
	fleet.RegisterLauncher(fleet.LauncherKind{Name: Kind, Order: 3, Config: func() fleet.LauncherConfig { return &FleetConfig{} }})
}

var (
	_ fleet.LauncherConfig  = (*FleetConfig)(nil)
	_ fleet.InPlaceLauncher = (*FleetConfig)(nil)
	_ fleet.LeftoverCleaner = (*Launcher)(nil)
	_ fleet.BootChecker     = (*Launcher)(nil)
)

// FleetConfig is a region's launcher: {kind: kubernetes, …} as the fleet file says it.
type FleetConfig struct {
	Kubeconfig      string        `json:"kubeconfig,omitempty"`
	Context         string        `json:"context,omitempty"`
	Namespace       string        `json:"namespace"`
	URL             string        `json:"url,omitempty"`
	Image           string        `json:"image"`
	Port            int           `json:"port,omitempty"`
	ModelVolume     string        `json:"model_volume,omitempty"`
	EngineVolume    string        `json:"engine_volume,omitempty"`
	RestoreSecret   string        `json:"restore_secret,omitempty"`
	ScheduleTimeout time.Duration `json:"schedule_timeout,omitempty"`
	Heartbeat       time.Duration `json:"heartbeat,omitempty"`
	TeardownTimeout time.Duration `json:"teardown_timeout,omitempty"`
	// ReplaceInitContainers names the bundle's init containers that write into the model (or
	// engine) volume and that Lifeboat's own restore replaces; any other such init container is
	// refused.
	ReplaceInitContainers []string `json:"replace_init_containers,omitempty"`
	// Allow names what the content policy (policy.go) refuses by default: privileged,
	// host-path, host-network … (AllowKeys).
	Allow []string `json:"allow,omitempty"`
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

func (c *FleetConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	name := func(n *yaml.Node, at string) string {
		s := d.Str(n, at, true)
		if s != "" && !dnsLabelRE.MatchString(s) {
			d.Errf(n.Line, at, "%q is not a Kubernetes name (lower-case letters, digits and '-', at most 63)", s)
			return ""
		}
		return s
	}
	return yamlnode.Fields{
		"kubeconfig":       func(n *yaml.Node, at string) { c.Kubeconfig = d.Path(n, at) },
		"context":          func(n *yaml.Node, at string) { c.Context = d.Str(n, at, true) },
		"namespace":        func(n *yaml.Node, at string) { c.Namespace = name(n, at) },
		"url":              func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) },
		"image":            func(n *yaml.Node, at string) { c.Image = d.Str(n, at, true) },
		"port":             func(n *yaml.Node, at string) { c.Port = d.IntIn(n, at, 1, 65535) },
		"model_volume":     func(n *yaml.Node, at string) { c.ModelVolume = name(n, at) },
		"engine_volume":    func(n *yaml.Node, at string) { c.EngineVolume = name(n, at) },
		"restore_secret":   func(n *yaml.Node, at string) { c.RestoreSecret = d.Str(n, at, true) },
		"schedule_timeout": func(n *yaml.Node, at string) { c.ScheduleTimeout = zeroOrDuration(d, n, at) },
		"heartbeat":        func(n *yaml.Node, at string) { c.Heartbeat = d.Duration(n, at) },
		"teardown_timeout": func(n *yaml.Node, at string) { c.TeardownTimeout = d.Duration(n, at) },
		"replace_init_containers": func(n *yaml.Node, at string) {
			seen := map[string]bool{}
			for i, s := range d.StrList(n, at, "init container names") {
				if !dnsLabelRE.MatchString(s) {
					d.Errf(n.Content[i].Line, fmt.Sprintf("%s[%d]", at, i), "%q is not a container name (lower-case letters, digits and '-', at most 63)", s)
					continue
				}
				if seen[s] {
					d.Errf(n.Content[i].Line, fmt.Sprintf("%s[%d]", at, i), "%s is listed twice", s)
					continue
				}
				seen[s] = true
				c.ReplaceInitContainers = append(c.ReplaceInitContainers, s)
			}
		},
		"allow": func(n *yaml.Node, at string) {
			seen := map[string]bool{}
			for i, s := range d.StrList(n, at, "content policy keys") {
				iat := fmt.Sprintf("%s[%d]", at, i)
				switch {
				case !slices.Contains(AllowKeys, s):
					d.Errf(n.Content[i].Line, iat, "want one of %s, got %q%s", strings.Join(AllowKeys, ", "), s, yamlnode.DidYouMean(s, AllowKeys))
				case seen[s]:
					d.Errf(n.Content[i].Line, iat, "%s is listed twice", s)
				default:
					seen[s] = true
					c.Allow = append(c.Allow, s)
				}
			}
		},
	}
}

// zeroOrDuration decodes a duration that may be 0 (schedule_timeout's default: at once).
func zeroOrDuration(d *fleet.Decoder, n *yaml.Node, at string) time.Duration {
	if n.Kind == yaml.ScalarNode && !yamlnode.IsNull(n) {
		if v, err := time.ParseDuration(n.Value); err == nil && v == 0 {
			return 0
		}
	}
	return d.Duration(n, at)
}

func (c *FleetConfig) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	at := "regions." + r.Name + ".launcher"
	if c.Namespace == "" {
		d.Errf(d.Line(at), at+".namespace", "a kubernetes launcher needs the namespace it boots in")
	}
	if c.Image == "" {
		d.Errf(d.Line(at), at+".image", "a kubernetes launcher needs the lifeboat image its init container restores the model with")
	}
	if r.Launcher == nil {
		return
	}
	keys := make([]string, 0, len(r.Launcher.Env))
	for k := range r.Launcher.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if providers.SecretEnvName(k) {
			d.Errf(d.Line(at), at+".env."+k, "looks like a secret: a kubernetes launcher would write it into the Deployment in clear; put it in a Secret the bundle's manifests reference")
		}
	}
}

// RestoresModelInPlace: the pod's init container restores the model (fleet.InPlaceLauncher).
func (c *FleetConfig) RestoresModelInPlace() bool { return true }

// Config is the launcher configuration for region r of fleet f.
func (c *FleetConfig) Config(f *fleet.Fleet, r *fleet.Region) Config {
	cfg := Config{
		Region: r.Name, Kubeconfig: c.Kubeconfig, Context: c.Context, Namespace: c.Namespace, URL: c.URL,
		Image: c.Image, Replica: r.Replica, RestoreSecret: c.RestoreSecret, Port: c.Port,
		ModelVolume: c.ModelVolume, EngineVolume: c.EngineVolume,
		ScheduleTimeout: c.ScheduleTimeout, Heartbeat: c.Heartbeat, TeardownTimeout: c.TeardownTimeout,
		ReplaceInitContainers: c.ReplaceInitContainers, Allow: c.Allow,
	}
	if r.Launcher != nil {
		keys := make([]string, 0, len(r.Launcher.Env))
		for k := range r.Launcher.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cfg.Env = append(cfg.Env, k+"="+r.Launcher.Env[k])
		}
	}
	return cfg
}

func (c *FleetConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	cfg := c.Config(f, r)
	cfg.Log = o.Log
	l, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: regions.%s.launcher: %w", f.File, r.Name, err)
	}
	return l, nil
}
