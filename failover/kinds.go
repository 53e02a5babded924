package failover

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/verify/warm"
)

// The built-in kinds, registered in this order (the order "want one of …" lists them in).
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverFile, Config: func() fleet.DriverConfig { return &FileConfig{} }})
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverHAProxy, Config: func() fleet.DriverConfig { return &HAProxyConfig{} }})
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverCaddy, Config: func() fleet.DriverConfig { return &CaddyConfig{} }})
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverHTTP, Config: func() fleet.DriverConfig { return &HTTPConfig{} }})
	fleet.RegisterLauncher(fleet.LauncherKind{Name: fleet.LauncherExec, Config: func() fleet.LauncherConfig { return &ExecConfig{} }})
	fleet.RegisterLauncher(fleet.LauncherKind{Name: fleet.LauncherEndpoint, Config: func() fleet.LauncherConfig { return &EndpointConfig{} }})
}

// The configurations' interfaces and capabilities, checked at compile time.
var (
	_ fleet.DriverConfig    = (*FileConfig)(nil)
	_ fleet.DriverConfig    = (*HAProxyConfig)(nil)
	_ fleet.DriverConfig    = (*CaddyConfig)(nil)
	_ fleet.DriverConfig    = (*HTTPConfig)(nil)
	_ fleet.CommandLauncher = (*ExecConfig)(nil)
	_ fleet.AttachLauncher  = (*EndpointConfig)(nil)
)

// Identity of the built-in drivers keeps the fleet digest's layout from before kinds were
// registered (socket, url, path), so that runs journaled then are still this fleet's.

// FileConfig is the file driver's configuration: router: {driver: file, path: weights.json}.
type FileConfig struct {
	Path string `json:"path"` // the weights document, resolved against the fleet file's directory
}

func (c *FileConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"path": func(n *yaml.Node, at string) { c.Path = d.Path(n, at) }}
}

func (c *FileConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.Path != "", "path", "the weights document")
	if len(f.Router.Frontends) > 0 {
		d.Errf(d.Line("router"), "router.frontends", "the file driver has no data plane: traffic goes to the receivers' endpoints")
	}
}

func (c *FileConfig) Open(*fleet.Fleet) (router.Driver, error) { return &FileRouter{Path: c.Path}, nil }
func (c *FileConfig) Identity() []string                       { return []string{"", "", c.Path} }

// HAProxyConfig is the HAProxy driver's: router: {driver: haproxy, socket: /run/haproxy/admin.sock}.
type HAProxyConfig struct {
	Socket string `json:"socket"` // the admin socket (level admin)
}

func (c *HAProxyConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"socket": func(n *yaml.Node, at string) { c.Socket = d.Path(n, at) }}
}

func (c *HAProxyConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.Socket != "", "socket", "the admin socket (stats socket ... level admin)")
	d.RequireBackends(f)
}

func (c *HAProxyConfig) Open(f *fleet.Fleet) (router.Driver, error) {
	return &HAProxyRouter{Socket: c.Socket, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout}, nil
}
func (c *HAProxyConfig) Identity() []string { return []string{c.Socket, "", ""} }

// CaddyConfig is the Caddy driver's: router: {driver: caddy, url: http://127.0.0.1:2019}.
type CaddyConfig struct {
	URL string `json:"url"` // Caddy's admin API
	// AllowNoETag: a Caddy that sends no ETag is written after comparing with the run's last
	// read-back immediately before each write (a window remains), instead of refused.
	AllowNoETag bool `json:"allow_no_etag,omitempty"`
}

func (c *CaddyConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"url":           func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) },
		"allow_no_etag": func(n *yaml.Node, at string) { c.AllowNoETag = d.Bool(n, at) },
	}
}

func (c *CaddyConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
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

func (c *CaddyConfig) Open(f *fleet.Fleet) (router.Driver, error) { return NewCaddyRouter(f) }
func (c *CaddyConfig) Identity() []string                         { return []string{"", c.URL, ""} }

// HTTPConfig is the http driver's: router: {driver: http, url: https://router.internal/weights}.
type HTTPConfig struct {
	URL         string `json:"url"` // the base URL of the per-class documents
	AllowNoETag bool   `json:"allow_no_etag,omitempty"`
}

func (c *HTTPConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"url":           func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) },
		"allow_no_etag": func(n *yaml.Node, at string) { c.AllowNoETag = d.Bool(n, at) },
	}
}

func (c *HTTPConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.URL != "", "url", "the base URL of the per-class weight documents")
}

func (c *HTTPConfig) Open(f *fleet.Fleet) (router.Driver, error) {
	return &HTTPRouter{URL: c.URL, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout, AllowNoETag: c.AllowNoETag}, nil
}
func (c *HTTPConfig) Identity() []string { return []string{"", c.URL, ""} }

// ExecConfig is the exec launcher's: launcher: {kind: exec, command: "vllm serve …", port: 8001}.
type ExecConfig struct {
	// Command is the command line (see warm.ExecLauncher), with {{.ModelDir}}, {{.EngineConfig}},
	// {{.Host}} and {{.Port}} (e.g. "vllm serve {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}").
	Command string `json:"command"`
	// Port is the port the replica listens on ({{.Port}}): the one the router's server for this
	// region points at, when a router carries the candidates' traffic. 0: a free port.
	Port int `json:"port,omitempty"`
}

func (c *ExecConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"command": func(n *yaml.Node, at string) {
			c.Command = d.Str(n, at, true)
			if c.Command == "" {
				return
			}
			// Render it once, as the exec launcher will, so that a bad template fails here.
			if err := checkCommand(c.Command); err != nil {
				d.Errf(n.Line, at, "%s (fields: {{.ModelDir}}, {{.EngineConfig}}, {{.Host}}, {{.Port}})", strings.TrimPrefix(err.Error(), "exec launcher: "))
			}
		},
		"port": func(n *yaml.Node, at string) { c.Port = d.IntIn(n, at, 1, 65535) },
	}
}

func checkCommand(cmdline string) error {
	_, err := (&warm.ExecLauncher{Command: cmdline}).CommandArgs(warm.ExecVars{ModelDir: "/m", EngineConfig: "/e", Host: "127.0.0.1", Port: 8000})
	return err
}

func (c *ExecConfig) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	at := "regions." + r.Name + ".launcher"
	if c.Command == "" {
		d.Errf(d.Line(at), at+".command", "an exec launcher needs a command")
	}
	if c.Port == 0 {
		return
	}
	for _, other := range f.RegionNames() {
		if other >= r.Name {
			break
		}
		if o := f.Regions[other].Launcher; o != nil {
			if oc, ok := o.Config.(*ExecConfig); ok && oc.Port == c.Port {
				d.Errf(r.Line, at+".port", "port %d is also %s's: two candidates cannot listen on one port", c.Port, other)
			}
		}
	}
}

func (c *ExecConfig) CommandLine() string { return c.Command }

func (c *ExecConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	cmdline := c.Command
	if o.Command != nil {
		cmdline = o.Command(cmdline)
	}
	if err := checkCommand(cmdline); err != nil {
		return nil, fmt.Errorf("%s: regions.%s.launcher.command: %w", f.File, r.Name, err)
	}
	return &warm.ExecLauncher{Command: cmdline, Port: c.Port}, nil
}

// EndpointConfig is the endpoint launcher's: launcher: {kind: endpoint, url: http://…}; it
// starts nothing and probes a replica already serving.
type EndpointConfig struct {
	URL string `json:"url,omitempty"` // the replica; empty means the region's endpoint
}

func (c *EndpointConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"url": func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) }}
}

func (c *EndpointConfig) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	if c.URL == "" && r.Endpoint == "" {
		d.Errf(r.Line, "regions."+r.Name+".launcher.url", "an endpoint launcher needs a url, or the region's endpoint")
	}
}

func (c *EndpointConfig) AttachesOnly() bool { return true }

func (c *EndpointConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	u := c.URL
	if u == "" {
		u = r.Endpoint
	}
	return &warm.EndpointLauncher{URL: u}, nil
}

// The drivers' capabilities, checked at compile time.
var (
	_ router.ConditionalDriver = (*HTTPRouter)(nil)
	_ router.ConditionalDriver = (*CaddyRouter)(nil)
	_ router.ConditionalDriver = (*HAProxyRouter)(nil)
	_ router.ZeroDrainDriver   = (*CaddyRouter)(nil)
)
