//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
	"lifeboat/verify/warm/kube"
)

// kubeBoot is one test's Kubernetes fleet: the sample bundle, whose own deployment files the
// launcher applies (edited by the test: a fault annotation, a GPU count), a fleet file whose
// region "gpu-eu" boots it into a fresh namespace of the shared control plane.
type kubeBoot struct {
	k         *emulators.Kube
	ns        string
	fleet     string
	workdir   string
	layout    *sample.Layout
	name      string // the bundle's Deployment and Service
	simTarget string // 127.0.0.1:PORT of the engine-sim behind the port-forward
}

// newKubeBoot makes the bundle (editDeploy rewrites deploy/deployment.yaml before the manifest is
// built) and the fleet file (extra launcher keys appended).
func newKubeBoot(t *testing.T, editDeploy func(string) string, launcherExtra string) *kubeBoot {
	t.Helper()
	k := emulators.SharedKube(t)
	ns := k.Namespace(t)
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dep := filepath.Join(l.DeployDir, "deployment.yaml")
	data, err := os.ReadFile(dep)
	if err != nil {
		t.Fatal(err)
	}
	if editDeploy != nil {
		if err := os.WriteFile(dep, []byte(editDeploy(string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := filepath.Join(t.TempDir(), "manifest.json")
	if r := lifeboat(t, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", m); r.code != 0 {
		t.Fatalf("manifest build: %s", r.stderr)
	}
	dir := t.TempDir()
	fleet := fmt.Sprintf(`model:
  name: llama-demo
  manifest: %s
regions:
  gpu-eu:
    geo: eu
    replica: %s
    capacity: {replicas: 1, prefill_tokens_per_s: 4000}
    launcher:
      kind: kubernetes
      kubeconfig: %s
      context: %s
      namespace: %s
      image: registry.example.com/lifeboat:test
      heartbeat: 1s
%s
tenants:
  eu-only: [gpu-eu]
`, m, l.Root, k.Kubeconfig, emulators.KubeContext, ns, launcherExtra)
	p := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(p, []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	return &kubeBoot{k: k, ns: ns, fleet: p, workdir: t.TempDir(), layout: l, name: "llama-demo"}
}

func (b *kubeBoot) args(extra ...string) []string {
	return append([]string{"boot", "--fleet", b.fleet, "--region", "gpu-eu", "--workdir", b.workdir, "--ttft-budget", "5s"}, extra...)
}

// managed lists what carries the launcher's managed-by label in the namespace (pods already
// terminating included: the kubelet, kwok here, removes them after the teardown deleted them).
func (b *kubeBoot) managed(t *testing.T) []string {
	t.Helper()
	cs := b.k.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy}
	var out []string
	if l, err := cs.AppsV1().Deployments(b.ns).List(ctx, sel); err == nil {
		for _, d := range l.Items {
			out = append(out, "Deployment "+d.Name)
		}
	} else {
		t.Fatal(err)
	}
	if l, err := cs.AppsV1().ReplicaSets(b.ns).List(ctx, sel); err == nil {
		for _, d := range l.Items {
			out = append(out, "ReplicaSet "+d.Name)
		}
	}
	if l, err := cs.CoreV1().Pods(b.ns).List(ctx, sel); err == nil {
		for _, d := range l.Items {
			out = append(out, "Pod "+d.Name)
		}
	}
	if l, err := cs.CoreV1().Services(b.ns).List(ctx, sel); err == nil {
		for _, d := range l.Items {
			out = append(out, "Service "+d.Name)
		}
	}
	if l, err := cs.CoreV1().ConfigMaps(b.ns).List(ctx, sel); err == nil {
		for _, d := range l.Items {
			out = append(out, "ConfigMap "+d.Name)
		}
	}
	return out
}

// bystander creates an unlabelled Deployment in the namespace: the launcher must never touch it.
func (b *kubeBoot) bystander(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/other:1"}}},
			},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := b.k.Clientset().AppsV1().Deployments(b.ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untouched checks that the bystander Deployment is still there, as it was created.
func (b *kubeBoot) untouched(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := b.k.Clientset().AppsV1().Deployments(b.ns).Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Deployment lifeboat did not create is gone: %v", err)
	}
	if got.UID != d.UID || len(got.OwnerReferences) != 0 || got.Labels[kube.LabelManagedBy] != "" || got.Labels[kube.LabelRun] != "" {
		t.Fatalf("the Deployment lifeboat did not create was touched: uid %s→%s owners %v labels %v", d.UID, got.UID, got.OwnerReferences, got.Labels)
	}
	for _, f := range got.ManagedFields {
		if f.Manager == kube.FieldManager {
			t.Fatalf("lifeboat manages fields of a Deployment it did not create: %+v", f)
		}
	}
}

// waitGone waits until nothing labelled by the launcher is left in the namespace.
func (b *kubeBoot) waitGone(t *testing.T, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := b.managed(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind in namespace %s: %v", b.ns, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pendingPods asks for more GPUs than any node has: the pods stay Pending (with a scheduler,
// Unschedulable, tolerated by the tests' schedule_timeout).
func pendingPods(s string) string {
	return strings.ReplaceAll(s, `nvidia.com/gpu: "1"`, `nvidia.com/gpu: "99"`)
}

// startBoot runs `lifeboat boot` of the binary and waits until its Deployment is in the cluster.
func (b *kubeBoot) startBoot(t *testing.T) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(testbed.LifeboatBinary(t), b.args("--timeout", "5m")...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := b.k.Clientset().AppsV1().Deployments(b.ns).Get(ctx, b.name, metav1.GetOptions{})
		cancel()
		if err == nil {
			return cmd, &out
		}
		if time.Now().After(deadline) {
			t.Fatalf("the boot never applied its Deployment: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Ctrl-C during the rollout: the boot removes everything it applied before it exits.
func TestKubeBootInterruptTearsDown(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	other := b.bystander(t, "not-lifeboats")
	cmd, out := b.startBoot(t)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("interrupted boot: %v\n%s", err, out.String())
	}
	// Before it exited, the boot removed what it applied (its pods may still be terminating).
	for _, o := range b.managed(t) {
		if !strings.HasPrefix(o, "Pod ") {
			t.Fatalf("left behind after Ctrl-C: %s\n%s", o, out.String())
		}
	}
	b.waitGone(t, 60*time.Second)
	b.untouched(t, other)
}

// kill -9 during the rollout leaves the boot's objects; the next boot of the region finds them by
// label (their process is gone) and removes them before it applies, and so does
// `lifeboat drill cleanup`. The Deployment lifeboat did not create survives both.
func TestKubeBootKilledLeftoversRemoved(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	other := b.bystander(t, "not-lifeboats")
	cmd, out := b.startBoot(t)
	cmd.Process.Kill()
	cmd.Wait()
	if left := b.managed(t); len(left) == 0 {
		t.Fatalf("kill -9 left nothing behind? %s", out.String())
	}
	// The next boot: the leftovers go first (else its apply would find the Deployment there).
	r := cli(t, nil, b.args("--timeout", "3s")...)
	if r.code != 1 || !(strings.Contains(r.stdout, "NOT_READY: ") || strings.Contains(r.stdout, "UNSCHEDULABLE: ")) {
		t.Fatalf("second boot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("second boot:\n%s", r.stdout)
	b.waitGone(t, 60*time.Second)
	b.untouched(t, other)
}

// A Deployment of the bundle's name that lifeboat did not create is refused, never taken over.
func TestKubeBootRefusesForeignObject(t *testing.T) {
	b := newKubeBoot(t, nil, "")
	other := b.bystander(t, "llama-demo")
	r := cli(t, nil, b.args("--timeout", "10s")...)
	if r.code == 0 || !strings.Contains(r.stderr, "was not created by lifeboat") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.untouched(t, other)
	if left := b.managed(t); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// drillFleet gives b's fleet a file router, a state store and a second region, lost-eu (an
// endpoint, no launcher), and writes a drill beside it that loses lost-eu (extra: more drill
// keys), so that gpu-eu is the drill's kubernetes candidate: a drill never boots a candidate in
// the region it loses. It returns the fleet's directory and the drill file.
func (b *kubeBoot) drillFleet(t *testing.T, extra string) (string, string) {
	t.Helper()
	dir := filepath.Dir(b.fleet)
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	os.WriteFile(filepath.Join(dir, "weights.json"), []byte(`{"version": 1, "classes": {"eu-only": {"gpu-eu": {"weight": 50}, "lost-eu": {"weight": 50}}}}`), 0o644)
	data, err := os.ReadFile(b.fleet)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "    replica: ")
	replica := text[i : i+strings.Index(text[i:], "\n")+1]
	lost := "  lost-eu:\n" + replica + "    endpoint: http://127.0.0.1:9\n"
	if !strings.Contains(text, "tenants:\n  eu-only: [gpu-eu]\n") {
		t.Fatalf("the fleet's shape changed:\n%s", text)
	}
	text = strings.Replace(text, "tenants:\n  eu-only: [gpu-eu]\n", lost+"tenants:\n  eu-only: [gpu-eu, lost-eu]\n", 1)
	text += "router: {driver: file, path: weights.json}\nstate: ./state\nsla: {rto: 5m}\n"
	if err := os.WriteFile(b.fleet, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	drill := filepath.Join(dir, "drill.yaml")
	if err := os.WriteFile(drill, []byte("name: lose-lost-eu\nfleet: fleet.yaml\nlose: lost-eu\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, drill
}

// `lifeboat drill cleanup` removes what a killed kubernetes boot left behind (the launcher's
// labels are its record), and nothing else.
func TestKubeDrillCleanupRemovesLeftovers(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	_, drill := b.drillFleet(t, "")
	other := b.bystander(t, "not-lifeboats")
	cmd, out := b.startBoot(t)
	cmd.Process.Kill()
	cmd.Wait()
	if len(b.managed(t)) == 0 {
		t.Fatalf("kill -9 left nothing behind? %s", out.String())
	}
	r := cli(t, nil, "drill", "cleanup", drill)
	if r.code != 0 || !strings.Contains(r.stdout, "launcher leftovers: region gpu-eu: boot ") || !strings.Contains(r.stdout, "its process (pid ") {
		t.Fatalf("drill cleanup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("drill cleanup:\n%s", r.stdout)
	b.waitGone(t, 60*time.Second)
	b.untouched(t, other)
}

// A drill killed with -9 while its Kubernetes candidate boots has recorded that candidate — its
// namespace and run label — before the launcher wrote anything to the cluster (write-ahead, as
// for a process group). `drill cleanup` removes it and exits 0 only once nothing of that boot
// is left; a bystander in the namespace is untouched.
func TestKubeDrillKilledMidBootRecordsItsCandidate(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	dir, drill := b.drillFleet(t, "steps: [boot, teardown]\n")
	other := b.bystander(t, "not-lifeboats")

	cmd := exec.Command(testbed.LifeboatBinary(t), "drill", "run", drill, "--approve-all")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := b.k.Clientset().AppsV1().Deployments(b.ns).Get(ctx, b.name, metav1.GetOptions{})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drill never applied its candidate's Deployment: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	dep, err := b.k.Clientset().AppsV1().Deployments(b.ns).Get(ctx, b.name, metav1.GetOptions{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	run := dep.Labels[kube.LabelRun]
	recs, _ := filepath.Glob(filepath.Join(dir, "state", "drills", "active", "*.json"))
	if len(recs) != 1 || run == "" {
		t.Fatalf("want one open drill record and a run label, got %v and %q\n%s", recs, run, out.String())
	}
	data, _ := os.ReadFile(recs[0])
	var rec struct {
		Candidates []struct{ Region, Namespace, Run string } `json:"candidates"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || len(rec.Candidates) != 1 ||
		rec.Candidates[0].Region != "gpu-eu" || rec.Candidates[0].Namespace != b.ns || rec.Candidates[0].Run != run {
		t.Fatalf("the record does not name the candidate's namespace %s and run %s (%v):\n%s", b.ns, run, err, data)
	}

	r := cli(t, nil, "drill", "cleanup", drill)
	if r.code != 0 || !strings.Contains(r.stdout, "gpu-eu") {
		t.Fatalf("drill cleanup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("drill cleanup:\n%s", r.stdout)
	b.waitGone(t, 60*time.Second)
	b.untouched(t, other)
}
