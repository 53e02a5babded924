package emulators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"lifeboat/internal/base/wait"
)

// Versions of what `make kube` installs and the control plane loads.
const (
	KwokVersion       = "v0.8.0"
	GatewayAPIVersion = "v1.6.3"
	// GatewayAPIInferenceExtensionVersion is sigs.k8s.io/gateway-api-inference-extension, whose
	// InferencePool (inference.networking.k8s.io/v1) and InferencePoolImport
	// (inference.networking.x-k8s.io/v1alpha1) CRDs the control plane loads.
	GatewayAPIInferenceExtensionVersion = "v1.6.2"
	// MCSAPIVersion is sigs.k8s.io/mcs-api, whose ServiceImport CRD (multicluster.x-k8s.io) the
	// control plane loads.
	MCSAPIVersion = "v0.5.2"
)

// The fake nodes kwok manages (see kube.go).
const (
	KubeGPUNode     = "kwok-gpu-0" // nvidia.com/gpu: KubeGPUsPerNode, no taints
	KubeTaintedNode = "kwok-infra-0"
	KubeGPUsPerNode = 8
	// KubeTaint is the taint of KubeTaintedNode (no GPUs): key=value:NoSchedule.
	KubeTaint = "lifeboat.test/dedicated=infra:NoSchedule"
)

// FaultAnnotation on a pod (in the Deployment's pod template) makes kwok give it a failure
// instead of Ready; its value is one of the Fault* constants.
const FaultAnnotation = "lifeboat.test/fault"

const (
	// FaultImagePull: phase Pending, every container waiting with reason ImagePullBackOff, and a
	// Warning event "Failed".
	FaultImagePull = "ImagePullBackOff"
	// FaultCrashLoop: phase Running, every container waiting with reason CrashLoopBackOff,
	// restartCount 3, lastState.terminated exit code 1 reason Error; a Warning event "BackOff".
	FaultCrashLoop = "CrashLoopBackOff"
	// FaultOOMKilled: as FaultCrashLoop, with lastState.terminated exit code 137 reason OOMKilled.
	FaultOOMKilled = "OOMKilled"
	// FaultNotReady: phase Running, containers running but not ready (the readiness probe
	// failing); a Warning event "Unhealthy" with "Readiness probe failed: …".
	FaultNotReady = "NotReady"
)

// installCRDs installs the Gateway API CRDs (standard channel), the Gateway API Inference
// Extension's InferencePool and InferencePoolImport, the Multi-Cluster Services API's
// ServiceImport and kwok's PortForward and Logs CRDs from the Go module cache, and waits until
// they are Established.
func (k *Kube) installCRDs(ctx context.Context) error {
	gwDir, err := moduleDir("sigs.k8s.io/gateway-api", GatewayAPIVersion)
	if err != nil {
		return err
	}
	gieDir, err := moduleDir("sigs.k8s.io/gateway-api-inference-extension", GatewayAPIInferenceExtensionVersion)
	if err != nil {
		return err
	}
	mcsDir, err := moduleDir("sigs.k8s.io/mcs-api", MCSAPIVersion)
	if err != nil {
		return err
	}
	kwokDir, err := moduleDir("sigs.k8s.io/kwok", KwokVersion)
	if err != nil {
		return err
	}

	var crds []string
	for _, f := range []string{
		"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies", "listenersets",
	} {
		crds = append(crds, filepath.Join(gwDir, "config", "crd", "standard", "gateway.networking.k8s.io_"+f+".yaml"))
	}
	crds = append(crds,
		filepath.Join(gieDir, "config", "crd", "bases", "inference.networking.k8s.io_inferencepools.yaml"),
		filepath.Join(gieDir, "config", "crd", "bases", "inference.networking.x-k8s.io_inferencepoolimports.yaml"),
		filepath.Join(mcsDir, "config", "crd", "multicluster.x-k8s.io_serviceimports.yaml"))
	for _, f := range []string{"portforwards", "clusterportforwards", "logs", "clusterlogs"} {
		crds = append(crds, filepath.Join(kwokDir, "kustomize", "crd", "bases", "kwok.x-k8s.io_"+f+".yaml"))
	}
	var all []byte
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("kube: CRDs: %w", err)
		}
		all = append(append(all, data...), "\n---\n"...)
	}
	if err := k.apply(ctx, "", all, false); err != nil {
		return fmt.Errorf("kube: installing the Gateway API, Inference Extension, MCS and kwok CRDs: %w", err)
	}
	return nil
}

// startCluster starts what comes after the API server: the fake nodes,
// kube-controller-manager, kube-scheduler and kwok.
func (k *Kube) startCluster(ctx context.Context, bins map[string]string) error {
	kcm, sched, kwok := bins["kube-controller-manager"], bins["kube-scheduler"], bins["kwok"]
	// The controller manager and the scheduler start while the CRDs are applied: they are
	// independent, and their informers are what takes the time.
	common := []string{
		"--kubeconfig=" + k.Kubeconfig,
		"--authentication-kubeconfig=" + k.Kubeconfig, "--authorization-kubeconfig=" + k.Kubeconfig,
		"--leader-elect=false", "--secure-port=0", "--v=0",
	}
	p, err := spawnProcess("kube-controller-manager", kcm, append([]string{
		"--controllers=deployment-controller,replicaset-controller,garbage-collector-controller," +
			"namespace-controller,serviceaccount-controller,serviceaccount-token-controller," +
			"endpointslice-controller,root-ca-certificate-publisher-controller,job-controller",
		"--service-account-private-key-file=" + k.path("sa.key"),
		"--root-ca-file=" + k.CAFile,
		"--use-service-account-credentials=false",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10", "--concurrent-gc-syncs=20",
		"--namespace-sync-period=10s",
	}, common...), nil)
	if err != nil {
		return err
	}
	k.procs = append(k.procs, p)
	p, err = spawnProcess("kube-scheduler", sched, common, nil)
	if err != nil {
		return err
	}
	k.procs = append(k.procs, p)

	if err := k.createNodes(ctx); err != nil {
		return err
	}

	// kwok serves the kubelet API (port-forward, logs) that the API server reaches at the nodes'
	// InternalIP (127.0.0.1) and kubelet port, over TLS with a certificate from our CA.
	kubeletCert, kubeletKey, err := k.signCert(servingTemplate("kwok"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(k.path("kwok.crt"), kubeletCert, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(k.path("kwok.key"), kubeletKey, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(k.path("kwok-stages.yaml"), []byte(kwokStages), 0o600); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	p, err = spawnProcess("kwok", kwok, []string{
		"--kubeconfig=" + k.Kubeconfig,
		"--config=" + k.path("kwok-stages.yaml"),
		"--manage-nodes-with-label-selector=type=kwok",
		"--node-ip=127.0.0.1", "--node-port=" + strconv.Itoa(port),
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		"--tls-cert-file=" + k.path("kwok.crt"), "--tls-private-key-file=" + k.path("kwok.key"),
		"--cidr=10.244.0.1/16",
		"--node-lease-duration-seconds=40",
		"--enable-crds=PortForward,ClusterPortForward,Logs,ClusterLogs",
	}, nil)
	if err != nil {
		return err
	}
	k.procs = append(k.procs, p)
	return k.waitNodesReady(ctx)
}

// createNodes registers the fake nodes kwok manages.
func (k *Kube) createNodes(ctx context.Context) error {
	nodes := []*corev1.Node{
		fakeNode(KubeGPUNode, KubeGPUsPerNode, nil),
		fakeNode(KubeTaintedNode, 0, []corev1.Taint{{Key: "lifeboat.test/dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}),
	}
	for _, n := range nodes {
		// A control plane just started on a loaded machine may answer with a transient error
		// (etcd's connection reset relayed as an internal error): retried for a while.
		for attempt := 1; ; attempt++ {
			_, err := k.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			if attempt >= 20 || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				return fmt.Errorf("kube: creating node %s (attempt %d): %w", n.Name, attempt, err)
			}
			if err := wait.Sleep(ctx, 500*time.Millisecond); err != nil {
				return fmt.Errorf("kube: creating node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

func fakeNode(name string, gpus int, taints []corev1.Taint) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	if gpus > 0 {
		capacity["nvidia.com/gpu"] = *resource.NewQuantity(int64(gpus), resource.DecimalSI)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

func (k *Kube) waitNodesReady(ctx context.Context) error {
	for {
		ready := 0
		nodes, err := k.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err == nil {
			for _, n := range nodes.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			if ready == 2 {
				return nil
			}
		}
		for _, p := range k.procs {
			select {
			case <-p.done:
				return fmt.Errorf("kube: %s exited:\n%s", p.Name, p.Output())
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube: the kwok nodes are not Ready (%d of 2): %w", ready, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// moduleDir returns the directory of module@version in the Go module cache, downloading it
// (`go mod download`) when it is missing there; ErrNotInstalled without a go command.
func moduleDir(module, version string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go mod download %s@%s: %v: %s", module, version, err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("go mod download %s@%s: %v: %w", module, version, err, ErrNotInstalled)
	}
	const key = `"Dir": "`
	i := bytes.Index(out, []byte(key))
	if i < 0 {
		return "", fmt.Errorf("go mod download %s@%s: no Dir in %s", module, version, out)
	}
	rest := out[i+len(key):]
	return string(rest[:bytes.IndexByte(rest, '"')]), nil
}

// mapper returns a RESTMapper over the API server's discovery (reset when a kind is unknown, as
// after a CRD is installed).
func (k *Kube) mapper() (*restmapper.DeferredDiscoveryRESTMapper, dynamic.Interface, error) {
	k.mapperOnce.Do(func() {
		dc, err := discovery.NewDiscoveryClientForConfig(k.admin)
		if err != nil {
			k.mapperErr = err
			return
		}
		k.restMapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
		k.dyn, k.mapperErr = dynamic.NewForConfig(k.admin)
	})
	return k.restMapper, k.dyn, k.mapperErr
}

// apply server-side applies every object of a multi-document YAML (field manager
// "lifeboat-test"), in namespace when the object is namespaced and namespace is not empty. With
// dryRun the API server validates and admits each object without persisting it. CRDs are
// waited for until Established.
func (k *Kube) apply(ctx context.Context, namespace string, data []byte, dryRun bool) error {
	objs, err := decodeYAML(data)
	if err != nil {
		return err
	}
	mapper, dyn, err := k.mapper()
	if err != nil {
		return err
	}
	var crds []string // applied, to wait for until Established
	var crdClient dynamic.ResourceInterface
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			mapper.Reset()
			m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if namespace != "" {
				ns = namespace
				obj.SetNamespace(ns)
			}
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		body, err := obj.MarshalJSON()
		if err != nil {
			return err
		}
		opts := metav1.PatchOptions{FieldManager: "lifeboat-test", Force: ptr(true)}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts); err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		if gvk.Kind == "CustomResourceDefinition" && !dryRun {
			crds = append(crds, obj.GetName())
			crdClient = ri
		}
	}
	for _, name := range crds {
		if err := waitEstablished(ctx, crdClient, name); err != nil {
			return err
		}
	}
	if len(crds) > 0 {
		mapper.Reset()
	}
	return nil
}

func waitEstablished(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	for {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err == nil && conditionTrue(u, "Established") {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s is not Established: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// decodeYAML splits a multi-document YAML (or JSON) into objects, skipping empty documents.
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// criLog formats text as a container runtime's log file: "TIME stdout F LINE" per line.
func criLog(text string) []byte {
	var b strings.Builder
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		b.WriteString(ts + " stdout F " + strings.TrimSuffix(line, "\n") + "\n")
	}
	return []byte(b.String())
}

func ptr[T any](v T) *T { return &v }

// ApplyYAML server-side applies every object of a multi-document YAML as the admin (in namespace
// when the object is namespaced and namespace is not empty), failing the test on any error.
func (k *Kube) ApplyYAML(t testing.TB, namespace string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := k.apply(ctx, namespace, data, false); err != nil {
		t.Fatalf("kube: apply: %v", err)
	}
}

// DryRunYAML server-side applies every object with dryRun=All: the API server validates,
// defaults and admits each (schemas, CRDs, admission) without storing anything. It returns the
// first error.
func (k *Kube) DryRunYAML(ctx context.Context, namespace string, data []byte) error {
	return k.apply(ctx, namespace, data, true)
}

// Dynamic returns an admin dynamic client.
func (k *Kube) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	_, dyn, err := k.mapper()
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

var (
	portForwardsGVR        = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}
	clusterPortForwardsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterportforwards"}
	clusterLogsGVR         = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterlogs"}
)

// ForwardPodPort makes `port-forward` to port of pod (in namespace) reach target, a local
// "127.0.0.1:PORT": the API server's pods/portforward goes to kwok (the pod's "kubelet"), which
// dials target. pod "" forwards every pod of the namespace (e.g. a Deployment's, whose names
// are not known in advance). Removed when the test ends.
func (k *Kube) ForwardPodPort(t testing.TB, namespace, pod string, port int, target string) {
	t.Helper()
	host, portStr, ok := strings.Cut(target, ":")
	tport, err := strconv.Atoi(portStr)
	if !ok || err != nil {
		t.Fatalf("kube: ForwardPodPort target %q: want host:port", target)
	}
	forwards := []any{map[string]any{
		"ports":  []any{int64(port)},
		"target": map[string]any{"address": host, "port": int64(tport)},
	}}
	dyn := k.Dynamic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ri dynamic.ResourceInterface
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kwok.x-k8s.io/v1alpha1"}}
	if pod != "" {
		obj.SetKind("PortForward")
		obj.SetName(pod)
		obj.SetNamespace(namespace)
		obj.Object["spec"] = map[string]any{"forwards": forwards}
		ri = dyn.Resource(portForwardsGVR).Namespace(namespace)
	} else {
		obj.SetKind("ClusterPortForward")
		obj.SetName(namespace + "-" + strconv.Itoa(port))
		obj.Object["spec"] = map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{namespace}},
			"forwards": forwards,
		}
		ri = dyn.Resource(clusterPortForwardsGVR)
	}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube: creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	t.Cleanup(func() {
		_ = ri.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{})
	})
}

// PodLogs makes the logs of every pod in namespace (the API's pods/log, `kubectl logs`) the text
// current, and the previous container's (`?previous=true`, what a CrashLoopBackOff verdict reads)
// the text previous ("" for none). kwok serves them from files in the CRI log format, which this
// writes. Removed when the test ends.
func (k *Kube) PodLogs(t testing.TB, namespace, current, previous string) {
	t.Helper()
	dir := t.TempDir()
	logsFile, previousFile := filepath.Join(dir, "current.log"), ""
	if err := os.WriteFile(logsFile, criLog(current), 0o600); err != nil {
		t.Fatal(err)
	}
	if previous != "" {
		previousFile = filepath.Join(dir, "previous.log")
		if err := os.WriteFile(previousFile, criLog(previous), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := map[string]any{"logsFile": logsFile}
	if previousFile != "" {
		log["previousLogsFile"] = previousFile
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
		"metadata": map[string]any{"name": "logs-" + namespace},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{namespace}},
			"logs":     []any{log},
		},
	}}
	ri := k.Dynamic(t).Resource(clusterLogsGVR)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ri.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kube: creating ClusterLogs for %s: %v", namespace, err)
	}
	t.Cleanup(func() { _ = ri.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
}

// WaitAllowed waits until the API server's authorizer lets user (in groups) do verb on
// group/resource[/subresource] in namespace. RBAC objects reach the authorizer through an
// informer, so a Role or RoleBinding just applied is not in force at once; a test that acts
// right after applying one must wait for it, or it sees Forbidden on a loaded machine.
func (k *Kube) WaitAllowed(t testing.TB, namespace, user string, groups []string, verb, group, resource, subresource string) {
	t.Helper()
	cs := k.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb,
					Group: group, Resource: resource, Subresource: subresource}},
		}, metav1.CreateOptions{})
		if err == nil && sar.Status.Allowed {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kube: %s still may not %s %s/%s/%s in %s after 60 s (last: %v)", user, verb, group, resource, subresource, namespace, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
