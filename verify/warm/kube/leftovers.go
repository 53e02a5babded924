package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"lifeboat/fleet/launch"
	"lifeboat/internal/base/lockowner"
	"lifeboat/internal/base/wait"
)

// remove deletes one boot's objects (those recorded, then anything else carrying its run label
// among the kinds a Deployment makes) and its owner, and waits until they are gone or ctx ends.
// Only objects labelled with this run are touched.
func (l *Launcher) remove(ctx context.Context, run string, refs []ref) error {
	ns := l.cfg.Namespace
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var problems []string
	owned := func(gvr schema.GroupVersionResource, name string) bool {
		gctx, cancel := withTimeout(ctx)
		defer cancel()
		u, err := l.dyn.Resource(gvr).Namespace(ns).Get(gctx, name, metav1.GetOptions{})
		return err == nil && u.GetLabels()[LabelRun] == run && u.GetLabels()[LabelManagedBy] == ManagedBy
	}
	for _, r := range refs {
		if !owned(r.gvr, r.name) {
			continue // gone already, or not this boot's: never touched
		}
		dctx, cancel := withTimeout(ctx)
		err := l.dyn.Resource(r.gvr).Namespace(ns).Delete(dctx, r.name, del)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("delete %s: %v", r, err))
		}
	}
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + run + "," + LabelManagedBy + "=" + ManagedBy}
	for _, gvr := range []schema.GroupVersionResource{gvrDeployment, gvrReplicaSet, gvrPod} {
		dctx, cancel := withTimeout(ctx)
		err := l.dyn.Resource(gvr).Namespace(ns).DeleteCollection(dctx, del, sel)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			problems = append(problems, fmt.Sprintf("delete %s labelled %s: %v", gvr.Resource, LabelRun+"="+run, err))
		}
	}
	if owned(gvrConfigMap, ownerName(run)) {
		dctx, cancel := withTimeout(ctx)
		err := l.dyn.Resource(gvrConfigMap).Namespace(ns).Delete(dctx, ownerName(run), del)
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			problems = append(problems, fmt.Sprintf("delete ConfigMap %s: %v", ownerName(run), err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("teardown of boot %s in namespace %s: %s", run, ns, strings.Join(problems, "; "))
	}
	// Wait until nothing of it is left, terminating pods included: a pod being deleted still
	// holds its node's GPUs until the kubelet has stopped it (its grace period).
	for {
		left, terminating := l.left(ctx, run, refs)
		if len(left) == 0 && len(terminating) == 0 {
			return nil
		}
		if err := wait.Sleep(ctx, 250*time.Millisecond); err != nil {
			var what []string
			if len(left) > 0 {
				what = append(what, "still there: "+strings.Join(left, ", "))
			}
			if len(terminating) > 0 {
				what = append(what, "deleted, still terminating: Pod "+strings.Join(terminating, ", Pod "))
			}
			return fmt.Errorf("teardown of boot %s in namespace %s did not finish: %s: %w", run, ns, strings.Join(what, "; "), err)
		}
	}
}

// removeBounded is remove within the teardown's bound: a leftover pod stuck terminating (a
// finalizer, a node gone) is named, never waited on for ever.
func (l *Launcher) removeBounded(ctx context.Context, run string, refs []ref) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.TeardownTimeout)
	defer cancel()
	return l.remove(ctx, run, refs)
}

// left lists what of one boot still exists, and apart the pods already terminating.
// BootLeft lists what of boot run is still in the launcher's namespace: its owner ConfigMap,
// the objects the owner names, their ReplicaSets and pods (terminating ones too). run comes from
// a record a clean-up reads (untrusted): it only names what is looked up, never what is deleted.
func (l *Launcher) BootLeft(ctx context.Context, namespace, run string) ([]string, error) {
	if namespace != l.cfg.Namespace {
		return nil, fmt.Errorf("recorded in namespace %q, the fleet's launcher boots into %s: not looked at", sanitize(namespace), l.cfg.Namespace)
	}
	if !validRunID(run) {
		return nil, fmt.Errorf("boot run %q: not a run id this launcher writes", sanitize(run))
	}
	var refs []ref
	gctx, cancel := withTimeout(ctx)
	cm, err := l.dyn.Resource(gvrConfigMap).Namespace(l.cfg.Namespace).Get(gctx, ownerName(run), metav1.GetOptions{})
	cancel()
	switch {
	case err == nil:
		data, _, _ := unstructuredStrings(cm.Object, "data")
		refs = decodeRefs(data["objects"])
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get ConfigMap %s in namespace %s: %w", ownerName(run), l.cfg.Namespace, err)
	}
	left, terminating := l.left(ctx, run, refs)
	for _, p := range terminating {
		left = append(left, "Pod "+p+" (terminating)")
	}
	return left, nil
}

// validRunID is the shape newRunID writes: 10 lowercase hex digits.
func validRunID(s string) bool {
	if len(s) != 10 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (l *Launcher) left(ctx context.Context, run string, refs []ref) (left, terminating []string) {
	ns := l.cfg.Namespace
	all := append(append([]ref{}, refs...), ref{gvr: gvrConfigMap, kind: "ConfigMap", name: ownerName(run)})
	for _, r := range all {
		gctx, cancel := withTimeout(ctx)
		u, err := l.dyn.Resource(r.gvr).Namespace(ns).Get(gctx, r.name, metav1.GetOptions{})
		cancel()
		if err == nil && u.GetLabels()[LabelRun] == run {
			left = append(left, r.String())
		} else if err != nil && !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%s (%v)", r, err))
		}
	}
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + run}
	for _, x := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{gvrReplicaSet, "ReplicaSet"}, {gvrPod, "Pod"}} {
		gctx, cancel := withTimeout(ctx)
		list, err := l.dyn.Resource(x.gvr).Namespace(ns).List(gctx, sel)
		cancel()
		if err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", x.kind, err))
			continue
		}
		for _, it := range list.Items {
			if x.gvr == gvrPod && it.GetDeletionTimestamp() != nil {
				terminating = append(terminating, it.GetName())
				continue
			}
			left = append(left, x.kind+" "+it.GetName())
		}
	}
	return left, terminating
}

// processGone is failover's judgement of a boot's recorded process: gone only when proven (an
// unreadable /proc, hidepid, is "cannot tell", and the boot is then judged by its heartbeat).
func processGone(pid int, start uint64) bool {
	l, _ := lockowner.JudgeProcess(pid, start)
	return l == lockowner.Gone
}

// CleanupLeftovers finds the boots of this launcher's region in its namespace that no process
// runs any more — recorded on this host and boot by a process that is gone, or whose heartbeat
// stopped three intervals ago (another host) — and removes everything they created, by label.
// A live boot's objects, and any object lifeboat did not create, are never touched. It returns
// what it removed.
func (l *Launcher) CleanupLeftovers(ctx context.Context) ([]string, error) {
	ns := l.cfg.Namespace
	sel := LabelManagedBy + "=" + ManagedBy
	if l.cfg.Region != "" {
		sel += "," + LabelRegion + "=" + l.cfg.Region
	}
	gctx, cancel := withTimeout(ctx)
	list, err := l.dyn.Resource(gvrConfigMap).Namespace(ns).List(gctx, metav1.ListOptions{LabelSelector: sel})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list lifeboat boots (%s) in namespace %s: %w", sel, ns, err)
	}
	host, boot := launch.ThisHost()
	live := map[string]bool{}
	var out, problems []string
	for _, cm := range list.Items {
		run := cm.GetLabels()[LabelRun]
		if run == "" || cm.GetName() != ownerName(run) {
			continue
		}
		data, _, _ := unstructuredStrings(cm.Object, "data")
		why := ""
		pid, _ := strconv.Atoi(data["pid"])
		start, _ := strconv.ParseUint(data["pid_start"], 10, 64)
		hb, herr := time.Parse(time.RFC3339Nano, cm.GetAnnotations()[AnnotationHeartbeat])
		interval, _ := strconv.ParseFloat(data["heartbeat_s"], 64)
		if interval <= 0 {
			interval = DefaultHeartbeat.Seconds()
		}
		switch {
		case boot != "" && data["host"] == host && data["boot_id"] == boot && processGone(pid, start):
			why = fmt.Sprintf("its process (pid %d on this host) is gone", pid)
		case herr != nil:
			why = "it has no heartbeat"
		case time.Since(hb) > 3*time.Duration(interval*float64(time.Second)):
			why = fmt.Sprintf("its heartbeat stopped %s ago (host %s)", time.Since(hb).Round(time.Second), sanitize(data["host"]))
		}
		if why == "" {
			live[run] = true
			continue
		}
		refs := decodeRefs(data["objects"])
		if err := l.removeBounded(ctx, run, refs); err != nil {
			problems = append(problems, err.Error())
			continue
		}
		names := make([]string, 0, len(refs)+1)
		for _, r := range refs {
			names = append(names, r.String())
		}
		names = append(names, "ConfigMap "+ownerName(run))
		out = append(out, fmt.Sprintf("boot %s (%s): removed %s", run, why, strings.Join(names, ", ")))
	}
	// Objects of this region's boots whose owner is gone (deleted by hand, no garbage collector).
	for _, gvr := range []schema.GroupVersionResource{gvrDeployment, gvrPod} {
		gctx, cancel := withTimeout(ctx)
		l2, err := l.dyn.Resource(gvr).Namespace(ns).List(gctx, metav1.ListOptions{LabelSelector: sel})
		cancel()
		if err != nil {
			continue
		}
		orphans := map[string]bool{}
		for _, it := range l2.Items {
			if run := it.GetLabels()[LabelRun]; run != "" && !live[run] {
				gctx, cancel := withTimeout(ctx)
				_, err := l.dyn.Resource(gvrConfigMap).Namespace(ns).Get(gctx, ownerName(run), metav1.GetOptions{})
				cancel()
				if apierrors.IsNotFound(err) {
					orphans[run] = true
				}
			}
		}
		runs := make([]string, 0, len(orphans))
		for r := range orphans {
			runs = append(runs, r)
		}
		sort.Strings(runs)
		for _, run := range runs {
			if err := l.removeBounded(ctx, run, nil); err != nil {
				problems = append(problems, err.Error())
				continue
			}
			out = append(out, fmt.Sprintf("boot %s (its owner ConfigMap is gone): removed its %s", run, gvr.Resource))
		}
	}
	if len(problems) > 0 {
		return out, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

func unstructuredStrings(obj map[string]any, field string) (map[string]string, bool, error) {
	out := map[string]string{}
	m, ok := obj[field].(map[string]any)
	if !ok {
		return out, false, nil
	}
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, true, nil
}
