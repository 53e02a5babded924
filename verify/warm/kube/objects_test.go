package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"lifeboat/internal/sample"
)

func testLauncher(t *testing.T) *Launcher {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: k, context: {cluster: c, user: u}}]
current-context: k
`), 0o600)
	l, err := New(Config{Region: "eu", Kubeconfig: kc, Namespace: "drills", Image: "registry.example.com/lifeboat:1", Replica: "s3://dr-eu/llama/"})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The sample bundle's own Deployment is applied with the restored bundle in place of its model
// and engine-config volumes, restored by an init container from the region's replica, and
// everything carries the boot's labels and owner.
func TestPrepareSampleDeployment(t *testing.T) {
	l := testLauncher(t)
	lay, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(lay.DeployDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].obj.GetKind() != "Deployment" || objs[1].obj.GetKind() != "Service" {
		t.Fatalf("objects: %v", objs)
	}
	pin := "sha256:" + strings.Repeat("0f", 32)
	b := bootRef{run: "r1", region: "eu", namespace: "drills", digest: pin, owner: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "lifeboat-boot-r1", "uid": "u-1"}}
	for _, o := range objs {
		u, err := l.prepare(o, b)
		if err != nil {
			t.Fatal(err)
		}
		if u.GetNamespace() != "drills" || u.GetLabels()[LabelRun] != "r1" || u.GetLabels()[LabelManagedBy] != "lifeboat" || u.GetLabels()[LabelRegion] != "eu" {
			t.Fatalf("%s: namespace %q labels %v", o, u.GetNamespace(), u.GetLabels())
		}
		if refs := u.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "u-1" || refs[0].Kind != "ConfigMap" {
			t.Fatalf("%s: owners %v", o, refs)
		}
		if u.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			t.Fatal(err)
		}
		ps := d.Spec.Template.Spec
		if d.Spec.Template.Labels[LabelRun] != "r1" || d.Spec.Selector.MatchLabels[LabelRun] != "" {
			t.Fatalf("pod labels %v, selector %v (the selector must stay the bundle's)", d.Spec.Template.Labels, d.Spec.Selector.MatchLabels)
		}
		if len(ps.InitContainers) != 1 || ps.InitContainers[0].Name != InitContainer || ps.InitContainers[0].Image != "registry.example.com/lifeboat:1" ||
			strings.Join(ps.InitContainers[0].Args, " ") != "restore --manifest /lifeboat/manifest/manifest.json --manifest-digest "+pin+" --from s3://dr-eu/llama/ --to /lifeboat/bundle" {
			t.Fatalf("init containers: %+v", ps.InitContainers)
		}
		var vols []string
		for _, v := range ps.Volumes {
			vols = append(vols, v.Name)
			if v.PersistentVolumeClaim != nil {
				t.Fatalf("the model PVC is still mounted: %+v", v)
			}
		}
		if strings.Join(vols, ",") != "dshm,lifeboat-bundle,lifeboat-manifest" {
			t.Fatalf("volumes %v", vols)
		}
		mounts := map[string]string{}
		for _, vm := range ps.Containers[0].VolumeMounts {
			mounts[vm.MountPath] = vm.Name + ":" + vm.SubPath
		}
		if mounts[lay.ModelMount] != "lifeboat-bundle:model" || mounts["/etc/vllm"] != "lifeboat-bundle:engine" {
			t.Fatalf("mounts %v", mounts)
		}
		if p := servingPort([]*unstructured.Unstructured{u}, Config{}); p != 8000 {
			t.Fatalf("serving port %d", p)
		}
	}
}

func TestPrepareRefuses(t *testing.T) {
	l := testLauncher(t)
	dir := t.TempDir()
	write := func(s string) {
		os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(s), 0o644)
	}
	b := bootRef{run: "r1", region: "eu", namespace: "drills", owner: map[string]any{}}
	write("apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: prod}\n")
	objs, err := readObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.prepare(objs[0], b); err == nil || !strings.Contains(err.Error(), `namespace "prod"`) {
		t.Fatalf("other namespace: %v", err)
	}
	write("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: c, image: x}]}}}\n")
	objs, _ = readObjects(dir)
	if _, err := l.prepare(objs[0], b); err == nil || !strings.Contains(err.Error(), `no volume "model"`) {
		t.Fatalf("no model volume: %v", err)
	}
	write("kind: Thing\n")
	if _, err := readObjects(dir); err == nil || !strings.Contains(err.Error(), "app.yaml: document 1") {
		t.Fatalf("not an object: %v", err)
	}
	os.Remove(filepath.Join(dir, "app.yaml"))
	if _, err := readObjects(dir); err == nil || !strings.Contains(err.Error(), "no Kubernetes object") {
		t.Fatalf("empty: %v", err)
	}
	if _, err := New(Config{Namespace: "n", Image: "i", Env: []string{"HF_TOKEN=x"}}); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Fatalf("secret env: %v", err)
	}
}
