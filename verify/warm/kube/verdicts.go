package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"lifeboat/providers"
	"lifeboat/verify/warm"
)

// maxLogBytes bounds the log tail read from the API server.
const maxLogBytes = 64 << 10

func (in *instance) selector() string { return LabelRun + "=" + in.run }

// pods are the boot's pods, by name.
func (in *instance) pods(ctx context.Context) ([]corev1.Pod, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	list, err := in.l.dyn.Resource(gvrPod).Namespace(in.ns).List(ctx, metav1.ListOptions{LabelSelector: in.selector()})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, 0, len(list.Items))
	for _, it := range list.Items {
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, &p) == nil && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// servingContainer is the container that mounts the restored model (the first one otherwise).
func (in *instance) servingContainer(cs []corev1.Container) string {
	for _, c := range cs {
		for _, vm := range c.VolumeMounts {
			if vm.Name == BundleVolume && strings.HasPrefix(vm.SubPath, "model") {
				return c.Name
			}
		}
	}
	if len(cs) > 0 {
		return cs[0].Name
	}
	return ""
}

var imagePullReasons = map[string]bool{"ImagePullBackOff": true, "ErrImagePull": true, "InvalidImageName": true, "ErrImageNeverPull": true}
var cannotStartReasons = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "PreStartHookError": true}

// diagnose turns what the cluster says about the boot into a named failure, or nil while the
// rollout may still succeed. final: the probe's time is up, so a pod that is not Ready is itself
// the verdict (NOT_READY, with its readiness events).
func (in *instance) diagnose(ctx context.Context, final bool) *warm.LaunchFailure {
	pods, err := in.pods(ctx)
	if err != nil {
		if final {
			return &warm.LaunchFailure{Verdict: warm.NotReady, Reason: fmt.Sprintf("the boot's pods in namespace %s could not be listed: %s", in.ns, sanitize(err.Error()))}
		}
		return nil
	}
	for _, p := range pods {
		if f := in.podFailure(ctx, p, final); f != nil {
			return f
		}
	}
	if f := in.deploymentFailure(ctx, final, len(pods)); f != nil {
		return f
	}
	if !final {
		return nil
	}
	for _, p := range pods {
		if !podReady(p) {
			return in.notReady(ctx, p)
		}
	}
	return nil
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (in *instance) podFailure(ctx context.Context, p corev1.Pod, final bool) *warm.LaunchFailure {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			(final || time.Since(c.LastTransitionTime.Time) >= in.l.cfg.ScheduleTimeout) {
			return &warm.LaunchFailure{Verdict: warm.Unschedulable,
				Reason: fmt.Sprintf("pod %s in namespace %s cannot be scheduled: %s", p.Name, in.ns, sanitize(c.Message))}
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		what := fmt.Sprintf("pod %s container %s", p.Name, cs.Name)
		if cs.Name == InitContainer {
			what += " (the restore of the model)"
		}
		if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] {
			return &warm.LaunchFailure{Verdict: warm.ImagePull,
				Reason: fmt.Sprintf("%s: %s: image %s: %s", what, w.Reason, sanitize(cs.Image), sanitize(w.Message))}
		}
		term := cs.LastTerminationState.Terminated
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			term = t
		}
		if term != nil && term.Reason == "OOMKilled" {
			return &warm.LaunchFailure{Verdict: warm.OOMKilled,
				Reason:  fmt.Sprintf("%s was OOMKilled (exit code %d, restarted %d time(s)): raise its memory limit%s", what, term.ExitCode, cs.RestartCount, in.memoryLimit(p, cs.Name)),
				LogTail: in.l.logs(ctx, in.ns, p.Name, cs.Name, true, DefaultLogLines)}
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
			exit := ""
			if term != nil {
				exit = fmt.Sprintf(" (last exit code %d, %s)", term.ExitCode, sanitize(term.Reason))
			}
			return &warm.LaunchFailure{Verdict: warm.CrashLoop,
				Reason:  fmt.Sprintf("%s: CrashLoopBackOff, restarted %d time(s)%s", what, cs.RestartCount, exit),
				LogTail: in.l.logs(ctx, in.ns, p.Name, cs.Name, true, DefaultLogLines)}
		}
		if w := cs.State.Waiting; w != nil && cannotStartReasons[w.Reason] {
			return &warm.LaunchFailure{Verdict: warm.NotReady,
				Reason: fmt.Sprintf("%s cannot start: %s: %s", what, w.Reason, sanitize(w.Message))}
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		return &warm.LaunchFailure{Verdict: warm.Exited,
			Reason: fmt.Sprintf("pod %s failed: %s %s", p.Name, sanitize(p.Status.Reason), sanitize(p.Status.Message))}
	}
	return nil
}

func (in *instance) memoryLimit(p corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return " (limit " + q.String() + ")"
			}
		}
	}
	return ""
}

// deploymentFailure is what the boot's Deployments say when no pod does: a ReplicaSet that cannot
// create pods (quota, admission) or a progress deadline that passed.
func (in *instance) deploymentFailure(ctx context.Context, final bool, npods int) *warm.LaunchFailure {
	for _, r := range in.refs {
		if r.gvr != gvrDeployment {
			continue
		}
		gctx, cancel := withTimeout(ctx)
		u, err := in.l.dyn.Resource(gvrDeployment).Namespace(in.ns).Get(gctx, r.name, metav1.GetOptions{})
		cancel()
		if err != nil {
			continue
		}
		var d appsv1.Deployment
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d) != nil {
			continue
		}
		for _, c := range d.Status.Conditions {
			switch {
			case c.Type == appsv1.DeploymentReplicaFailure && c.Status == "True":
				return &warm.LaunchFailure{Verdict: warm.NotReady, Reason: fmt.Sprintf("Deployment %s cannot create its pods: %s: %s", d.Name, sanitize(c.Reason), sanitize(c.Message))}
			case c.Type == appsv1.DeploymentProgressing && c.Status == "False" && c.Reason == "ProgressDeadlineExceeded" && npods == 0:
				return &warm.LaunchFailure{Verdict: warm.NotReady, Reason: fmt.Sprintf("Deployment %s: %s", d.Name, sanitize(c.Message))}
			}
		}
		if final && npods == 0 {
			return &warm.LaunchFailure{Verdict: warm.NotReady, Reason: fmt.Sprintf("Deployment %s has no pod (%d of %d replicas created)", d.Name, d.Status.Replicas, ptrInt(d.Spec.Replicas))}
		}
	}
	return nil
}

func ptrInt(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// notReady describes a pod that is not Ready when time is up: its readiness probe's failures (the
// kubelet's Unhealthy events) when there are any, else the state of its containers.
func (in *instance) notReady(ctx context.Context, p corev1.Pod) *warm.LaunchFailure {
	var probe []string
	gctx, cancel := withTimeout(ctx)
	list, err := in.l.dyn.Resource(gvrEvent).Namespace(in.ns).List(gctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", p.Name), fields.OneTermEqualSelector("involvedObject.kind", "Pod")).String(),
	})
	cancel()
	if err == nil {
		evs := make([]corev1.Event, 0, len(list.Items))
		for _, it := range list.Items {
			var e corev1.Event
			if runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, &e) == nil && e.Reason == "Unhealthy" && strings.Contains(e.Message, "Readiness") {
				evs = append(evs, e)
			}
		}
		sort.Slice(evs, func(i, j int) bool { return evTime(evs[i]).Before(evTime(evs[j])) })
		for _, e := range evs[max(0, len(evs)-3):] {
			n := max(e.Count, 1)
			if e.Series != nil {
				n = max(n, e.Series.Count)
			}
			probe = append(probe, fmt.Sprintf("%s (×%d)", sanitize(e.Message), n))
		}
	}
	if len(probe) > 0 {
		return &warm.LaunchFailure{Verdict: warm.NotReady,
			Reason:  fmt.Sprintf("pod %s is %s but not Ready: its readiness probe fails: %s", p.Name, p.Status.Phase, strings.Join(probe, "; ")),
			LogTail: in.l.logs(ctx, in.ns, p.Name, in.servingContainer(p.Spec.Containers), false, DefaultLogLines)}
	}
	var states []string
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil:
			states = append(states, fmt.Sprintf("%s waiting (%s)", cs.Name, sanitize(cs.State.Waiting.Reason)))
		case cs.State.Running != nil && !cs.Ready:
			states = append(states, cs.Name+" running, not ready")
		case cs.State.Terminated != nil && cs.Name != InitContainer:
			states = append(states, fmt.Sprintf("%s terminated (%s)", cs.Name, sanitize(cs.State.Terminated.Reason)))
		}
	}
	if len(states) == 0 {
		states = append(states, "no container status yet")
	}
	return &warm.LaunchFailure{Verdict: warm.NotReady,
		Reason: fmt.Sprintf("pod %s is %s, not Ready: %s", p.Name, p.Status.Phase, strings.Join(states, ", "))}
}

func evTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// logs is a container's last n log lines (previous: the instance that exited), each redacted and
// sanitised for the terminal; "" when the API server has none to give.
func (l *Launcher) logs(ctx context.Context, ns, pod, container string, previous bool, n int) string {
	q := url.Values{"container": {container}, "tailLines": {strconv.Itoa(n)}, "limitBytes": {strconv.Itoa(maxLogBytes)}}
	if previous {
		q.Set("previous", "true")
	}
	u := strings.TrimRight(l.rc.Host, "/") + "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(pod) + "/log?" + q.Encode()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ""
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLogBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return redactLines(string(data), n)
}

// redactLines keeps the last n lines of a log, each through providers.Sanitize (secrets redacted,
// control characters out).
func redactLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, line := range lines {
		lines[i] = providers.Sanitize(line, 1000)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

func lastLines(s string, n int) string {
	if n <= 0 || s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
