package endpoint

import (
	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/internal/base/yamlnode"
)

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterLauncher(fleet.LauncherKind{Name: fleet.LauncherEndpoint, Order: 2, Config: func() fleet.LauncherConfig { return &Config{} }})
}

// The configuration's interface and capabilities, checked at compile time.
var _ fleet.AttachLauncher = (*Config)(nil)

// Config is the endpoint launcher's: launcher: {kind: endpoint, url: http://…}; it
// starts nothing and probes a replica already serving.
type Config struct {
	URL string `json:"url,omitempty"` // the replica; empty means the region's endpoint
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"url": func(n *yaml.Node, at string) { c.URL = d.HTTPURL(n, at) }}
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	if c.URL == "" && r.Endpoint == "" {
		d.Errf(r.Line, "regions."+r.Name+".launcher.url", "an endpoint launcher needs a url, or the region's endpoint")
	}
}

func (c *Config) AttachesOnly() bool { return true }

func (c *Config) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	u := c.URL
	if u == "" {
		u = r.Endpoint
	}
	return &Launcher{URL: u}, nil
}
