//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/verify/warm/kube"
)

// realShape is a manifest of verify/warm/kube/testdata/realshapes (sources in its README).
func realShape(t *testing.T, name string) string {
	t.Helper()
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "verify", "warm", "kube", "testdata", "realshapes", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// crdYAML is a CustomResourceDefinition serving kind in group/version (any fields kept): what
// the operator's chart installs, so the API server would accept the object.
func crdYAML(group, kind, plural string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[3]s.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[2]s, plural: %[3]s, singular: %[4]s, listKind: %[2]sList}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, kind, plural, strings.ToLower(kind))
}

func (b *kubeBoot) editFleet(t *testing.T, old, new string) {
	t.Helper()
	data, err := os.ReadFile(b.fleet)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("fleet has no %q", old)
	}
	os.WriteFile(b.fleet, []byte(strings.Replace(string(data), old, new, 1)), 0o644)
}

// warm runs the boot and wants WARM, and nothing left after it.
func (b *kubeBoot) warm(t *testing.T) {
	t.Helper()
	r := cli(t, nil, b.args("--timeout", "60s", "-o", "json")...)
	var res bootJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Verdict != "WARM" {
		t.Fatalf("exit %d verdict %s %s (%v)\n%s%s", r.code, res.Verdict, res.Reason, err, r.stdout, r.stderr)
	}
	b.waitGone(t, 60*time.Second)
}

// Published shapes through the binary on the real control plane: production-stack's S3 sync init
// container is refused by name (exit 3, nothing applied), then replaced by Lifeboat's restore and
// WARM; a KServe LLMInferenceService and an AIBrix RayClusterFleet, their CRDs served, are
// refused by kind and name with nothing created; a vLLM Deployment listening on --port=8080
// with no containerPort is WARM through a port-forward to 8080.
func TestKubeBootRealShapes(t *testing.T) {
	t.Run("production-stack", func(t *testing.T) {
		b := newKubeBoot(t, func(string) string { return realShape(t, "production-stack.yaml") }, "      model_volume: vllm-storage")
		b.name = "vllm-llama3-deployment-vllm"
		r := cli(t, nil, b.args("--timeout", "30s")...)
		if r.code != 3 || !strings.Contains(r.stderr, "spec.template.spec.initContainers[1] (s3-model-sync).volumeMounts[0]") ||
			!strings.Contains(r.stderr, "overwrite the verified bytes") || !strings.Contains(r.stderr, "replace_init_containers: [s3-model-sync]") {
			t.Fatalf("exit %d, want 3 naming the init container\n%s%s", r.code, r.stdout, r.stderr)
		}
		if left := b.managed(t); len(left) != 0 {
			t.Fatalf("a refused boot applied %v", left)
		}
		b.editFleet(t, "      model_volume: vllm-storage\n", "      model_volume: vllm-storage\n      replace_init_containers: [s3-model-sync]\n")
		b.engineSim(t)
		b.warm(t)
	})
	t.Run("custom resources", func(t *testing.T) {
		k := emulators.SharedKube(t)
		k.ApplyYAML(t, "", []byte(crdYAML("serving.kserve.io", "LLMInferenceService", "llminferenceservices")+"---\n"+
			crdYAML("orchestration.aibrix.ai", "RayClusterFleet", "rayclusterfleets")))
		for _, c := range []struct{ file, kind, name, resource, group string }{
			{"kserve-llminferenceservice.yaml", "LLMInferenceService", "facebook-opt-125m", "llminferenceservices", "serving.kserve.io"},
			{"aibrix-rayclusterfleet.yaml", "RayClusterFleet", "facebook-opt-13b", "rayclusterfleets", "orchestration.aibrix.ai"},
		} {
			b := newKubeBoot(t, func(s string) string { return s + "\n---\n" + realShape(t, c.file) }, "")
			r := cli(t, nil, b.args("--timeout", "30s")...)
			if r.code != 3 || !strings.Contains(r.stderr, c.kind+" "+b.ns+"/"+c.name) || !strings.Contains(r.stderr, "never mount the restored model") {
				t.Fatalf("%s: exit %d, want 3 naming %s %s/%s\n%s%s", c.file, r.code, c.kind, b.ns, c.name, r.stdout, r.stderr)
			}
			if left := b.managed(t); len(left) != 0 {
				t.Fatalf("%s: a refused boot applied %v", c.file, left)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := k.Dynamic(t).Resource(schema.GroupVersionResource{Group: c.group, Version: "v1alpha1", Resource: c.resource}).Namespace(b.ns).Get(ctx, c.name, metav1.GetOptions{})
			cancel()
			if !apierrors.IsNotFound(err) {
				t.Fatalf("%s: the %s was created (or cannot be told: %v)", c.file, c.kind, err)
			}
		}
	})
	t.Run("port 8080", func(t *testing.T) {
		b := newKubeBoot(t, func(string) string { return realShape(t, "vllm-port-8080.yaml") }, "")
		b.name = "vllm-server"
		b.engineSim(t) // forwards 8000: not where this vLLM listens
		b.k.ForwardPodPort(t, b.ns, "", 8080, b.simTarget)
		// only 8080 reaches the engine: remove the 8000 forward engineSim made
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = b.k.Dynamic(t).Resource(schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterportforwards"}).Delete(ctx, b.ns+"-8000", metav1.DeleteOptions{})
		cancel()
		b.warm(t)
	})
}

// The content policy through the binary: a hostPath volume and a LoadBalancer Service are refused
// (exit 3) before anything is applied, each with its object, field and key; allowed by name in
// the fleet, the same bundle boots WARM.
func TestKubeBootContentPolicy(t *testing.T) {
	edit := func(s string) string {
		s = strings.Replace(s, "      volumes:\n", "      volumes:\n        - name: docker-sock\n          hostPath: {path: /var/run/docker.sock}\n", 1)
		return s + "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: llama-lb}\nspec:\n  type: LoadBalancer\n  selector: {app.kubernetes.io/name: vllm}\n  ports: [{port: 80, targetPort: 8000}]\n"
	}
	b := newKubeBoot(t, edit, "")
	r := cli(t, nil, b.args("--timeout", "30s")...)
	for _, w := range []string{
		"Deployment " + b.ns + "/llama-demo (deploy/deployment.yaml): spec.template.spec.volumes[0] (docker-sock).hostPath", "allow: [host-path]",
		"Service " + b.ns + "/llama-lb (deploy/deployment.yaml): spec.type: LoadBalancer", "allow: [load-balancer]",
	} {
		if r.code != 3 || !strings.Contains(r.stderr, w) {
			t.Fatalf("exit %d, want 3 and %q\n%s%s", r.code, w, r.stdout, r.stderr)
		}
	}
	if left := b.managed(t); len(left) != 0 {
		t.Fatalf("a refused boot applied %v", left)
	}
	b.editFleet(t, "      heartbeat: 1s\n", "      heartbeat: 1s\n      allow: [host-path, load-balancer]\n")
	b.engineSim(t)
	b.warm(t)
}

// The manifest handed to the init container through the owner ConfigMap is pinned by digest in
// the pod spec: the init container's own arguments, read back from the applied Deployment and
// run by the real binary, restore the manifest the boot wrote and refuse it once someone with
// patch on ConfigMaps has swapped it.
func TestKubeBootManifestDigestPinned(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	cmd, out := b.startBoot(t)
	defer func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() }()
	cs := b.k.Clientset()
	ctx := testbed.Ctx(t)
	d, err := cs.AppsV1().Deployments(b.ns).Get(ctx, b.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, c := range d.Spec.Template.Spec.InitContainers {
		if c.Name == kube.InitContainer {
			args = c.Args
		}
	}
	owner := ""
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			owner = v.ConfigMap.Name
		}
	}
	if len(args) == 0 || owner == "" || !strings.Contains(strings.Join(args, " "), "--manifest-digest sha256:") {
		t.Fatalf("init container args %q, owner %q\n%s", args, owner, out.String())
	}
	run := func() result {
		cm, err := cs.CoreV1().ConfigMaps(b.ns).Get(ctx, owner, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		mf := filepath.Join(dir, "manifest.json")
		os.WriteFile(mf, []byte(cm.Data["manifest.json"]), 0o644)
		a := make([]string, len(args))
		for i, x := range args {
			switch x {
			case "/lifeboat/manifest/manifest.json":
				x = mf
			case "/lifeboat/bundle":
				x = filepath.Join(dir, "bundle")
			}
			a[i] = x
		}
		return cli(t, nil, a...)
	}
	if r := run(); r.code != 0 {
		t.Fatalf("the init container's restore of the boot's own manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cm, err := cs.CoreV1().ConfigMaps(b.ns).Get(ctx, owner, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	swapped := strings.Replace(cm.Data["manifest.json"], `"size":`, `"size": `, 1)
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"manifest.json": swapped}})
	if _, err := cs.CoreV1().ConfigMaps(b.ns).Patch(ctx, owner, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := run(); r.code != 3 || !strings.Contains(r.stderr, "pinned to (--manifest-digest)") {
		t.Fatalf("a swapped manifest: exit %d, want 3\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// holdPod waits for the boot's pod and puts a finalizer on it: deleted, it stays terminating
// until release.
func (b *kubeBoot) holdPod(t *testing.T) (pod string, release func()) {
	t.Helper()
	cs := b.k.Clientset()
	ctx := testbed.Ctx(t)
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		l, err := cs.CoreV1().Pods(b.ns).List(ctx, sel)
		if err == nil && len(l.Items) > 0 {
			pod = l.Items[0].Name
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the boot's pod never appeared (%v)", err)
		}
	}
	patch := []byte(`{"metadata":{"finalizers":["lifeboat.test/hold"]}}`)
	if _, err := cs.CoreV1().Pods(b.ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	release = func() {
		_, _ = cs.CoreV1().Pods(b.ns).Patch(context.Background(), pod, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	}
	t.Cleanup(release)
	return pod, release
}

// boot waits for its pods to be gone, as documented: with a pod held terminating, Ctrl-C does not
// return while the pod is there; released, the boot exits with nothing left. With a short
// teardown_timeout it gives up, naming the pod.
func TestKubeBootWaitsForPods(t *testing.T) {
	b := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m")
	cmd, out := b.startBoot(t)
	pod, release := b.holdPod(t)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cs := b.k.Clientset()
	// The boot may only return once the pod is gone; while it is held, it must still be waiting.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case <-done:
			p, err := cs.CoreV1().Pods(b.ns).Get(context.Background(), pod, metav1.GetOptions{})
			t.Fatalf("boot returned while its pod %s is still there (deleting: %v, err %v)\n%s", pod, err == nil && p.DeletionTimestamp != nil, err, out.String())
		default:
		}
	}
	release()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("boot did not return after its pod was released\n%s", out.String())
	}
	if left := b.managed(t); len(left) != 0 {
		t.Fatalf("left at exit: %v\n%s", left, out.String())
	}

	short := newKubeBoot(t, pendingPods, "      schedule_timeout: 10m\n      teardown_timeout: 3s")
	cmd2, out2 := short.startBoot(t)
	pod2, _ := short.holdPod(t)
	cmd2.Process.Signal(syscall.SIGINT)
	cmd2.Wait()
	if !strings.Contains(out2.String(), "still terminating: Pod "+pod2) {
		t.Fatalf("a teardown that gave up does not name the pod %s:\n%s", pod2, out2.String())
	}
}

// A port-forward that cannot open (an identity without pods/portforward) is its own verdict,
// PORT_FORWARD, never LOADING.
func TestKubeBootPortForwardVerdict(t *testing.T) {
	b := newKubeBoot(t, nil, "")
	ctx := testbed.Ctx(t)
	rbac := b.k.Clientset().RbacV1()
	const user = "lifeboat-no-portforward"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "create", "patch", "delete", "deletecollection"}},
		{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: []string{"list", "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "create", "patch", "delete"}},
	}
	if _, err := rbac.Roles(b.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings(b.ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user, APIGroup: "rbac.authorization.k8s.io"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.k.WaitAllowed(t, b.ns, user, nil, "create", "apps", "deployments", "")
	b.editFleet(t, "kubeconfig: "+b.k.Kubeconfig, "kubeconfig: "+b.k.UserKubeconfig(t, user))
	b.engineSim(t)
	r := cli(t, nil, b.args("--timeout", "60s")...)
	if r.code != 1 || !strings.Contains(r.stdout, "PORT_FORWARD: ") || !strings.Contains(r.stdout, "pods/portforward") || strings.Contains(r.stdout, "LOADING") {
		t.Fatalf("exit %d, want 1 and PORT_FORWARD\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.waitGone(t, 60*time.Second)
}
