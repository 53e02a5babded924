//go:build integration

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"lifeboat/failover/routers/gatewayapi"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// A drill (`lifeboat drill run`) whose router is the gateway-api driver on a real API server:
// the evacuation and the failback are HTTPRoute updates, the EU-only route's history (a watch)
// never names a region outside the EU, eu-west-1 is drained before it is withdrawn, and the drill
// leaves the routes at their baseline.
func TestDrillGatewayAPIRouter(t *testing.T) {
	drillGatewayAPI(t, func(*emulators.Kube, *sample.Layout, string) string {
		return "    launcher: {kind: exec, command: \"lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}\"}\n"
	})
}

// The full drill on Kubernetes: every region's candidate is booted by the kubernetes launcher
// (the bundle's own Deployment applied in the region's namespace, its pod made Ready by kwok and
// probed through a port-forward to that region's engine-sim), and the router is the gateway-api
// driver. The drill passes, the routes move as above, and no launcher object is left behind.
func TestDrillKubernetesLauncherGatewayAPI(t *testing.T) {
	var namespaces []string
	drillGatewayAPI(t, func(k *emulators.Kube, l *sample.Layout, region string) string {
		ns := k.Namespace(t)
		namespaces = append(namespaces, ns)
		k.ForwardPodPort(t, ns, "", 8000, engineSimProcess(t, l))
		return fmt.Sprintf("    launcher: {kind: kubernetes, kubeconfig: %q, context: %s, namespace: %s, image: registry.example.com/lifeboat:test, heartbeat: 1s}\n", k.Kubeconfig, emulators.KubeContext, ns)
	})
	k := emulators.SharedKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, ns := range namespaces {
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			deps, err := k.Clientset().AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(deps.Items) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace %s: %d Deployments left after the drill", ns, len(deps.Items))
			}
		}
	}
}

// engineSimProcess starts engine-sim (a separate process) on a free loopback port serving the
// sample's model, and returns its host:port.
func engineSimProcess(t *testing.T, l *sample.Layout) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(testbed.LifeboatBinary(t), "engine-sim", l.ModelDir, "--config", l.EngineFile, "--port", strconv.Itoa(port), "--sim-itl", "1ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return "127.0.0.1:" + strconv.Itoa(port)
}

// drillGatewayAPI runs the drill on a fleet whose regions' launchers are launcher's lines.
func drillGatewayAPI(t *testing.T, launcher func(k *emulators.Kube, l *sample.Layout, region string) string) {
	k := emulators.SharedKube(t)
	ns := k.Namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dyn := k.Dynamic(t)
	routes := dyn.Resource(gatewayapi.HTTPRoutes).Namespace(ns)
	regions := []string{"us-east-1", "eu-west-1", "eu-central-1"}
	baseline := map[string]map[string]int64{
		"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
		"global":  {"us-east-1": 50, "eu-west-1": 30, "eu-central-1": 20},
	}
	for class, w := range baseline {
		var refs []any
		for _, r := range regions {
			if v, ok := w[r]; ok {
				refs = append(refs, map[string]any{"name": "svc-" + r, "port": int64(8000), "weight": v})
			}
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "route-" + class},
			"spec":     map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}, "rules": []any{map[string]any{"backendRefs": refs}}},
		}}
		if _, err := routes.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start, err := routes.Get(ctx, "route-eu-only", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := routes.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=route-eu-only", ResourceVersion: start.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var history [][]string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rules, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rules")
			var refs []string
			for _, b := range rules[0].(map[string]any)["backendRefs"].([]any) {
				m := b.(map[string]any)
				refs = append(refs, fmt.Sprintf("%s:%v", m["name"], m["weight"]))
			}
			slices.Sort(refs)
			mu.Lock()
			history = append(history, refs)
			mu.Unlock()
		}
	}()

	l, m := fixture(t, sample.Options{})
	dir := t.TempDir()
	var b strings.Builder
	fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %s}\nregions:\n", m)
	for _, n := range regions {
		rep := filepath.Join(dir, "replicas", n)
		if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", rep); r.code != 0 {
			t.Fatalf("replicate: %s", r.stderr)
		}
		fmt.Fprintf(&b, "  %s:\n    replica: %s\n    capacity: {replicas: 4, prefill_tokens_per_s: 8000}\n", n, rep)
		b.WriteString(launcher(k, l, n))
	}
	fmt.Fprintf(&b, `tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, eu-central-1]
router:
  driver: gateway-api
  kubeconfig: %s
  namespace: %s
  backends: {eu-only: route-eu-only, global: route-global}
  services: {us-east-1: "svc-us-east-1:8000", eu-west-1: "svc-eu-west-1:8000", eu-central-1: "svc-eu-central-1:8000"}
failover: {step_percent: 50, step_interval: 100ms, spill_cap_percent: 60, drain_timeout: 2s, failback_dwell: 200ms, max_transitions_per_hour: 1000, assumed_utilization_percent: 20}
state: ./state
sla: {rto: 5m}
`, k.Kubeconfig, ns)
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(b.String()), 0o644)
	drill := filepath.Join(dir, "drill.yaml")
	os.WriteFile(drill, []byte(`name: lose-eu-west-1
fleet: fleet.yaml
lose: eu-west-1
hold: 200ms
lock_ttl: 5s
failback_timeout: 60s
approve: [evacuate]
traffic: {requests: 4, interval: 200ms, max_tokens: 2}
expect:
  - residency: eu-only
`), 0o644)
	r := cli(t, nil, "drill", "run", drill, "--report", filepath.Join(dir, "report"), "--approve-all")
	w.Stop()
	<-watched
	if r.code != 0 || !strings.Contains(r.stdout, "Verdict: PASS") {
		t.Fatalf("drill: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("drill:\n%s", r.stdout)
	mu.Lock()
	defer mu.Unlock()
	drained, removed := -1, -1
	for i, refs := range history {
		for _, ref := range refs {
			if !strings.HasPrefix(ref, "svc-eu-west-1:") && !strings.HasPrefix(ref, "svc-eu-central-1:") {
				t.Fatalf("version %d of the EU-only route names %s: %v", i, ref, history)
			}
		}
		if slices.Contains(refs, "svc-eu-west-1:0") && drained < 0 {
			drained = i
		}
		if !slices.ContainsFunc(refs, func(s string) bool { return strings.HasPrefix(s, "svc-eu-west-1:") }) && removed < 0 {
			removed = i
		}
	}
	if drained < 0 || removed <= drained {
		t.Fatalf("eu-west-1 drained at version %d, withdrawn at %d: %v", drained, removed, history)
	}
	last := history[len(history)-1]
	if !slices.Equal(last, []string{"svc-eu-central-1:50", "svc-eu-west-1:50"}) {
		t.Fatalf("the drill left the EU-only route at %v, not its baseline; history %v", last, history)
	}
	t.Logf("EU-only route during the drill: %v", history)
}
