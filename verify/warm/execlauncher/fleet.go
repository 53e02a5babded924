package execlauncher

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/internal/base/yamlnode"
)

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterLauncher(fleet.LauncherKind{Name: fleet.LauncherExec, Order: 1, Config: func() fleet.LauncherConfig { return &Config{} }})
}

// The configuration's interface and capabilities, checked at compile time.
var _ fleet.CommandLauncher = (*Config)(nil)

// Config is the exec launcher's: launcher: {kind: exec, command: "vllm serve …", port: 8001}.
type Config struct {
	// Command is the command line (see Launcher), with {{.ModelDir}}, {{.EngineConfig}},
	// {{.Host}} and {{.Port}} (e.g. "vllm serve {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}").
	Command string `json:"command"`
	// Port is the port the replica listens on ({{.Port}}): the one the router's server for this
	// region points at, when a router carries the candidates' traffic. 0: a free port.
	Port int `json:"port,omitempty"`
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
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
	_, err := (&Launcher{Command: cmdline}).CommandArgs(Vars{ModelDir: "/m", EngineConfig: "/e", Host: "127.0.0.1", Port: 8000})
	return err
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
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
			if oc, ok := o.Config.(*Config); ok && oc.Port == c.Port {
				d.Errf(r.Line, at+".port", "port %d is also %s's: two candidates cannot listen on one port", c.Port, other)
			}
		}
	}
}

func (c *Config) CommandLine() string { return c.Command }

func (c *Config) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	cmdline := c.Command
	if o.Command != nil {
		cmdline = o.Command(cmdline)
	}
	if err := checkCommand(cmdline); err != nil {
		return nil, fmt.Errorf("%s: regions.%s.launcher.command: %w", f.File, r.Name, err)
	}
	return &Launcher{Command: cmdline, Port: c.Port}, nil
}
