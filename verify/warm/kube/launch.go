package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"lifeboat/fleet"
	"lifeboat/fleet/launch"
	"lifeboat/verify/warm"
)

// maxManifestBytes is what fits in the owner ConfigMap (the API server's limit is 1 MiB).
const maxManifestBytes = 900 << 10

// ref is one object a boot applied.
type ref struct {
	gvr  schema.GroupVersionResource
	kind string
	name string
}

func (r ref) String() string { return r.kind + " " + r.name }

// encode/decodeRefs keep the applied objects in the owner ConfigMap, one a line, so a later run
// removes exactly them.
func encodeRefs(refs []ref) string {
	var b strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&b, "%s/%s/%s/%s/%s\n", r.gvr.Group, r.gvr.Version, r.gvr.Resource, r.kind, r.name)
	}
	return b.String()
}

func decodeRefs(s string) []ref {
	var out []ref
	for _, line := range strings.Split(s, "\n") {
		f := strings.Split(line, "/")
		if len(f) != 5 || f[2] == "" || f[4] == "" {
			continue
		}
		out = append(out, ref{gvr: schema.GroupVersionResource{Group: f[0], Version: f[1], Resource: f[2]}, kind: f[3], name: f[4]})
	}
	return out
}

// Launch applies the bundle's deployment objects (see the package doc) and returns once they are
// applied; the rollout is watched while the prober waits, and what stops it becomes the
// instance's exit (a warm.LaunchFailure). Cancelling ctx tears everything down (like Stop).
func (l *Launcher) Launch(ctx context.Context, s launch.Spec) (launch.Instance, error) {
	if s.DeployDir == "" || s.Manifest == nil {
		return nil, errors.New("kubernetes launcher: it applies the restored bundle's deployment part: nothing was restored")
	}
	if l.cfg.Replica == "" {
		return nil, errors.New("kubernetes launcher: the region has no replica for the init container to restore from")
	}
	objs, err := readObjects(s.DeployDir)
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	mdata, err := s.Manifest.Marshal()
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: manifest: %w", err)
	}
	if len(mdata) > maxManifestBytes {
		return nil, fmt.Errorf("kubernetes launcher: the manifest is %d bytes, more than the %d a ConfigMap holds", len(mdata), maxManifestBytes)
	}
	sum := sha256.Sum256(mdata)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	ns := l.cfg.Namespace
	// The content policy and the mapping come before anything is written (leftovers included):
	// a bundle refused leaves the cluster as it was.
	if err := l.checkObjects(objs); err != nil {
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	refs := make([]ref, len(objs))
	for i, o := range objs {
		gvk := o.obj.GroupVersionKind()
		gvr, namespaced, err := l.rm.resourceFor(ctx, gvk)
		if err != nil {
			return nil, fmt.Errorf("kubernetes launcher: %s: %w", o, err)
		}
		if !namespaced {
			return nil, fmt.Errorf("kubernetes launcher: %s %s/%s: kind: %s is cluster-scoped: a boot applies namespaced objects only, which its owner and teardown reach; no launcher key allows it (apply it once yourself): %w",
				gvk.Kind, ns, o.obj.GetName(), o.file, fleet.ErrRefused)
		}
		refs[i] = ref{gvr: gvr, kind: gvk.Kind, name: o.obj.GetName()}
	}
	if removed, err := l.CleanupLeftovers(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes launcher: leftovers of an earlier boot in namespace %s: %w", ns, err)
	} else {
		for _, r := range removed {
			l.cfg.Log.Info("removed a leftover boot", "namespace", ns, "what", r)
		}
	}

	// Refuse any object that exists already: a boot creates what it applies, and never takes
	// over (or, through its owner, garbage-collects) an object it did not create.
	for i, o := range objs {
		gvr := refs[i].gvr
		gctx, cancel := withTimeout(ctx)
		cur, err := l.dyn.Resource(gvr).Namespace(ns).Get(gctx, o.obj.GetName(), metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("kubernetes launcher: get %s in namespace %s: %w", o, ns, err)
		case cur.GetLabels()[LabelManagedBy] == ManagedBy && cur.GetLabels()[LabelRun] != "":
			return nil, fmt.Errorf("kubernetes launcher: %s already exists in namespace %s: boot %s (region %s) runs there; wait for it or stop it",
				o, ns, sanitize(cur.GetLabels()[LabelRun]), sanitize(cur.GetLabels()[LabelRegion]))
		default:
			return nil, fmt.Errorf("kubernetes launcher: %s already exists in namespace %s and was not created by lifeboat: it is left alone; boot into a namespace of its own", o, ns)
		}
	}

	run := newRunID()
	// Write ahead: the caller (a drill) records the boot's namespace and run label before any
	// object exists, so a clean-up after kill -9 knows what was its.
	if s.Starting != nil {
		if err := s.Starting(launch.Started{Namespace: ns, Run: run, BaseURL: l.cfg.URL}); err != nil {
			return nil, fmt.Errorf("kubernetes launcher: record the boot before it starts: %w", err)
		}
	}
	in := &instance{l: l, ns: ns, run: run, refs: refs, exited: make(chan struct{}), stop: make(chan struct{})}
	host, boot := launch.ThisHost()
	owner := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": ownerName(run), "namespace": ns,
			"labels":      toAny(bootRef{run: run, region: l.cfg.Region}.labels()),
			"annotations": map[string]any{AnnotationHeartbeat: time.Now().UTC().Format(time.RFC3339Nano)},
		},
		"data": map[string]any{
			manifestKey:   string(mdata),
			"host":        host,
			"boot_id":     boot,
			"pid":         strconv.Itoa(os.Getpid()),
			"pid_start":   launch.ProcStart(os.Getpid()),
			"heartbeat_s": strconv.FormatFloat(l.cfg.Heartbeat.Seconds(), 'f', -1, 64),
			"objects":     encodeRefs(refs),
			"digest":      digest,
		},
	}}
	actx, cancel := withTimeout(ctx)
	cm, err := l.dyn.Resource(gvrConfigMap).Namespace(ns).Apply(actx, ownerName(run), owner, metav1.ApplyOptions{FieldManager: FieldManager})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: create the boot's owner ConfigMap %s in namespace %s: %w", ownerName(run), ns, err)
	}
	b := bootRef{run: run, region: l.cfg.Region, namespace: ns, digest: digest, owner: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "name": cm.GetName(), "uid": string(cm.GetUID()),
	}}
	applied := make([]*unstructured.Unstructured, 0, len(objs))
	fail := func(err error) (launch.Instance, error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.TeardownTimeout)
		defer cancel()
		if rerr := l.remove(sctx, run, refs); rerr != nil {
			err = fmt.Errorf("%w (and the teardown: %v)", err, rerr)
		}
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	for i, o := range objs {
		u, err := l.prepare(o, b)
		if err != nil {
			return fail(err)
		}
		actx, cancel := withTimeout(ctx)
		out, err := l.dyn.Resource(refs[i].gvr).Namespace(ns).Apply(actx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager})
		cancel()
		if err != nil {
			return fail(fmt.Errorf("apply %s in namespace %s: %w", o, ns, err))
		}
		applied = append(applied, out)
	}
	in.port = servingPort(applied, l.cfg)
	if l.cfg.URL != "" {
		in.baseURL = l.cfg.URL
	} else {
		p, err := freePort()
		if err != nil {
			return fail(fmt.Errorf("pick a local port for the port-forward: %w", err))
		}
		in.localPort = p
		in.baseURL = "http://127.0.0.1:" + strconv.Itoa(p)
	}
	in.wg.Add(2)
	go in.heartbeat()
	go in.watch()
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = in.Stop(context.Background())
			case <-in.stop:
			}
		}()
	}
	l.cfg.Log.Info("applied the bundle", "namespace", ns, "run", run, "objects", len(refs))
	return in, nil
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// instance is one boot in the cluster.
type instance struct {
	l         *Launcher
	ns, run   string
	refs      []ref
	baseURL   string
	port      int // the container port
	localPort int // the port-forward's local port (0: the fleet's URL)

	mu      sync.Mutex
	failure *warm.LaunchFailure // set before exited is closed
	exited  chan struct{}
	stop    chan struct{}
	stopped bool
	wg      sync.WaitGroup
	pf      *forward
	// fwdErr is the last port-forward's failure (nil once one opens), fwdFails how many failed
	// in a row: forwardAttempts of them are the verdict PORT_FORWARD, never a LOADING.
	fwdErr   error
	fwdFails int
}

var (
	_ launch.Instance = (*instance)(nil)
	_ warm.Diagnoser  = (*instance)(nil)
)

func (in *instance) BaseURL() string         { return in.baseURL }
func (in *instance) Exited() <-chan struct{} { return in.exited }

// Run is the boot's id (the lifeboat.dev/run label of everything it applied).
func (in *instance) Run() string { return in.run }

func (in *instance) ExitErr() error {
	select {
	case <-in.exited:
	default:
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.failure == nil {
		return nil
	}
	return in.failure
}

// LogTail is the failed container's last lines when the boot failed, else the serving
// container's current ones; redacted and sanitised for the terminal.
func (in *instance) LogTail(n int) string {
	in.mu.Lock()
	f := in.failure
	in.mu.Unlock()
	if f != nil {
		return lastLines(f.LogTail, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := in.pods(ctx)
	if err != nil || len(pods) == 0 {
		return ""
	}
	return in.l.logs(ctx, in.ns, pods[0].Name, in.servingContainer(pods[0].Spec.Containers), false, n)
}

func (in *instance) fail(f *warm.LaunchFailure) {
	in.mu.Lock()
	defer in.mu.Unlock()
	select {
	case <-in.exited:
		return
	default:
	}
	in.failure = f
	close(in.exited)
}

// heartbeat renews the owner's heartbeat until the boot stops, so that a later run can tell a
// crashed boot's objects from a live one's on another machine.
func (in *instance) heartbeat() {
	defer in.wg.Done()
	t := time.NewTicker(in.l.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-in.stop:
			return
		case <-t.C:
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationHeartbeat, time.Now().UTC().Format(time.RFC3339Nano))
		ctx, cancel := withTimeout(context.Background())
		_, err := in.l.dyn.Resource(gvrConfigMap).Namespace(in.ns).Patch(ctx, ownerName(in.run), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager})
		cancel()
		if err != nil {
			in.l.cfg.Log.Warn("boot heartbeat", "namespace", in.ns, "run", in.run, "err", err)
		}
	}
}

// watch looks at the rollout until the boot stops: a named failure ends the instance; a Ready pod
// gets the port-forward (when the fleet gives no URL).
func (in *instance) watch() {
	defer in.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-in.stop
		cancel()
	}()
	t := time.NewTicker(in.l.cfg.Poll)
	defer t.Stop()
	for {
		if f := in.diagnose(ctx, false); f != nil {
			in.fail(f)
			return
		}
		if in.localPort != 0 {
			in.ensureForward(ctx)
			in.mu.Lock()
			failed := in.fwdFails >= forwardAttempts
			in.mu.Unlock()
			if failed {
				in.fail(in.forwardFailure())
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Diagnose names why the replica is not serving when the probe's time ran out (warm.Diagnoser).
func (in *instance) Diagnose(ctx context.Context) *warm.LaunchFailure {
	if f := in.diagnose(ctx, true); f != nil {
		return f
	}
	return in.forwardFailure()
}

// Stop tears the boot down: the port-forward, every object it applied and its owner, waiting
// until they and their pods are gone — for the launcher's TeardownTimeout, whatever ctx's
// deadline or cancellation (the pods' grace period is the cluster's, often longer than a
// caller's default; an interrupted boot still removes what it made). Idempotent.
func (in *instance) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.l.cfg.TeardownTimeout)
	defer cancel()
	in.mu.Lock()
	if !in.stopped {
		in.stopped = true
		close(in.stop)
	}
	pf := in.pf
	in.pf = nil
	in.mu.Unlock()
	if pf != nil {
		pf.close()
	}
	done := make(chan struct{})
	go func() { in.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	err := in.l.remove(ctx, in.run, in.refs)
	in.mu.Lock()
	select {
	case <-in.exited:
	default:
		close(in.exited)
	}
	in.mu.Unlock()
	return err
}
