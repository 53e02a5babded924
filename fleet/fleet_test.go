package fleet_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/failover/routers/haproxy"
	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/verify/warm"
	"lifeboat/verify/warm/execlauncher"
)

func TestParseFleetFull(t *testing.T) {
	data, err := os.ReadFile("testdata/fleet/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse(data, "/etc/lifeboat/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Model.Name != "llama-3.3-70b-instruct-awq" || f.Model.Manifest != "/etc/lifeboat/dr/manifest.json" {
		t.Errorf("model %+v", f.Model)
	}
	if got := strings.Join(f.RegionNames(), ","); got != "ap-southeast-1,eu-central-1,eu-west-1,us-east-1,us-west-2" {
		t.Errorf("regions %s", got)
	}
	use1 := f.Regions["us-east-1"]
	if use1.Geo != "us" || use1.Replica != "s3://models-use1/llama-3.3-70b-awq" || use1.Endpoint != "http://vllm-use1.internal:8000" ||
		use1.Capacity != (fleet.Capacity{Replicas: 60, PrefillTokensPerS: 8000}) || use1.Launcher == nil || use1.Launcher.Kind != fleet.LauncherExec ||
		!strings.Contains(use1.Launcher.Config.(*execlauncher.Config).Command, "{{.ModelDir}}") || use1.Line != 5 {
		t.Errorf("us-east-1 %+v %+v", use1, use1.Launcher)
	}
	if r := f.Regions["eu-west-1"]; r.Launcher != nil || r.Replica != "az://acct/models/llama-3.3-70b-awq" {
		t.Errorf("eu-west-1 %+v", r)
	}
	if r := f.Regions["eu-central-1"]; r.Launcher.Kind != fleet.LauncherEndpoint || r.Capacity.PrefillTokensPerS != 6000.5 || r.Endpoint != "https://vllm-euc1.internal" {
		t.Errorf("eu-central-1 %+v", r)
	}
	usw2 := f.Regions["us-west-2"]
	if usw2.Replica != "file:///etc/lifeboat/replicas/usw2" || usw2.Launcher.Env["CUDA_VISIBLE_DEVICES"] != "0,1" || len(usw2.Launcher.Env) != 2 {
		t.Errorf("us-west-2 %+v %+v", usw2, usw2.Launcher)
	}
	if got := strings.Join(f.Tenants["global"], ","); got != "us-east-1,us-west-2,eu-west-1,ap-southeast-1" {
		t.Errorf("tenants.global %s (want file order)", got)
	}
	if f.Router.Driver != "haproxy" || f.Router.Backends["eu-only"] != "be_eu" || f.Router.Config.(*haproxy.Config).Socket != "/run/haproxy/admin.sock" {
		t.Errorf("router %+v", f.Router)
	}
	want := fleet.DefaultPolicy()
	want.StepPercent, want.StepInterval, want.SpillStartMS, want.SpillStopMS, want.SpillCapPercent, want.Expires = 10, time.Minute, 400, 150, 30, 72*time.Hour
	if f.Failover != want {
		t.Errorf("failover %+v", f.Failover)
	}
	if f.State != "file:///etc/lifeboat/.lifeboat" || f.SLA.RTO != 30*time.Minute {
		t.Errorf("state %q sla %+v", f.State, f.SLA)
	}
}

func TestParseFleetMinimalDefaults(t *testing.T) {
	data, _ := os.ReadFile("testdata/fleet/minimal.yaml")
	f, err := fleet.Parse(data, "fleet.yaml") // no directory: relative to the working directory
	if err != nil {
		t.Fatal(err)
	}
	if f.Model.Manifest != "/abs/manifest.json" || f.Regions["local"].Replica != "./replica" {
		t.Errorf("%+v %+v", f.Model, f.Regions["local"])
	}
	if f.Failover.StepPercent != fleet.DefaultStepPercent || f.Failover.Expires != fleet.DefaultExpires || f.Regions["local"].Launcher != nil {
		t.Errorf("defaults %+v", f.Failover)
	}
	dir := t.TempDir()
	f, err = fleet.Parse(data, filepath.Join(dir, "fleet.yaml"))
	if err != nil || f.Regions["local"].Replica != "file://"+filepath.Join(dir, "replica") {
		t.Errorf("relative replica against the file's directory: %v %+v", err, f)
	}
}

// A drill through a router: each candidate listens on the port the router's server points at,
// and each class's traffic enters at its frontend.
func TestParseFleetLauncherPortAndFrontends(t *testing.T) {
	f, err := fleet.Parse([]byte(`model: {name: demo, manifest: m.json}
regions:
  a: {replica: ./r, launcher: {kind: exec, command: "serve --port {{.Port}}", port: 18101}}
tenants: {g: [a]}
router: {driver: haproxy, socket: /s, backends: {g: be_g}, frontends: {g: "http://127.0.0.1:18111"}}
`), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Regions["a"].Launcher.Config.(*execlauncher.Config).Port != 18101 || f.Router.Frontends["g"] != "http://127.0.0.1:18111" {
		t.Fatalf("launcher %+v frontends %v", f.Regions["a"].Launcher, f.Router.Frontends)
	}
	o, err := warm.FleetBootOptions(f, "a", fleet.LaunchOptions{})
	if el, ok := o.Launcher.(*execlauncher.Launcher); err != nil || !ok || el.Port != 18101 {
		t.Fatalf("boot options: %v %+v", err, o.Launcher)
	}
}

func TestParseFleetErrors(t *testing.T) {
	const head = "model: {name: demo, manifest: m.json}\n"
	for _, c := range []struct {
		name, yaml string
		want       []string // each must appear in the error
	}{
		{"empty", "", []string{"fleet.yaml: empty file"}},
		{"comment only", "# nothing\n", []string{"fleet.yaml: empty file"}},
		{"not yaml", "model: [\n", []string{"fleet.yaml:"}},
		{"scalar root", "hello\n", []string{"fleet.yaml:1: want a mapping"}},
		{"two docs", head + "regions: {a: {replica: ./r}}\n---\nx: 1\n", []string{"one YAML document"}},
		{"unknown top", head + "regions: {a: {replica: ./r}}\nregion: {}\n", []string{"fleet.yaml:3: region: unknown key"}},
		{"unknown nested", head + "regions:\n  a:\n    replica: ./r\n    replicas: 3\n", []string{"fleet.yaml:5: regions.a.replicas: unknown key"}},
		{"launcher kind", "model: {name: demo, manifest: m.json}\nregions:\n  eu-west-1:\n    replica: ./r\n    launcher:\n      kind: docker\n",
			[]string{"fleet.yaml:6: regions.eu-west-1.launcher.kind: want one of exec, endpoint"}},
		{"exec without command", head + "regions:\n  a: {replica: ./r, launcher: {kind: exec}}\n", []string{"regions.a.launcher.command: an exec launcher needs a command"}},
		{"launcher without kind", head + "regions:\n  a: {replica: ./r, launcher: {command: x}}\n", []string{"regions.a.launcher.kind: required"}},
		{"bad template", head + "regions:\n  a: {replica: ./r, launcher: {kind: exec, command: 'serve {{.Model}}'}}\n", []string{"fleet.yaml:3: regions.a.launcher.command:"}},
		{"endpoint without url", head + "regions:\n  a: {replica: ./r, launcher: {kind: endpoint}}\n", []string{"regions.a.launcher.url: an endpoint launcher needs a url"}},
		{"tenant undefined region", head + "regions: {eu-west-1: {replica: ./r}}\ntenants:\n  eu-only: [eu-west-1, eu-north-9]\n",
			[]string{"fleet.yaml:4: tenants.eu-only: region \"eu-north-9\" is not defined"}},
		{"tenant empty", head + "regions: {a: {replica: ./r}}\ntenants: {eu-only: []}\n", []string{"tenants.eu-only: names no region"}},
		{"tenant dup", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a, a]}\n", []string{"listed twice"}},
		{"tenant not list", head + "regions: {a: {replica: ./r}}\ntenants: {g: a}\n", []string{"tenants.g: want a list"}},
		{"backend undefined class", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: file, backends: {eu: be}}\n",
			[]string{"router.backends.eu: tenant class \"eu\" is not defined"}},
		{"driver", head + "regions: {a: {replica: ./r}}\nrouter: {driver: nginx}\n", []string{"fleet.yaml:3: router.driver: want one of file, haproxy, caddy, http"}},
		{"endpoint url", head + "regions: {a: {replica: ./r, endpoint: 'ftp://x'}}\n", []string{"regions.a.endpoint: want an http:// or https:// URL"}},
		{"endpoint creds", head + "regions: {a: {replica: ./r, endpoint: 'http://u:p@x'}}\n", []string{"credentials"}},
		{"replica url", head + "regions: {a: {replica: 's3://Bad_Bucket/x'}}\n", []string{"fleet.yaml:2: regions.a.replica:", "bucket"}},
		{"state on a registry", head + "regions: {a: {replica: ./r}}\nstate: 'oci://127.0.0.1:5000/lifeboat/state:v1'\n",
			[]string{"fleet.yaml:3: state:", "cannot be a state store", "no compare-and-swap", "no listing by prefix"}},
		{"replica required", head + "regions:\n  a: {geo: eu}\n", []string{"fleet.yaml:3: regions.a.replica: required"}},
		{"duration", head + "regions: {a: {replica: ./r}}\nfailover: {step_interval: 60}\n", []string{"fleet.yaml:3: failover.step_interval: want a positive duration"}},
		{"duration neg", head + "regions: {a: {replica: ./r}}\nsla: {rto: -5m}\n", []string{"sla.rto: want a positive duration"}},
		{"percent", head + "regions: {a: {replica: ./r}}\nfailover: {step_percent: 150}\n", []string{"failover.step_percent: want a whole number from 1 to 100"}},
		{"int type", head + "regions: {a: {replica: ./r, capacity: {replicas: many}}}\n", []string{"regions.a.capacity.replicas: want a whole number"}},
		{"prefill", head + "regions: {a: {replica: ./r, capacity: {prefill_tokens_per_s: 0}}}\n", []string{"prefill_tokens_per_s: want a number above 0"}},
		{"hysteresis", head + "regions: {a: {replica: ./r}}\nfailover: {spill_start_ms: 100, spill_stop_ms: 200}\n", []string{"failover.spill_stop_ms"}},
		{"lock ttl short", head + "regions: {a: {replica: ./r}}\nfailover: {lock_ttl: 500ms}\n", []string{"fleet.yaml:3: failover.lock_ttl: 500ms is outside 1s–1h0m0s"}},
		{"lock ttl long", head + "regions: {a: {replica: ./r}}\nfailover: {lock_ttl: 2h}\n", []string{"fleet.yaml:3: failover.lock_ttl: 2h0m0s is outside"}},
		{"lock ttl type", head + "regions: {a: {replica: ./r}}\nfailover: {lock_ttl: 60}\n", []string{"fleet.yaml:3: failover.lock_ttl: want a positive duration"}},
		{"no etag driver", head + "regions: {a: {replica: ./r}}\nrouter: {driver: file, path: w.json, allow_no_etag: true}\n", []string{"fleet.yaml:3: router.allow_no_etag: unknown key for driver file (it is for driver caddy, http)"}},
		{"no etag type", head + "regions: {a: {replica: ./r}}\nrouter: {driver: http, url: 'http://x', allow_no_etag: yes}\n", []string{"router.allow_no_etag: want true or false"}},
		{"dup key", head + "regions: {a: {replica: ./r}}\nsla: {rto: 1m}\nsla: {rto: 2m}\n", []string{"fleet.yaml:"}},
		{"dup region", head + "regions:\n  a: {replica: ./r}\n  a: {replica: ./s}\n", []string{"fleet.yaml:"}},
		{"alias", "model: &m {name: demo, manifest: m.json}\nregions: {a: {replica: ./r}}\nsla: *m\n", []string{"anchors and aliases"}},
		{"merge", "base: &b {replica: ./r}\n", []string{"anchors and aliases"}},
		{"missing model", "regions: {a: {replica: ./r}}\n", []string{"model.name: required", "model.manifest: required"}},
		{"missing regions", head, []string{"regions: at least one region"}},
		{"region name", head + "regions: {'a b': {replica: ./r}}\n", []string{"regions.a b: not a valid name"}},
		{"manifest url", "model: {name: demo, manifest: 's3://b/m.json'}\nregions: {a: {replica: ./r}}\n", []string{"model.manifest: want a local path"}},
		{"env name", head + "regions: {a: {replica: ./r, launcher: {kind: exec, command: x, env: {'A-B': '1'}}}}\n", []string{"launcher.env.A-B: not an environment variable name"}},
		{"haproxy needs socket", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: haproxy, backends: {g: be_g}}\n",
			[]string{"fleet.yaml:4: router.socket: required with driver haproxy"}},
		{"haproxy class without backend", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a], e: [a]}\nrouter: {driver: haproxy, socket: /s, backends: {g: be_g}}\n",
			[]string{"fleet.yaml:4: router.backends: class \"e\" has no backend"}},
		{"shared backend", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a], e: [a]}\nrouter:\n  driver: haproxy\n  socket: /s\n  backends:\n    g: be\n    e: be\n",
			[]string{"fleet.yaml:8: router.backends.g: backend \"be\" is also class e's"}},
		{"caddy needs endpoints", head + "regions:\n  a: {replica: ./r}\ntenants: {g: [a]}\nrouter: {driver: caddy, url: 'http://127.0.0.1:2019', backends: {g: g}}\n",
			[]string{"fleet.yaml:3: regions.a.endpoint: required with driver caddy"}},
		{"file needs path", head + "regions: {a: {replica: ./r}}\nrouter: {driver: file}\n", []string{"router.path: required with driver file"}},
		{"http needs url", head + "regions: {a: {replica: ./r}}\nrouter: {driver: http}\n", []string{"router.url: required with driver http"}},
		{"backend name", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: file, path: w.json, backends: {g: 'a b'}}\n", []string{"router.backends.g: not a valid backend name"}},
		{"hysteresis equal", head + "regions: {a: {replica: ./r}}\nfailover:\n  spill_start_ms: 200\n  spill_stop_ms: 200\n", []string{"fleet.yaml:5: failover.spill_stop_ms: 200 is not below spill_start_ms 200"}},
		{"step interval zero", head + "regions: {a: {replica: ./r}}\nfailover: {step_interval: 0s}\n", []string{"failover.step_interval: want a positive duration"}},
		{"cap", head + "regions: {a: {replica: ./r}}\nfailover: {spill_cap_percent: 101}\n", []string{"failover.spill_cap_percent: want a whole number from 0 to 100"}},
		{"transitions", head + "regions: {a: {replica: ./r}}\nfailover: {max_transitions_per_hour: 0}\n", []string{"failover.max_transitions_per_hour: want a whole number from 1"}},
		{"signals url", head + "regions: {a: {replica: ./r, signals: {metrics: 'x'}}}\n", []string{"regions.a.signals.metrics: want an http"}},
		{"env value", head + "regions: {a: {replica: ./r, launcher: {kind: exec, command: x, env: {A: [1]}}}}\n", []string{"launcher.env.A: want a string"}},
		{"launcher port range", head + "regions: {a: {replica: ./r, launcher: {kind: exec, command: x, port: 70000}}}\n", []string{"regions.a.launcher.port: want a whole number from 1 to 65535"}},
		{"endpoint launcher port", head + "regions: {a: {replica: ./r, endpoint: 'http://h:1', launcher: {kind: endpoint, port: 80}}}\n", []string{"regions.a.launcher.port: unknown key for launcher kind endpoint (it is for launcher kind exec)"}},
		{"launcher port shared", head + "regions:\n  a: {replica: ./r, launcher: {kind: exec, command: x, port: 9000}}\n  b: {replica: ./r, launcher: {kind: exec, command: x, port: 9000}}\n", []string{"fleet.yaml:4: regions.b.launcher.port: port 9000 is also a's"}},
		{"frontend undefined class", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: haproxy, socket: /s, backends: {g: be_g}, frontends: {eu: 'http://127.0.0.1:1'}}\n",
			[]string{"router.frontends.eu: tenant class \"eu\" is not defined"}},
		{"frontend url", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: haproxy, socket: /s, backends: {g: be_g}, frontends: {g: 'ftp://x'}}\n", []string{"router.frontends.g: want an http"}},
		{"file frontends", head + "regions: {a: {replica: ./r}}\ntenants: {g: [a]}\nrouter: {driver: file, path: w.json, frontends: {g: 'http://127.0.0.1:1'}}\n", []string{"router.frontends: the file driver has no data plane"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := fleet.Parse([]byte(c.yaml), "fleet.yaml")
			if err == nil {
				t.Fatalf("accepted: %+v", f)
			}
			if !errors.Is(err, fleet.ErrInvalidFleet) {
				t.Errorf("error %v does not match ErrInvalidFleet", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Every seed under testdata/fleet is parsed without panicking, and the valid ones round-trip
// their region names into tenant classes that only name defined regions.
func FuzzParseFleet(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fleet/*.yaml")
	if len(seeds) == 0 {
		f.Fatal("no seeds under testdata/fleet")
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := fleet.Parse(data, "dir/fleet.yaml")
		if err != nil {
			if fl != nil {
				t.Fatal("a fleet and an error")
			}
			var fe *fleet.FleetError
			if !errors.As(err, &fe) || len(fe.Problems) == 0 || len(fe.Problems) > fleet.MaxProblems {
				t.Fatalf("error %T %v", err, err)
			}
			for _, p := range fe.Problems {
				if !strings.HasPrefix(p, "dir/fleet.yaml") {
					t.Fatalf("problem %q does not name the file", p)
				}
			}
			return
		}
		if fl.Model.Name == "" || fl.Model.Manifest == "" || len(fl.Regions) == 0 {
			t.Fatalf("accepted without model or regions: %+v", fl)
		}
		for class, regions := range fl.Tenants {
			if len(regions) == 0 {
				t.Fatalf("class %s with no region accepted", class)
			}
			for _, r := range regions {
				if fl.Regions[r] == nil {
					t.Fatalf("class %s names undefined region %q", class, r)
				}
			}
		}
		for name, r := range fl.Regions {
			if r.Replica == "" {
				t.Fatalf("region %s without a replica", name)
			}
			if l := r.Launcher; l != nil && l.Kind != fleet.LauncherExec && l.Kind != fleet.LauncherEndpoint {
				t.Fatalf("region %s launcher kind %q", name, l.Kind)
			}
		}
		for class, b := range fl.Router.Backends {
			if _, ok := fl.Tenants[class]; !ok {
				t.Fatalf("backend %s of undefined class %s accepted", b, class)
			}
		}
		if fl.Failover.StepInterval <= 0 || fl.Failover.SpillCapPercent < 0 || fl.Failover.SpillCapPercent > 100 {
			t.Fatalf("policy %+v", fl.Failover)
		}
		if fl.Failover.SpillStopMS >= fl.Failover.SpillStartMS || fl.Failover.StepPercent < 1 || fl.Failover.StepPercent > 100 {
			t.Fatalf("policy %+v", fl.Failover)
		}
	})
}

// model.manifest may name the DR manifest in a registry (oci://…), kept as given; any other URL
// is still refused, as is a malformed oci:// reference.
func TestParseFleetManifestInRegistry(t *testing.T) {
	data, _ := os.ReadFile("testdata/fleet/minimal.yaml")
	for _, c := range []struct{ ref, err string }{
		{"oci://registry.example:5000/models/llama:v1", ""},
		{"oci://registry.example/models/llama@sha256:" + strings.Repeat("ab", 32), ""},
		{"s3://bucket/manifest.json", "want a local path"},
		{"oci://registry.example/", "model.manifest"},
	} {
		doc := strings.Replace(string(data), "/abs/manifest.json", c.ref, 1)
		f, err := fleet.Parse([]byte(doc), filepath.Join(t.TempDir(), "fleet.yaml"))
		switch {
		case c.err == "" && (err != nil || f.Model.Manifest != c.ref):
			t.Errorf("%s: %v %+v", c.ref, err, f)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want an error with %q", c.ref, err, c.err)
		}
	}
}

// The probe section names where a replica's bearer token is (issue 27): an environment
// variable's name or a file, one of them, the region's replacing the fleet's — never a token.
func TestParseFleetProbeAuth(t *testing.T) {
	dir := t.TempDir()
	f, err := fleet.Parse([]byte(`model: {name: demo, manifest: m.json}
probe: {api_key_env: VLLM_API_KEY}
regions:
  a: {replica: ./r}
  b:
    replica: ./r
    probe: {api_key_file: secrets/b.key}
`), filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.ProbeAuth("a"); got != (launch.APIKeySource{Env: "VLLM_API_KEY"}) {
		t.Errorf("a: %+v", got)
	}
	if got := f.ProbeAuth("b"); got != (launch.APIKeySource{File: filepath.Join(dir, "secrets/b.key")}) {
		t.Errorf("b: %+v (a file resolves against the fleet file's directory)", got)
	}
	const head = "model: {name: demo, manifest: m.json}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"token as env", head + "probe: {api_key_env: sk-abc123}\nregions: {a: {replica: ./r}}\n", "fleet.yaml:2: probe.api_key_env: want the name of an environment variable"},
		{"both", head + "regions:\n  a:\n    replica: ./r\n    probe: {api_key_env: K, api_key_file: /k}\n", "fleet.yaml:5: regions.a.probe: api_key_env and api_key_file both set"},
		{"a token key", head + "probe: {api_key: sk-abc123}\nregions: {a: {replica: ./r}}\n", "fleet.yaml:2: probe.api_key: unknown key"},
		{"not a mapping", head + "probe: VLLM_API_KEY\nregions: {a: {replica: ./r}}\n", "fleet.yaml:2: probe: want a mapping"},
	} {
		_, err := fleet.Parse([]byte(c.yaml), "fleet.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-abc123") {
			t.Errorf("%s: the error repeats a token-like value: %v", c.name, err)
		}
	}
}
