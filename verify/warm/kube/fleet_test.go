package kube

import (
	"strings"
	"testing"

	"lifeboat/fleet"
)

func TestFleetKubernetesLauncher(t *testing.T) {
	const head = "model: {name: demo, manifest: m.json}\n"
	f, err := fleet.Parse([]byte(head+`regions:
  eu:
    replica: s3://dr-eu/llama/
    launcher:
      kind: kubernetes
      namespace: drills
      context: gpu-eu
      image: registry.example.com/lifeboat:1
      url: http://llama.drills.svc:8000
      schedule_timeout: 2m
      env: {VLLM_LOGGING_LEVEL: DEBUG}
`), "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := f.Regions["eu"]
	c, ok := r.Launcher.Config.(*FleetConfig)
	if !ok || c.Namespace != "drills" || c.Context != "gpu-eu" || c.URL != "http://llama.drills.svc:8000" || c.ScheduleTimeout.String() != "2m0s" {
		t.Fatalf("config %#v", r.Launcher.Config)
	}
	if !r.Candidate() {
		t.Fatal("a kubernetes region boots a drill candidate")
	}
	cfg := c.Config(f, r)
	if cfg.Replica != "s3://dr-eu/llama" || cfg.Region != "eu" || strings.Join(cfg.Env, ",") != "VLLM_LOGGING_LEVEL=DEBUG" {
		t.Fatalf("launcher config %+v", cfg)
	}

	for _, c := range []struct{ name, yaml, want string }{
		{"namespace", "regions: {a: {replica: ./r, launcher: {kind: kubernetes, image: i}}}\n", "regions.a.launcher.namespace: a kubernetes launcher needs the namespace"},
		{"image", "regions: {a: {replica: ./r, launcher: {kind: kubernetes, namespace: drills}}}\n", "regions.a.launcher.image: a kubernetes launcher needs the lifeboat image"},
		{"name", "regions: {a: {replica: ./r, launcher: {kind: kubernetes, namespace: Drills_1, image: i}}}\n", `regions.a.launcher.namespace: "Drills_1" is not a Kubernetes name`},
		{"secret env", "regions: {a: {replica: ./r, launcher: {kind: kubernetes, namespace: d, image: i, env: {HF_TOKEN: x}}}}\n", "regions.a.launcher.env.HF_TOKEN: looks like a secret"},
		{"command", "regions: {a: {replica: ./r, launcher: {kind: kubernetes, namespace: d, image: i, command: x}}}\n", "regions.a.launcher.command: unknown key"},
	} {
		_, err := fleet.Parse([]byte(head+c.yaml), "fleet.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
