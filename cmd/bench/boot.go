package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"lifeboat/internal/childproc"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// bootSection (9): the time from `lifeboat boot` to WARM — restore, launch and the warm probe,
// as the boot's own JSON timings say — with the exec launcher (engine-sim on this host) and the
// kubernetes launcher (the bundle's Deployment applied to a real API server, its pod Ready by
// kwok, probed through a port-forward via the API server to an engine-sim) in the same run, on the
// same bundle, each from a fresh working directory. Medians of runs.
func bootSection(ctx context.Context, c config) error {
	const runs = 3
	fmt.Printf("9. boot to WARM (restore + launch + warm probe, from boot's JSON timings), same bundle, median of %d\n", runs)
	dir := filepath.Join(c.dir, "boot")
	os.RemoveAll(dir)
	l, err := sample.Generate(ctx, filepath.Join(dir, "bundle"), sample.Options{})
	if err != nil {
		return err
	}
	man := filepath.Join(dir, "manifest.json")
	if out, err := exec.CommandContext(ctx, c.lifeboat, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", man).CombinedOutput(); err != nil {
		return fmt.Errorf("manifest build: %v: %s", err, out)
	}
	fleet := func(name, launcher string) (string, error) {
		p := filepath.Join(dir, name+".yaml")
		return p, os.WriteFile(p, []byte(fmt.Sprintf("model: {name: llama-demo, manifest: %s}\nregions:\n  r:\n    geo: eu\n    replica: %s\n    capacity: {replicas: 1, prefill_tokens_per_s: 4000}\n    launcher: %s\ntenants:\n  eu: [r]\n", man, l.Root, launcher)), 0o644)
	}
	execFleet, err := fleet("exec", fmt.Sprintf("{kind: exec, command: '%s engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}} --sim-itl 1ms'}", c.lifeboat))
	if err != nil {
		return err
	}
	execT, err := bootRuns(ctx, c.lifeboat, execFleet, dir, runs)
	if err != nil {
		return fmt.Errorf("exec launcher: %w", err)
	}
	fmt.Printf("   %-58s %8.0fms\n", "exec launcher (engine-sim on this host)", ms(execT))

	if err := os.MkdirAll(filepath.Join(dir, "kube"), 0o700); err != nil {
		return err
	}
	k, err := emulators.StartKube(filepath.Join(dir, "kube"))
	if err != nil {
		fmt.Printf("   %-58s NOT RUN — %v\n\n", "kubernetes launcher", err)
		return nil
	}
	defer k.Stop()
	ns := "bench-boot"
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if nodes, err := k.Clientset().CoreV1().Nodes().List(cctx, metav1.ListOptions{}); err != nil || len(nodes.Items) == 0 {
		fmt.Printf("   %-58s NOT RUN — the control plane has no (kwok) nodes to run the pod\n\n", "kubernetes launcher")
		return nil
	}
	if _, err := k.Clientset().CoreV1().Namespaces().Create(cctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	port, err := emulators.FreePort()
	if err != nil {
		return err
	}
	sim := exec.CommandContext(ctx, c.lifeboat, "engine-sim", l.ModelDir, "--config", l.EngineFile, "--port", strconv.Itoa(port), "--sim-itl", "1ms")
	sim.SysProcAttr = childproc.Attr(true)
	if err := sim.Start(); err != nil {
		return err
	}
	defer func() { _ = syscall.Kill(-sim.Process.Pid, syscall.SIGKILL); _ = sim.Wait() }()
	dyn, err := dynamic.NewForConfig(k.RESTConfig())
	if err != nil {
		return err
	}
	pf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterPortForward",
		"metadata": map[string]any{"name": ns},
		"spec": map[string]any{
			"selector": map[string]any{"matchNamespaces": []any{ns}},
			"forwards": []any{map[string]any{"ports": []any{int64(8000)}, "target": map[string]any{"address": "127.0.0.1", "port": int64(port)}}},
		},
	}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "clusterportforwards"}).Create(cctx, pf, metav1.CreateOptions{}); err != nil {
		fmt.Printf("   %-58s NOT RUN — no kwok in the control plane (%v)\n\n", "kubernetes launcher", err)
		return nil
	}
	kubeFleet, err := fleet("kube", fmt.Sprintf("{kind: kubernetes, kubeconfig: %s, context: %s, namespace: %s, image: registry.example.com/lifeboat:bench}", k.Kubeconfig, emulators.KubeContext, ns))
	if err != nil {
		return err
	}
	kubeT, err := bootRuns(ctx, c.lifeboat, kubeFleet, dir, runs)
	if err != nil {
		return fmt.Errorf("kubernetes launcher: %w", err)
	}
	fmt.Printf("   %-58s %8.0fms\n", "kubernetes launcher (apply, kwok pod Ready, port-forward)", ms(kubeT))
	fmt.Println()
	return nil
}

// bootRuns runs `lifeboat boot` of region r runs times, each from a fresh working directory, and
// returns the median of restore_s + launch_s + warm_s.
func bootRuns(ctx context.Context, lifeboat, fleet, dir string, runs int) (time.Duration, error) {
	var ds []time.Duration
	for i := range runs {
		wd := filepath.Join(dir, fmt.Sprintf("work-%s-%d", filepath.Base(fleet), i))
		os.RemoveAll(wd)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		out, err := exec.CommandContext(cctx, lifeboat, "boot", "--fleet", fleet, "--region", "r", "--workdir", wd, "--ttft-budget", "5s", "--timeout", "60s", "-o", "json").Output()
		cancel()
		var res struct {
			Verdict string `json:"verdict"`
			Reason  string `json:"reason"`
			Timings struct {
				RestoreS *float64 `json:"restore_s"`
				LaunchS  *float64 `json:"launch_s"`
				WarmS    *float64 `json:"warm_s"`
			} `json:"timings"`
		}
		if jerr := json.Unmarshal(out, &res); jerr != nil || res.Verdict != "WARM" || res.Timings.WarmS == nil || res.Timings.LaunchS == nil {
			return 0, fmt.Errorf("boot: %v %s %s", err, res.Verdict, res.Reason)
		}
		s := *res.Timings.LaunchS + *res.Timings.WarmS
		if res.Timings.RestoreS != nil {
			s += *res.Timings.RestoreS
		}
		ds = append(ds, time.Duration(s*float64(time.Second)))
	}
	return medianOf(ds), nil
}
