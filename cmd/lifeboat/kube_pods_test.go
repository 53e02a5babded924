//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
)

// withPodAnnotation adds an annotation to the bundle Deployment's pod template.
func withPodAnnotation(key, value string) func(string) string {
	return func(s string) string {
		const tmpl = "  template:\n    metadata:\n"
		return strings.Replace(s, tmpl, tmpl+fmt.Sprintf("      annotations:\n        %s: %q\n", key, value), 1)
	}
}

// engineSim starts engine-sim (the real OpenAI-compatible simulator, as a separate process) on a
// free loopback port, serving the sample's model; the port-forward reaches it.
func (b *kubeBoot) engineSim(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(testbed.LifeboatBinary(t), "engine-sim", b.layout.ModelDir, "--config", b.layout.EngineFile, "--port", strconv.Itoa(port), "--sim-itl", "1ms")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	b.simTarget = "127.0.0.1:" + strconv.Itoa(port)
	b.k.ForwardPodPort(t, b.ns, "", 8000, b.simTarget)
}

// The sample bundle's own Deployment applied to the cluster, its pod Ready (kwok), probed WARM by
// the real prober through a port-forward via the API server to a real engine-sim, and removed
// afterwards; the Deployment in the namespace that lifeboat did not create survives.
func TestKubeBootWarm(t *testing.T) {
	b := newKubeBoot(t, nil, "")
	b.engineSim(t)
	other := b.bystander(t, "not-lifeboats")
	r := cli(t, nil, b.args("--timeout", "60s", "-o", "json")...)
	var res bootJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r.code != 0 || res.Verdict != "WARM" || !res.OK {
		t.Fatalf("exit %d verdict %s: %s\n%s", r.code, res.Verdict, res.Reason, r.stderr)
	}
	// Only the engine and deployment parts were restored here: the pod restores the model.
	if _, err := os.Stat(filepath.Join(b.workdir, "bundle", "model")); err == nil {
		t.Fatal("the model was restored on this host: the kubernetes launcher's pod restores it")
	}
	if res.Restore == nil || res.Restore.Status != "OK" {
		t.Fatalf("restore %+v", res.Restore)
	}
	b.waitGone(t, 60*time.Second)
	b.untouched(t, other)
}

// Each way a pod fails to come up is named, with what Kubernetes said — never a bare timeout —
// and the boot leaves nothing behind.
func TestKubeBootFailureVerdicts(t *testing.T) {
	for _, c := range []struct {
		name    string
		edit    func(string) string
		logs    bool
		verdict string
		want    []string
		timeout string
	}{
		{"unschedulable", func(s string) string {
			return strings.ReplaceAll(s, `nvidia.com/gpu: "1"`, fmt.Sprintf(`nvidia.com/gpu: "%d"`, emulators.KubeGPUsPerNode+1))
		}, false, "UNSCHEDULABLE", []string{"cannot be scheduled", "Insufficient nvidia.com/gpu"}, "60s"},
		{"image pull", withPodAnnotation(emulators.FaultAnnotation, emulators.FaultImagePull), false, "IMAGE_PULL", []string{"ImagePullBackOff", "vllm/vllm-openai@"}, "60s"},
		{"crash loop", withPodAnnotation(emulators.FaultAnnotation, emulators.FaultCrashLoop), true, "CRASH_LOOP", []string{"CrashLoopBackOff", "last exit code 1", "CUDA out of memory? no: tokenizer missing"}, "60s"},
		{"oom killed", withPodAnnotation(emulators.FaultAnnotation, emulators.FaultOOMKilled), false, "OOM_KILLED", []string{"OOMKilled", "exit code 137", "limit 32Gi"}, "60s"},
		{"not ready", withPodAnnotation(emulators.FaultAnnotation, emulators.FaultNotReady), false, "NOT_READY", []string{"readiness probe fails", "Readiness probe failed: HTTP probe failed with statuscode: 503"}, "90s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newKubeBoot(t, c.edit, "")
			if c.logs {
				b.k.PodLogs(t, b.ns, "starting\n", "INFO loading weights\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 from env\nERROR CUDA out of memory? no: tokenizer missing\n")
			}
			r := cli(t, nil, b.args("--timeout", c.timeout)...)
			out := r.stdout + r.stderr
			if r.code != 1 || !strings.Contains(r.stdout, c.verdict+": ") {
				t.Fatalf("exit %d, want 1 and verdict %s:\n%s", r.code, c.verdict, out)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
			if strings.Contains(out, "hf_abcdefghijklmnopqrstuvwxyz0123") {
				t.Errorf("a secret from the pod's log reached the output:\n%s", out)
			}
			if c.logs && !strings.Contains(r.stdout, "loading weights") {
				t.Errorf("the container's last log lines are not shown:\n%s", r.stdout)
			}
			b.waitGone(t, 60*time.Second)
		})
	}
}

// The Role shipped in examples/kubernetes is enough for the launcher: a boot with the
// ServiceAccount's own token (no admin rights) goes WARM through the port-forward and tears down.
func TestKubeBootWithShippedRole(t *testing.T) {
	b := newKubeBoot(t, nil, "")
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"serviceaccount.yaml", "role.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "examples", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		b.k.ApplyYAML(t, b.ns, data)
	}
	b.k.ApplyYAML(t, b.ns, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lifeboat}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: lifeboat}
subjects: [{kind: ServiceAccount, name: lifeboat, namespace: `+b.ns+`}]
`))
	b.k.WaitAllowed(t, b.ns, "system:serviceaccount:"+b.ns+":lifeboat", nil, "create", "", "pods", "portforward")
	fleet, err := os.ReadFile(b.fleet)
	if err != nil {
		t.Fatal(err)
	}
	sa := b.k.ServiceAccountKubeconfig(t, b.ns, "lifeboat")
	os.WriteFile(b.fleet, []byte(strings.Replace(string(fleet), "kubeconfig: "+b.k.Kubeconfig, "kubeconfig: "+sa, 1)), 0o644)
	b.engineSim(t)
	r := cli(t, nil, b.args("--timeout", "60s", "-o", "json")...)
	var res bootJSON
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Verdict != "WARM" {
		t.Fatalf("exit %d verdict %s %s (%v)\n%s", r.code, res.Verdict, res.Reason, err, r.stderr)
	}
	b.waitGone(t, 60*time.Second)
}
