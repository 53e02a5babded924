package kube

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"lifeboat/fleet"
)

// launcherWith is testLauncher's launcher with edit applied to its configuration.
func launcherWith(t *testing.T, edit func(*Config)) *Launcher {
	t.Helper()
	l := testLauncher(t)
	edit(&l.cfg)
	return l
}

// shapes reads testdata/realshapes files as one bundle's deploy/ directory.
func shapes(t *testing.T, files ...string) []object {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "deploy")
	os.MkdirAll(dir, 0o755)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "realshapes", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func wantAll(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("not refused; want %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal lacks %q:\n%v", w, err)
		}
	}
}

// Each thing the content policy refuses is named with its object (kind namespace/name), its
// field and the key that would allow it; allowing every key leaves only what no key allows.
func TestPolicyRefusesAndNamesTheKey(t *testing.T) {
	objs := shapes(t, "hostile.yaml")
	err := testLauncher(t).checkObjects(objs)
	if !errors.Is(err, fleet.ErrRefused) || !errors.Is(err, ErrPolicy) {
		t.Fatalf("want a refusal for safety (exit 3), got %v", err)
	}
	const dep = "Deployment drills/llama-demo (deploy/hostile.yaml): spec.template.spec"
	wantAll(t, err,
		dep+".hostNetwork: true", "allow: [host-network]",
		dep+".hostPID: true", "allow: [host-pid]",
		dep+".hostIPC: true", "allow: [host-ipc]",
		dep+`.volumes[1] (docker-sock).hostPath: mounts the node's "/var/run/docker.sock"`, "allow: [host-path]",
		dep+".containers[0] (vllm).securityContext.privileged: true", "allow: [privileged]",
		dep+".containers[0] (vllm).securityContext.allowPrivilegeEscalation: true", "allow: [privilege-escalation]",
		dep+".containers[0] (vllm).securityContext.capabilities.add: adds SYS_ADMIN (", "allow: [capabilities]",
		dep+".containers[0] (vllm).ports[0].hostPort: 8000", "allow: [host-port]",
		"Service drills/llama-lb (deploy/hostile.yaml): spec.type: LoadBalancer", "allow: [load-balancer]",
		"Service drills/llama-np (deploy/hostile.yaml): spec.type: NodePort", "allow: [node-port]",
		`ConfigMap kube-system/elsewhere (deploy/hostile.yaml): metadata.namespace: "kube-system" is not the launcher's namespace "drills"`,
		"no launcher key allows it",
	)
	if strings.Contains(err.Error(), "adds NET_BIND_SERVICE") {
		t.Errorf("NET_BIND_SERVICE is allowed by default:\n%v", err)
	}
	if n := strings.Count(err.Error(), "\n  "); n != 11 {
		t.Errorf("%d refusals, want 11:\n%v", n, err)
	}

	all := launcherWith(t, func(c *Config) { c.Allow = AllowKeys })
	err = all.checkObjects(objs)
	if err == nil || strings.Count(err.Error(), "\n  ") != 1 || !strings.Contains(err.Error(), "ConfigMap kube-system/elsewhere") {
		t.Fatalf("with every key allowed, only the other namespace is left: %v", err)
	}
	one := launcherWith(t, func(c *Config) { c.Allow = []string{"host-path"} })
	if err := one.checkObjects(objs); err == nil || strings.Contains(err.Error(), "hostPath") || !strings.Contains(err.Error(), "hostNetwork") {
		t.Fatalf("allow: [host-path] allows that only: %v", err)
	}
}

// production-stack's init container syncing the model from S3 into the model volume is refused
// by name, with the reason; named in replace_init_containers it is replaced by Lifeboat's own
// restore, and the other init container reads nothing it could overwrite.
func TestPolicyInitContainerWritingTheModel(t *testing.T) {
	objs := shapes(t, "production-stack.yaml")
	l := launcherWith(t, func(c *Config) { c.ModelVolume = "vllm-storage" })
	wantAll(t, l.checkObjects(objs),
		"Deployment drills/vllm-llama3-deployment-vllm (deploy/production-stack.yaml): spec.template.spec.initContainers[1] (s3-model-sync).volumeMounts[0]",
		`init container s3-model-sync mounts volume "vllm-storage" (the model) writable at /data`,
		"overwrite the verified bytes",
		"replace_init_containers: [s3-model-sync]")

	typo := launcherWith(t, func(c *Config) { c.ModelVolume, c.ReplaceInitContainers = "vllm-storage", []string{"s3-sync"} })
	wantAll(t, typo.checkObjects(objs), "replace_init_containers: s3-sync: no init container of that name")

	ok := launcherWith(t, func(c *Config) {
		c.ModelVolume, c.ReplaceInitContainers = "vllm-storage", []string{"s3-model-sync"}
	})
	if err := ok.checkObjects(objs); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	for _, o := range objs {
		if o.obj.GetKind() != "Deployment" {
			continue
		}
		u, err := ok.prepare(o, bootRef{run: "r1", region: "eu", namespace: "drills", digest: "sha256:" + strings.Repeat("ab", 32),
			owner: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "lifeboat-boot-r1", "uid": "u-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, c := range d.Spec.Template.Spec.InitContainers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != InitContainer+",wait-for-cache-server" {
		t.Fatalf("init containers %v: want Lifeboat's restore in place of s3-model-sync", names)
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "vllm-storage" {
			t.Fatal("the model's PVC is still mounted")
		}
	}
	if got := servingPort([]*unstructured.Unstructured{mustUnstructured(t, &d)}, ok.cfg); got != 8000 {
		t.Errorf("port %d, want the container's port named container-port (8000)", got)
	}
}

func mustUnstructured(t *testing.T, d *appsv1.Deployment) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	return u
}

// A custom resource that runs its own model server (KServe's LLMInferenceService, AIBrix's
// RayClusterFleet), or any kind but a Deployment with a pod template, is refused by kind and name.
func TestPolicyRefusesPodsItCannotRewrite(t *testing.T) {
	l := testLauncher(t)
	wantAll(t, l.checkObjects(shapes(t, "kserve-llminferenceservice.yaml")),
		"LLMInferenceService drills/facebook-opt-125m (deploy/kserve-llminferenceservice.yaml): kind: a LLMInferenceService runs its model server from a template the launcher cannot rewrite",
		"never mount the restored model")
	wantAll(t, l.checkObjects(shapes(t, "aibrix-rayclusterfleet.yaml")),
		"RayClusterFleet drills/facebook-opt-13b (deploy/aibrix-rayclusterfleet.yaml): kind: a RayClusterFleet")

	dir := filepath.Join(t.TempDir(), "deploy")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "sts.yaml"), []byte(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: vllm}
spec:
  serviceName: vllm
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: vllm, image: vllm/vllm-openai}]}
---
apiVersion: example.com/v1
kind: ModelServer
metadata: {name: other}
spec: {workers: [{pod: {containers: [{name: w, image: x}]}}]}
`), 0o644)
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantAll(t, l.checkObjects(objs),
		"StatefulSet drills/vllm (deploy/sts.yaml): spec.template.spec: a StatefulSet runs pods from a template the launcher cannot rewrite",
		"ModelServer drills/other (deploy/sts.yaml): spec.workers[0].pod: a ModelServer runs pods")
	// The sample's own Deployment and Service pass.
	if err := l.checkObjects(shapes(t, "vllm-port-8080.yaml")); err != nil {
		t.Fatal(err)
	}
}

// The port forwarded is vLLM's own --port when the serving container declares none.
func TestVLLMPort(t *testing.T) {
	for _, c := range []struct {
		name string
		c    corev1.Container
		want int
	}{
		{"default", corev1.Container{Args: []string{"--model", "/m"}}, 8000},
		{"equals", corev1.Container{Args: []string{"--port=8080"}}, 8080},
		{"space", corev1.Container{Command: []string{"vllm", "serve", "/m", "--port", "9000"}}, 9000},
		{"last wins", corev1.Container{Args: []string{"--port=8080", "--port", "8081"}}, 8081},
		{"sh -c", corev1.Container{Command: []string{"/bin/sh", "-c"}, Args: []string{"vllm serve /m --port=8080 --max-model-len 4096"}}, 8080},
		{"sh -c quoted", corev1.Container{Command: []string{"sh", "-c", `exec vllm serve /m --port "7000"`}}, 7000},
		{"$(VAR)", corev1.Container{Args: []string{"--port=$(PORT)"}, Env: []corev1.EnvVar{{Name: "PORT", Value: "8088"}}}, 8088},
		{"$VAR in sh", corev1.Container{Command: []string{"sh", "-c", "vllm serve /m --port ${PORT}"}, Env: []corev1.EnvVar{{Name: "PORT", Value: "8089"}}}, 8089},
		{"from a ConfigMap: unknown", corev1.Container{Args: []string{"--port=$(PORT)"}, Env: []corev1.EnvVar{{Name: "PORT", ValueFrom: &corev1.EnvVarSource{}}}}, 8000},
		{"other ports are not it", corev1.Container{Args: []string{"--master-port", "29500", "--data-parallel-rpc-port=1"}}, 8000},
		{"not a port", corev1.Container{Args: []string{"--port=http"}}, 8000},
		// Read as manifest lint reads it (modelrepo's argv reader), not by a scan of every word:
		{"another command's --port in the script", corev1.Container{Command: []string{"sh", "-c", "ray start --head --port=6379 && vllm serve /m"}}, 8000},
		{"argparse prefix", corev1.Container{Command: []string{"vllm", "serve", "/m", "--por", "8085"}}, 8085},
		{"python -m with env", corev1.Container{Command: []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, Args: []string{"--model=$(MODEL_ID)", "--port=$(PORT)"}, Env: []corev1.EnvVar{{Name: "PORT", Value: "8090"}, {Name: "MODEL_ID", Value: "/m"}}}, 8090},
		{"not vLLM", corev1.Container{Command: []string{"python3", "server.py"}, Args: []string{"--port", "9999"}}, 8000},
	} {
		if got := vllmPort(c.c); got != c.want {
			t.Errorf("%s: port %d, want %d", c.name, got, c.want)
		}
	}
	// Through prepare and servingPort, on the real shape.
	l := testLauncher(t)
	var applied []*unstructured.Unstructured
	for _, o := range shapes(t, "vllm-port-8080.yaml") {
		u, err := l.prepare(o, bootRef{run: "r1", region: "eu", namespace: "drills", owner: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u"}})
		if err != nil {
			t.Fatal(err)
		}
		applied = append(applied, u)
	}
	if got := servingPort(applied, l.cfg); got != 8080 {
		t.Fatalf("port %d, want vLLM's --port=8080", got)
	}
}

// Every launcher key docs/kubernetes.md shows, with its documented default or example value,
// parses (the documented schedule_timeout: 0s among them).
func TestFleetDocumentedDefaultsParse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## The kubernetes launcher\n\n```yaml\n(.*?)```").FindSubmatch(data)
	if block == nil {
		t.Fatal("docs/kubernetes.md has no launcher example")
	}
	commented := regexp.MustCompile(`(?m)^(\s+)# ([a-z_]+: .*)$`)
	yaml := commented.ReplaceAllString(string(block[1]), "$1$2")
	keys := commented.FindAllStringSubmatch(string(block[1]), -1)
	if len(keys) < 8 {
		t.Fatalf("only %d commented keys in the example", len(keys))
	}
	f, err := fleet.Parse([]byte("model: {name: demo, manifest: m.json}\n"+yaml), "fleet.yaml")
	if err != nil {
		t.Fatalf("the documented launcher does not parse:\n%s\n%v", yaml, err)
	}
	c := f.Regions["us-east-1"].Launcher.Config.(*FleetConfig)
	if c.ScheduleTimeout != 0 || c.Heartbeat.String() != "10s" || c.TeardownTimeout != DefaultTeardownTimeout {
		t.Fatalf("documented defaults: %+v", c)
	}
	for _, bad := range []string{"schedule_timeout: -1s", "schedule_timeout: soon", "allow: [root]", "replace_init_containers: [Bad_Name]", "teardown_timeout: 0s"} {
		_, err := fleet.Parse([]byte(`model: {name: demo, manifest: m.json}
regions: {a: {replica: ./r, launcher: {kind: kubernetes, namespace: d, image: i, `+bad+`}}}
`), "fleet.yaml")
		if err == nil || !strings.Contains(err.Error(), "fleet.yaml:2: regions.a.launcher."+strings.Split(bad, ":")[0]) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
