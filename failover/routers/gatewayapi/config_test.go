package gatewayapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/fleet"
)

// The fleets under testdata/fleets decode each region's backend, in either key (services or
// targets) and either shape (the Service string or a {kind, name, namespace, port, group}
// mapping); every problem is named by line and field, with "did you mean" for a near kind or key.
func TestFleetTargets(t *testing.T) {
	cases := []struct {
		file string
		want map[string]Backend // the valid fleets' backends
		errs []string           // every line the invalid ones' error holds
	}{
		{file: "pools.yaml", want: map[string]Backend{
			"us-east-1":      {Kind: KindInferencePool, Name: "vllm-us-east-1"},
			"eu-west-1":      {Kind: KindInferencePool, Name: "vllm-eu-west-1"},
			"eu-central-1":   {Kind: KindInferencePool, Name: "vllm.eu-central-1", Namespace: "serving-eu"},
			"ap-southeast-1": {Kind: KindInferencePool, Name: "vllm-ap-southeast-1"},
		}},
		{file: "mixed.yaml", want: map[string]Backend{
			"us-east-1":      {Kind: KindServiceImport, Name: "vllm-us", Namespace: "mcs", Port: 8000},
			"eu-west-1":      {Kind: KindInferencePool, Name: "vllm-eu-west-1"},
			"eu-central-1":   {Name: "vllm-eu-central-1", Port: 8000},
			"ap-southeast-1": {Kind: KindInferencePoolImport, Name: "vllm-ap"},
		}},
		{file: "bad-kind-keys.yaml", errs: []string{
			`fleet.yaml:17: router.targets.us-east-1.kind: want one of InferencePool, InferencePoolImport, Service, ServiceImport, got "InferencePol" (did you mean InferencePool?)`,
			`fleet.yaml:18: router.targets.eu-west-1.nmae: unknown key (want one of group, kind, name, namespace, port) (did you mean name?)`,
			`fleet.yaml:18: router.targets.eu-west-1.name: required: the InferencePool's name`,
			`fleet.yaml:19: router.targets.eu-central-1.kind: required: one of InferencePool, InferencePoolImport, Service, ServiceImport`,
			`fleet.yaml:20: router.targets.ap-southeast-1: want a Service as [namespace/]name:port or a mapping {kind, name, namespace, port, group}, got a list`,
		}},
		{file: "bad-ports-groups.yaml", errs: []string{
			`fleet.yaml:17: router.targets.us-east-1.port: required for a ServiceImport: the port its backendRef names (1-65535)`,
			`fleet.yaml:18: router.targets.eu-west-1.port: a backendRef to an InferencePool carries no port (the pool's targetPorts are its own): remove it`,
			`fleet.yaml:19: router.targets.eu-central-1.port: want a whole number from 1 to 65535, got 70000`,
			`fleet.yaml:20: router.targets.ap-southeast-1.group: kind InferencePool is in group "inference.networking.k8s.io", not "inference.networking.x-k8s.io" (leave group out)`,
		}},
		{file: "bad-names.yaml", errs: []string{
			`fleet.yaml:17: router.targets.us-east-1.name: "vllm.us" is not a Service name (lower-case letters, digits, '-'; at most 63)`,
			`fleet.yaml:18: router.targets.eu-west-1.name: "Vllm_EU" is not an InferencePool name (lower-case letters, digits, '-', '.'; at most 253)`,
			`fleet.yaml:19: router.targets.eu-central-1.namespace: "Serving" is not a namespace name (lower-case letters, digits, '-'; at most 63)`,
			`fleet.yaml:21: router.targets.mars: region "mars" is not defined under regions`,
		}},
		{file: "bad-both.yaml", errs: []string{
			`fleet.yaml:20: router.targets: router.services is given too: give each region's backend under one of services and targets (they mean the same)`,
			`router.services.eu-central-1: required with driver gateway-api: the backend of region eu-central-1, which class eu-only routes to`,
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "fleets", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f, err := fleet.Parse(data, "fleet.yaml")
			if c.errs != nil {
				if err == nil {
					t.Fatalf("accepted")
				}
				for _, want := range c.errs {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error:\n%v\nwant a line:\n%s", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := f.Router.Config.(*FleetConfig).Services
			if len(got) != len(c.want) {
				t.Fatalf("backends %v, want %v", got, c.want)
			}
			for r, b := range c.want {
				if got[r] != b {
					t.Errorf("%s: %#v, want %#v", r, got[r], b)
				}
			}
		})
	}
}

func TestBackendString(t *testing.T) {
	for b, want := range map[Backend]string{
		{Name: "svc", Port: 8000}:                                          "svc:8000",
		{Kind: KindService, Namespace: "ns", Name: "svc", Port: 80}:        "ns/svc:80",
		{Kind: KindInferencePool, Name: "pool"}:                            "InferencePool pool",
		{Kind: KindInferencePoolImport, Namespace: "ns", Name: "pool"}:     "InferencePoolImport ns/pool",
		{Kind: KindServiceImport, Namespace: "mcs", Name: "vllm", Port: 8}: "ServiceImport mcs/vllm:8",
	} {
		if s := b.String(); s != want {
			t.Errorf("%#v: %q, want %q", b, s, want)
		}
	}
}

// FuzzFleetTargets: whatever router section a fleet holds, decoding it never panics, and a
// fleet it accepts holds only backends the driver can open: a known kind, a name, and a port
// exactly when the kind has one.
func FuzzFleetTargets(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fleets", "*.yaml"))
	if len(seeds) == 0 {
		f.Fatal("no seeds under testdata/fleets")
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := fleet.Parse(data, "fleet.yaml")
		if err != nil {
			return
		}
		c, ok := fl.Router.Config.(*FleetConfig)
		if !ok {
			return
		}
		for r, b := range c.Services {
			if _, known := KindGroup(b.kind()); !known || b.Name == "" {
				t.Fatalf("%s: accepted %#v", r, b)
			}
			if KindHasPort(b.kind()) != (b.Port > 0) || b.Port < 0 || b.Port > 65535 {
				t.Fatalf("%s: accepted %#v with port %d", r, b, b.Port)
			}
		}
	})
}
