package emulators

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
}

func testPod(name string, annotations map[string]string, gpus int) *corev1.Pod {
	c := corev1.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.11.0"}
	if gpus > 0 {
		q := resource.MustParse(strconv.Itoa(gpus))
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": q}, Limits: corev1.ResourceList{"nvidia.com/gpu": q},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

// A Deployment's pods are created (controller-manager), scheduled on the GPU node (scheduler)
// and made Ready (kwok); deleting the Deployment removes its ReplicaSet and pods (garbage
// collector, ownerReferences).
func TestKubeDeploymentReadyAndCascade(t *testing.T) {
	t.Parallel()
	k := SharedKube(t)
	ns := k.Namespace(t)
	cs := k.Clientset()
	ctx := context.Background()
	pod := testPod("engine", nil, 1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "engine"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment available", 30*time.Second, func() (bool, error) {
		got, err := cs.AppsV1().Deployments(ns).Get(ctx, "engine", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 2, err
	})
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=engine"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods: %v %v", pods, err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != KubeGPUNode || p.Status.PodIP == "" {
			t.Errorf("pod %s: node %q, IP %q; want %s and an IP", p.Name, p.Spec.NodeName, p.Status.PodIP, KubeGPUNode)
		}
	}
	fg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "engine", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment's ReplicaSet and pods gone", 30*time.Second, func() (bool, error) {
		rs, err1 := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		ps, err2 := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil && len(rs.Items) == 0 && len(ps.Items) == 0, errors.Join(err1, err2)
	})
}

// A pod asking for more GPUs than any node has is Unschedulable, with the scheduler's reasons.
func TestKubeGPUUnschedulable(t *testing.T) {
	t.Parallel()
	k := SharedKube(t)
	ns := k.Namespace(t)
	cs := k.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("big", nil, KubeGPUsPerNode+1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	waitFor(t, "PodScheduled=False Unschedulable", 30*time.Second, func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(msg, "Insufficient nvidia.com/gpu") || !strings.Contains(msg, "untolerated taint") {
		t.Errorf("Unschedulable message %q: want the GPU shortage and the taint", msg)
	}
}

// Each FaultAnnotation value gives the container status the kubelet would report.
func TestKubeFaults(t *testing.T) {
	t.Parallel()
	k := SharedKube(t)
	ns := k.Namespace(t)
	cs := k.Clientset()
	ctx := context.Background()
	check := map[string]func(s corev1.ContainerStatus) bool{
		FaultImagePull: func(s corev1.ContainerStatus) bool {
			return s.State.Waiting != nil && s.State.Waiting.Reason == "ImagePullBackOff" && strings.Contains(s.State.Waiting.Message, "vllm/vllm-openai")
		},
		FaultCrashLoop: func(s corev1.ContainerStatus) bool {
			return s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" && s.RestartCount > 0 &&
				s.LastTerminationState.Terminated != nil && s.LastTerminationState.Terminated.ExitCode == 1
		},
		FaultOOMKilled: func(s corev1.ContainerStatus) bool {
			return s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" &&
				s.LastTerminationState.Terminated != nil && s.LastTerminationState.Terminated.Reason == "OOMKilled" &&
				s.LastTerminationState.Terminated.ExitCode == 137
		},
		FaultNotReady: func(s corev1.ContainerStatus) bool {
			return s.State.Running != nil && !s.Ready
		},
	}
	for fault := range check {
		name := strings.ToLower(fault)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(name, map[string]string{FaultAnnotation: fault}, 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for fault, ok := range check {
		name := strings.ToLower(fault)
		waitFor(t, fault, 30*time.Second, func() (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) != 1 {
				return false, err
			}
			return ok(p.Status.ContainerStatuses[0]), fmt.Errorf("status %+v", p.Status.ContainerStatuses[0])
		})
	}
	waitFor(t, "the readiness probe's event", 30*time.Second, func() (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=notready"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "Unhealthy" && strings.Contains(e.Message, "Readiness probe failed") {
				return true, nil
			}
		}
		return false, nil
	})
}

// port-forward through the API server to a pod reaches the local process ForwardPodPort names,
// and the pod's logs (and previous logs) are the files PodLogs names.
func TestKubePortForwardAndLogs(t *testing.T) {
	t.Parallel()
	k := SharedKube(t)
	ns := k.Namespace(t)
	cs := k.Clientset()
	ctx := context.Background()
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("engine", nil, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod Running", 30*time.Second, func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "engine", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "engine-sim here")
	}))
	defer srv.Close()
	k.ForwardPodPort(t, ns, "engine", 8000, strings.TrimPrefix(srv.URL, "http://"))

	k.PodLogs(t, ns, "INFO starting\n", "CUDA error: out of memory\n")

	cfg := k.RESTConfig()
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("engine").SubResource("portforward").URL()
	// Both ways client-go port-forwards: SPDY, and SPDY over WebSocket (kubectl's default, which
	// the API server translates to SPDY towards kwok).
	dialers := map[string]func() (httpstream.Dialer, error){
		"spdy": func() (httpstream.Dialer, error) {
			return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), nil
		},
		"websocket": func() (httpstream.Dialer, error) { return portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg) },
	}
	for name, newDialer := range dialers {
		portForwardGet(t, name, newDialer)
	}

	waitFor(t, "logs", 20*time.Second, func() (bool, error) {
		cur, err1 := cs.CoreV1().Pods(ns).GetLogs("engine", &corev1.PodLogOptions{}).DoRaw(ctx)
		old, err2 := cs.CoreV1().Pods(ns).GetLogs("engine", &corev1.PodLogOptions{Previous: true}).DoRaw(ctx)
		return string(cur) == "INFO starting\n" && string(old) == "CUDA error: out of memory\n",
			fmt.Errorf("current %q (%v), previous %q (%v)", cur, err1, old, err2)
	})
}

// portForwardGet port-forwards to port 8000 of the pod with newDialer's dialer and GETs / through
// it until it answers "engine-sim here".
func portForwardGet(t *testing.T, name string, newDialer func() (httpstream.Dialer, error)) {
	t.Helper()
	var body string
	waitFor(t, "a request through port-forward ("+name+")", 20*time.Second, func() (bool, error) {
		dialer, err := newDialer()
		if err != nil {
			return false, err
		}
		stop, ready := make(chan struct{}), make(chan struct{})
		defer close(stop)
		fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{"0:8000"}, stop, ready, io.Discard, io.Discard)
		if err != nil {
			return false, err
		}
		errc := make(chan error, 1)
		go func() { errc <- fw.ForwardPorts() }()
		select {
		case <-ready:
		case err := <-errc:
			return false, err
		}
		ports, err := fw.GetPorts()
		if err != nil {
			return false, err
		}
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(int(ports[0].Local)) + "/")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && body == "engine-sim here", fmt.Errorf("body %q: %v", body, err)
	})
}
