// Package kubernetes holds the manifests a platform team applies to run Lifeboat in the cluster;
// its test validates them against a real API server so they cannot rot.
package kubernetes

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) } // stops the emulators, removes the built binary

// granted is what the Role must grant, and all it may grant: resource (group/resource[/sub]) →
// verbs. It is the RBAC list of docs/kubernetes.md ("Running Lifeboat in the cluster").
var granted = map[string][]string{
	"apps/deployments":                     {"get", "list", "create", "patch", "delete", "deletecollection"},
	"apps/replicasets":                     {"list", "deletecollection"},
	"/configmaps":                          {"get", "list", "create", "patch", "delete"},
	"/services":                            {"get", "create", "patch", "delete"},
	"/pods":                                {"list", "deletecollection"},
	"/pods/log":                            {"get"},
	"/pods/portforward":                    {"get", "create"},
	"/events":                              {"list"},
	"gateway.networking.k8s.io/httproutes": {"get", "list", "watch", "update", "patch"},
}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

const testImage = "registry.example.com/lifeboat@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// manifests returns every manifest file of the directory (all but kustomization.yaml), checking
// that the kustomization lists each.
func manifests(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kust, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
		Images    []struct {
			Name string `json:"name"`
		} `json:"images"`
	}
	if err := utilyaml.Unmarshal(kust, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		if f == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(k.Resources, f) {
			t.Errorf("kustomization.yaml: resources does not list %s", f)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = data
	}
	if len(k.Images) != 1 || k.Images[0].Name != "lifeboat" {
		t.Errorf("kustomization.yaml: want one images entry for the placeholder \"lifeboat\", got %+v", k.Images)
	}
	if len(out) < 4 {
		t.Fatalf("only %d manifests found", len(out))
	}
	return out
}

// podSpecs returns the pod specs of the Jobs, CronJobs and Deployments in a manifest.
func podSpecs(t *testing.T, file string, data []byte) map[string]corev1.PodSpec {
	t.Helper()
	specs := map[string]corev1.PodSpec{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		var path []string
		switch u.GetKind() {
		case "CronJob":
			path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
		case "Job", "Deployment":
			path = []string{"spec", "template", "spec"}
		default:
			continue
		}
		m, ok, err := unstructured.NestedMap(u.Object, path...)
		if !ok || err != nil {
			t.Fatalf("%s: %s %s has no pod spec", file, u.GetKind(), u.GetName())
		}
		var spec corev1.PodSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		specs[u.GetKind()+"/"+u.GetName()] = spec
	}
	return specs
}

// Every manifest in examples/kubernetes is valid for the real API server (server-side dry-run:
// schemas, defaulting, admission), its pods pass the "restricted" Pod Security Standard, and
// the Role grants the lifeboat ServiceAccount exactly the list above — checked with
// SubjectAccessReviews and by acting as the ServiceAccount with its own token.
func TestKubernetesExamples(t *testing.T) {
	k := emulators.SharedKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := k.Clientset()
	ns := k.Namespace(t)
	// enforce the restricted profile in the test namespace: the Job's and CronJob's pods must pass
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	files := manifests(t)
	// The identity for real (the pods below are admitted only when their ServiceAccount exists).
	for _, f := range []string{"serviceaccount.yaml", "role.yaml"} {
		k.ApplyYAML(t, ns, []byte(strings.ReplaceAll(string(files[f]), "namespace: lifeboat", "namespace: "+ns)))
	}
	var names []string
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		text := strings.ReplaceAll(string(files[f]), "namespace: lifeboat", "namespace: "+ns)
		if err := k.DryRunYAML(ctx, ns, []byte(text)); err != nil {
			t.Errorf("%s: server-side dry-run: %v", f, err)
		}
		for name, spec := range podSpecs(t, f, files[f]) {
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if c.Image != "lifeboat" {
					t.Errorf("%s: %s container %s: image %q, want the placeholder \"lifeboat\" (kustomization.yaml pins it)", f, name, c.Name, c.Image)
				}
			}
			spec := *spec.DeepCopy()
			for i := range spec.Containers {
				spec.Containers[i].Image = testImage
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "podsecurity-check"}, Spec: spec}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s: the pod of %s is refused in a restricted namespace: %v", f, name, err)
			}
		}
	}
	if t.Failed() {
		return
	}

	// What the ServiceAccount may do.
	user := "system:serviceaccount:" + ns + ":lifeboat"
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	allowed := func(namespace, group, res, sub, verb string) bool {
		t.Helper()
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace, Group: group, Resource: res, Subresource: sub, Verb: verb,
				},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	k.WaitAllowed(t, ns, user, groups, "get", "apps", "deployments", "") // the Role just applied is in force
	for key, verbs := range granted {
		group, rest, _ := strings.Cut(key, "/")
		res, sub, _ := strings.Cut(rest, "/")
		for _, v := range allVerbs {
			want := slices.Contains(verbs, v)
			if got := allowed(ns, group, res, sub, v); got != want {
				t.Errorf("%s %s: allowed=%v, want %v", v, key, got, want)
			}
		}
		if allowed("default", group, res, sub, verbs[0]) {
			t.Errorf("%s %s is granted outside the Role's namespace", verbs[0], key)
		}
	}
	for _, denied := range [][3]string{
		{"", "secrets", "get"}, {"", "secrets", "list"}, {"", "pods", "create"}, {"", "pods", "delete"},
		{"", "pods/exec", "create"}, {"apps", "replicasets", "delete"}, {"apps", "statefulsets", "create"},
		{"rbac.authorization.k8s.io", "roles", "escalate"}, {"rbac.authorization.k8s.io", "rolebindings", "create"},
		{"gateway.networking.k8s.io", "gateways", "update"}, {"gateway.networking.k8s.io", "httproutes", "delete"},
	} {
		res, sub, _ := strings.Cut(denied[1], "/")
		if allowed(ns, denied[0], res, sub, denied[2]) {
			t.Errorf("%s %s/%s: granted, and must not be", denied[2], denied[0], denied[1])
		}
	}

	// Acting as the ServiceAccount with its own token: what the launcher does works, a Secret
	// does not.
	cfg, err := clientcmd.BuildConfigFromFlags("", k.ServiceAccountKubeconfig(t, ns, "lifeboat"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.WarningHandler = rest.NoWarnings{} // the bare Deployment below is not "restricted"; its pods are not the point
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deploy := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"candidate"},
"spec":{"selector":{"matchLabels":{"app":"c"}},"template":{"metadata":{"labels":{"app":"c"}},
"spec":{"containers":[{"name":"vllm","image":"vllm/vllm-openai:v0.11.0"}]}}}}`)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if _, err := dyn.Resource(deployments).Namespace(ns).Patch(ctx, "candidate", types.ApplyPatchType, deploy,
		metav1.PatchOptions{FieldManager: "lifeboat", DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the ServiceAccount cannot server-side apply a Deployment: %v", err)
	}
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the ServiceAccount cannot list pods: %v", err)
	}
	if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the ServiceAccount listing Secrets: got %v, want Forbidden", err)
	}
}

// The Role file's rules are the table above, so the two cannot drift apart silently.
func TestKubernetesRoleMatchesList(t *testing.T) {
	data, err := os.ReadFile("role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		var obj struct {
			Kind  string `json:"kind"`
			Rules []struct {
				APIGroups []string `json:"apiGroups"`
				Resources []string `json:"resources"`
				Verbs     []string `json:"verbs"`
			} `json:"rules"`
		}
		if err := dec.Decode(&obj); err != nil {
			break
		}
		if obj.Kind != "Role" {
			continue
		}
		for _, r := range obj.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
				}
			}
		}
	}
	for key, verbs := range got {
		want := granted[key]
		a, b := slices.Sorted(slices.Values(verbs)), slices.Sorted(slices.Values(want))
		if !slices.Equal(a, b) {
			t.Errorf("role.yaml grants %s %v, the list says %v", key, a, b)
		}
	}
	for key := range granted {
		if _, ok := got[key]; !ok {
			t.Errorf("role.yaml does not grant %s", key)
		}
	}
}
