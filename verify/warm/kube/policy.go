package kube

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"lifeboat/fleet"
)

// AllowKeys are the names a launcher's allow: accepts. Each lets the bundle's objects use one
// thing the content policy refuses by default, because it reaches past the boot's namespace
// into the node or the network (the same lines the Pod Security Standards' baseline draws).
var AllowKeys = []string{
	"privileged",           // securityContext.privileged: true
	"privilege-escalation", // securityContext.allowPrivilegeEscalation: true
	"capabilities",         // securityContext.capabilities.add beyond NET_BIND_SERVICE
	"host-path",            // a hostPath volume
	"host-network",         // hostNetwork: true
	"host-pid",             // hostPID: true
	"host-ipc",             // hostIPC: true
	"host-port",            // a container port bound on the node (hostPort)
	"load-balancer",        // a Service of type LoadBalancer
	"node-port",            // a Service of type NodePort
}

// servingKinds are custom resources known to run model servers from a template of their own (or
// from the operator's defaults, with no template in the object): the launcher cannot make them
// mount the restored model, so they are refused even when they show no pod template.
var servingKinds = map[string]bool{
	"serving.kserve.io/LLMInferenceService":    true,
	"serving.kserve.io/InferenceService":       true,
	"orchestration.aibrix.ai/RayClusterFleet":  true,
	"ray.io/RayCluster":                        true,
	"ray.io/RayService":                        true,
	"ray.io/RayJob":                            true,
	"leaderworkerset.x-k8s.io/LeaderWorkerSet": true,
}

// refusal is one thing the policy refuses: the object, the field (a path in it), why, and the
// fleet key that would allow it ("" when none does).
type refusal struct {
	obj, field, why, key string
}

func (r refusal) String() string {
	s := r.obj + ": " + r.field + ": " + r.why
	if r.key != "" {
		return s + "; to allow it: " + r.key
	}
	return s + "; no launcher key allows it"
}

// ErrPolicy is matched by a bundle the launcher refuses to apply (also fleet.ErrRefused: exit 3).
var ErrPolicy = errors.New("the bundle's objects are refused")

// checkObjects is the content policy, run before anything is applied: every object in the
// launcher's namespace; no Service exposed on the nodes or a load balancer, no pod reaching
// into the node (privileged, host namespaces, hostPath, hostPort, added capabilities) unless the
// fleet's allow: names it; no object whose pods the launcher cannot rewrite to mount the restored
// model (any kind but a Deployment that carries a pod template, or a known serving custom
// resource); no init container that writes the model or engine volume unless
// replace_init_containers names it. Every problem of every object is reported at once.
func (l *Launcher) checkObjects(objs []object) error {
	var out []refusal
	replaced := map[string]bool{}
	for _, o := range objs {
		u := o.obj
		ns := u.GetNamespace()
		if ns == "" {
			ns = l.cfg.Namespace
		}
		id := fmt.Sprintf("%s %s/%s (%s)", u.GetKind(), ns, u.GetName(), o.file)
		add := func(field, why, key string) { out = append(out, refusal{obj: id, field: field, why: why, key: key}) }
		if ns != l.cfg.Namespace {
			add("metadata.namespace", fmt.Sprintf("%q is not the launcher's namespace %q: a boot applies into its own namespace only, where its teardown and owner reach", ns, l.cfg.Namespace), "")
		}
		gk := u.GroupVersionKind().Group + "/" + u.GetKind()
		rewritable := u.GetAPIVersion() == "apps/v1" && u.GetKind() == "Deployment"
		if u.GetAPIVersion() == "v1" && u.GetKind() == "Service" {
			switch t, _ := nested(u.Object, "spec", "type").(string); {
			case t == "LoadBalancer" && !slices.Contains(l.cfg.Allow, "load-balancer"):
				add("spec.type", "LoadBalancer exposes the candidate outside the cluster (and on every node's port)", "allow: [load-balancer]")
			case t == "NodePort" && !slices.Contains(l.cfg.Allow, "node-port"):
				add("spec.type", "NodePort exposes the candidate on a port of every node", "allow: [node-port]")
			}
		}
		specs := podSpecs(u.Object)
		switch {
		case rewritable:
		case servingKinds[gk]:
			add("kind", fmt.Sprintf("a %s runs its model server from a template the launcher cannot rewrite: its pods would never mount the restored model, and the boot would judge other bytes than the manifest proves; put a Deployment in deploy/ for the drill", u.GetKind()), "")
		case len(specs) > 0:
			add(specs[0].path, fmt.Sprintf("a %s runs pods from a template the launcher cannot rewrite to mount the restored model (it rewrites a Deployment's pod template only): they would serve other bytes than the manifest proves", u.GetKind()), "")
		}
		for _, ps := range specs {
			for _, r := range l.podPolicy(ps) {
				add(r.field, r.why, r.key)
			}
			if rewritable && ps.path == "spec.template.spec" {
				for _, r := range l.initWriters(ps, replaced) {
					add(r.field, r.why, r.key)
				}
			}
		}
	}
	for _, name := range l.cfg.ReplaceInitContainers {
		if !replaced[name] {
			out = append(out, refusal{obj: "replace_init_containers", field: name,
				why: "no init container of that name in the bundle's Deployments (nothing to replace: a typo, or the bundle changed?)", key: ""})
		}
	}
	if len(out) == 0 {
		return nil
	}
	lines := make([]string, len(out))
	for i, r := range out {
		lines[i] = "  " + r.String()
	}
	return fmt.Errorf("%w (%w) before anything was applied:\n%s", ErrPolicy, fleet.ErrRefused, strings.Join(lines, "\n"))
}

// podSpec is one pod spec found in an object, and where.
type podSpec struct {
	path string
	m    map[string]any
}

// podSpecs finds every pod spec in obj — a map whose containers is a list — wherever it is
// nested (a Deployment's spec.template.spec, a CronJob's job template, a custom resource's head
// and worker groups), in document order of the keys it walks (sorted).
func podSpecs(obj map[string]any) []podSpec {
	var out []podSpec
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if depth > 40 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if cs, ok := x["containers"].([]any); ok && len(cs) > 0 {
				if _, ok := cs[0].(map[string]any); ok {
					out = append(out, podSpec{path: path, m: x})
					return
				}
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if k == "status" || k == "metadata" {
					continue
				}
				walk(x[k], joinPath(path, k), depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, path+"["+strconv.Itoa(i)+"]", depth+1)
			}
		}
	}
	walk(obj, "", 0)
	return out
}

func joinPath(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// nested is the value at path in m (nil when any step is missing or not a map).
func nested(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func isTrue(v any) bool { b, ok := v.(bool); return ok && b }

// podPolicy is what a pod spec does that reaches into the node, each not allowed by the fleet.
func (l *Launcher) podPolicy(ps podSpec) []refusal {
	var out []refusal
	allowed := func(k string) bool { return slices.Contains(l.cfg.Allow, k) }
	add := func(key, field, why string) {
		if !allowed(key) {
			out = append(out, refusal{field: field, why: why, key: "allow: [" + key + "]"})
		}
	}
	for _, h := range []struct{ field, key, why string }{
		{"hostNetwork", "host-network", "the pod would use the node's network (its interfaces, every port on it)"},
		{"hostPID", "host-pid", "the pod would see and signal every process on the node"},
		{"hostIPC", "host-ipc", "the pod would share the node's IPC namespace"},
	} {
		if isTrue(ps.m[h.field]) {
			add(h.key, ps.path+"."+h.field, "true: "+h.why)
		}
	}
	vols, _ := ps.m["volumes"].([]any)
	for i, v := range vols {
		vm, _ := v.(map[string]any)
		if hp, ok := vm["hostPath"].(map[string]any); ok {
			p, _ := hp["path"].(string)
			add("host-path", fmt.Sprintf("%s.volumes[%d] (%s).hostPath", ps.path, i, str(vm["name"])), fmt.Sprintf("mounts the node's %q into the pod", p))
		}
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		cs, _ := ps.m[list].([]any)
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			at := fmt.Sprintf("%s.%s[%d] (%s)", ps.path, list, i, str(cm["name"]))
			sc, _ := cm["securityContext"].(map[string]any)
			if isTrue(sc["privileged"]) {
				add("privileged", at+".securityContext.privileged", "true: a privileged container has every device and capability of the node")
			}
			if isTrue(sc["allowPrivilegeEscalation"]) {
				add("privilege-escalation", at+".securityContext.allowPrivilegeEscalation", "true: its processes may gain more privileges than they started with (setuid)")
			}
			if caps, ok := nested(sc, "capabilities", "add").([]any); ok {
				var extra []string
				for _, c := range caps {
					if s := str(c); s != "NET_BIND_SERVICE" && s != "CAP_NET_BIND_SERVICE" {
						extra = append(extra, s)
					}
				}
				if len(extra) > 0 {
					add("capabilities", at+".securityContext.capabilities.add", "adds "+strings.Join(extra, ", ")+" (only NET_BIND_SERVICE is allowed by default)")
				}
			}
			ports, _ := cm["ports"].([]any)
			for j, p := range ports {
				pm, _ := p.(map[string]any)
				if hp, ok := pm["hostPort"]; ok && hp != nil && fmt.Sprint(hp) != "0" {
					add("host-port", fmt.Sprintf("%s.ports[%d].hostPort", at, j), fmt.Sprintf("%v binds a port of the node", hp))
				}
			}
		}
	}
	return out
}

// initWriters are the init containers of a Deployment's pod that mount the model or engine
// volume writable: they would overwrite the bytes the launcher's restore checked (a sync from
// S3, a download from the Hub). One named in replace_init_containers is Lifeboat's restore's to
// replace (mountBundle drops it); replaced collects those seen.
func (l *Launcher) initWriters(ps podSpec, replaced map[string]bool) []refusal {
	var out []refusal
	cs, _ := ps.m["initContainers"].([]any)
	for i, c := range cs {
		cm, _ := c.(map[string]any)
		name := str(cm["name"])
		if slices.Contains(l.cfg.ReplaceInitContainers, name) {
			replaced[name] = true
			continue
		}
		mounts, _ := cm["volumeMounts"].([]any)
		for j, m := range mounts {
			mm, _ := m.(map[string]any)
			vol := str(mm["name"])
			if (vol != l.cfg.ModelVolume && vol != l.cfg.EngineVolume) || isTrue(mm["readOnly"]) {
				continue
			}
			what := "the model"
			if vol == l.cfg.EngineVolume {
				what = "the engine config"
			}
			out = append(out, refusal{
				field: fmt.Sprintf("%s.initContainers[%d] (%s).volumeMounts[%d]", ps.path, i, name, j),
				why: fmt.Sprintf("init container %s mounts volume %q (%s) writable at %s: it would overwrite the verified bytes Lifeboat restores there",
					name, vol, what, str(mm["mountPath"])),
				key: "replace_init_containers: [" + name + "] (Lifeboat's own restore takes its place)",
			})
			break
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
