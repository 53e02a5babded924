package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	filerouter "lifeboat/failover/routers/file"
	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/verify/warm"
	"lifeboat/verify/warm/execlauncher"
)

// A driver kind and a launcher kind registered from outside package fleet, as a driver or
// launcher in its own package does: the fleet parser decodes their own keys, reports their
// problems with lines, OpenRouter and warm.FleetBootOptions build them — with no edit to fleet or failover.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: "weights-doc", Config: func() fleet.DriverConfig { return &docConfig{} }})
	fleet.RegisterLauncher(fleet.LauncherKind{Name: "shell", Config: func() fleet.LauncherConfig { return &shellConfig{} }})
}

var (
	_ fleet.DriverConfig   = (*docConfig)(nil)
	_ fleet.LauncherConfig = (*shellConfig)(nil)
)

// docConfig is a driver kind that keeps the weights in a file router's document, with keys of
// its own: document (a path), owners (per class, a team name; each must be a defined class).
type docConfig struct {
	Document   string
	Owners     map[string]string
	ownerLines map[string]int
}

func (c *docConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{
		"document": func(n *yaml.Node, at string) { c.Document = d.Path(n, at) },
		"owners": func(n *yaml.Node, at string) {
			c.Owners, c.ownerLines = map[string]string{}, map[string]int{}
			d.EachKey(n, at, func(k, v *yaml.Node, at string) {
				c.Owners[k.Value], c.ownerLines[k.Value] = d.Str(v, at, true), k.Line
			})
		},
	}
}

func (c *docConfig) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.Document != "", "document", "the weights document")
	for class, line := range c.ownerLines {
		if _, ok := f.Tenants[class]; !ok {
			d.Errf(line, "router.owners."+class, "tenant class %q is not defined under tenants", class)
		}
	}
	d.RequireBackends(f)
}

func (c *docConfig) Open(f *fleet.Fleet) (router.Driver, error) {
	return &filerouter.Router{Path: c.Document}, nil
}

func (c *docConfig) Identity() []string { return []string{c.Document} }

// shellConfig is a launcher kind that runs `sh -c script` on this host.
type shellConfig struct {
	Script string
}

func (c *shellConfig) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"script": func(n *yaml.Node, at string) { c.Script = d.Str(n, at, true) }}
}

func (c *shellConfig) Check(d *fleet.Decoder, f *fleet.Fleet, r *fleet.Region) {
	at := "regions." + r.Name + ".launcher"
	if c.Script == "" {
		d.Errf(d.Line(at), at+".script", "required with kind shell")
	}
}

func (c *shellConfig) Launcher(f *fleet.Fleet, r *fleet.Region, o fleet.LaunchOptions) (launch.Launcher, error) {
	return &execlauncher.Launcher{Command: "/bin/sh -c '" + strings.ReplaceAll(c.Script, "'", `'\''`) + "'"}, nil
}

func TestRegisteredKindsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	flt := `model: {name: demo, manifest: m.json}
regions:
  a:
    replica: ./ra
    launcher: {kind: shell, script: "echo started; exec sleep 30", env: {MODE: drill}}
  b: {replica: ./rb}
tenants: {g: [a, b]}
router:
  driver: weights-doc
  document: weights.json
  backends: {g: doc_g}
  owners: {g: platform}
`
	f, err := fleet.Parse([]byte(flt), filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, ok := f.Router.Config.(*docConfig)
	if !ok || cfg.Document != filepath.Join(dir, "weights.json") || cfg.Owners["g"] != "platform" || f.Router.Backends["g"] != "doc_g" {
		t.Fatalf("router %+v config %+v", f.Router, f.Router.Config)
	}
	d, err := fleet.OpenRouter(f)
	if err != nil {
		t.Fatal(err)
	}
	want := router.RouterState{Weights: router.Weights{"g": {"a": 70, "b": 30}}}
	ctx := context.Background()
	if err := d.Apply(ctx, want); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(ctx); err != nil || !got.Weights.Equal(want.Weights) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	if _, err := os.Stat(cfg.Document); err != nil {
		t.Fatal(err)
	}

	o, err := warm.FleetBootOptions(f, "a", fleet.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if o.NoRestore || !slices.Equal(o.Env, []string{"MODE=drill"}) || !f.Regions["a"].Candidate() {
		t.Fatalf("boot options %+v", o)
	}
	inst, err := o.Launcher.Launch(ctx, launch.Spec{ModelDir: dir, EngineConfig: filepath.Join(dir, "e.yaml"), LogPath: filepath.Join(dir, "a.log")})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(inst.LogTail(5), "started") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if tail := inst.LogTail(5); !strings.Contains(tail, "started") {
		t.Errorf("the shell launcher's process did not run: log %q", tail)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := inst.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Exited():
	default:
		t.Error("stopped, yet not exited")
	}
	if _, err := warm.FleetBootOptions(f, "b", fleet.LaunchOptions{}); err == nil || !strings.Contains(err.Error(), "regions.b has no launcher") {
		t.Errorf("region without a launcher: %v", err)
	}
}

func TestRegisteredKindsProblems(t *testing.T) {
	const head = "model: {name: demo, manifest: m.json}\n"
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"own keys, all at once, with lines", head + `regions:
  a: {replica: ./ra, launcher: {kind: shell}}
tenants: {g: [a]}
router:
  driver: weights-doc
  owners:
    g: platform
    nope: other
  socket: /run/haproxy.sock
  colour: blue
`, []string{
			"fleet.yaml:10: router.socket: unknown key for driver weights-doc (it is for driver haproxy); driver weights-doc takes backends, document, driver, frontends, owners, timeout",
			"fleet.yaml:11: router.colour: unknown key (want one of backends, document, driver, frontends, owners, timeout)",
		}},
		{"cross-checks after decoding", head + `regions:
  a: {replica: ./ra, launcher: {kind: shell}}
tenants: {g: [a]}
router:
  driver: weights-doc
  owners:
    g: platform
    nope: other
`, []string{
			"fleet.yaml:3: regions.a.launcher.script: required with kind shell",
			"fleet.yaml:6: router.document: required with driver weights-doc: the weights document",
			"fleet.yaml:9: router.owners.nope: tenant class \"nope\" is not defined under tenants",
			"fleet.yaml:6: router.backends: class \"g\" has no backend",
		}},
		{"unknown driver", head + "regions: {a: {replica: ./r}}\nrouter: {driver: haproxx, socket: /s}\n",
			[]string{`fleet.yaml:3: router.driver: want one of file, haproxy, caddy, http, weights-doc, got "haproxx" (did you mean haproxy?)`}},
		{"unknown launcher", head + "regions: {a: {replica: ./r, launcher: {kind: shel, script: x}}}\n",
			[]string{`fleet.yaml:2: regions.a.launcher.kind: want one of exec, endpoint, shell, got "shel" (did you mean shell?)`}},
		{"no near name", head + "regions: {a: {replica: ./r}}\nrouter: {driver: kubernetes-gateway}\n",
			[]string{`router.driver: want one of file, haproxy, caddy, http, weights-doc, got "kubernetes-gateway"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := fleet.Parse([]byte(c.yaml), "fleet.yaml")
			var fe *fleet.FleetError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *FleetError", err)
			}
			for _, w := range c.want {
				if !slices.ContainsFunc(fe.Problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("problems\n%s\nlack %q", strings.Join(fe.Problems, "\n"), w)
				}
			}
			if strings.HasPrefix(c.name, "no near") && strings.Contains(err.Error(), "did you mean") {
				t.Errorf("a suggestion for a name near nothing: %v", err)
			}
		})
	}
}

func TestRegisterRefusesDuplicates(t *testing.T) {
	for _, name := range []string{"haproxy", "", "bad name"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterDriver(%q) did not refuse", name)
				}
			}()
			fleet.RegisterDriver(fleet.DriverKind{Name: name, Config: func() fleet.DriverConfig { return &docConfig{} }})
		}()
	}
	if got := fmt.Sprint(fleet.DriverKinds()); got != "[file haproxy caddy http weights-doc]" {
		t.Errorf("driver kinds %s", got)
	}
}
