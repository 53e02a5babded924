package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"lifeboat/fleet/launch"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/providers"
	"lifeboat/verify/warm"
)

// Labels and annotations the launcher puts on everything it creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "lifeboat"
	LabelRun       = "lifeboat.dev/run"    // one boot's id
	LabelRegion    = "lifeboat.dev/region" // the fleet's region
	// AnnotationHeartbeat on the owner ConfigMap is renewed while its boot runs: a boot whose
	// heartbeat is older than three intervals is a leftover any later run removes.
	AnnotationHeartbeat = "lifeboat.dev/heartbeat"
	FieldManager        = "lifeboat"
	// BundleVolume is the emptyDir the init container restores the bundle into.
	BundleVolume  = "lifeboat-bundle"
	InitContainer = "lifeboat-restore"
)

// Defaults of Config's zero values.
const (
	DefaultModelVolume  = "model"
	DefaultEngineVolume = "engine-config"
	DefaultHeartbeat    = 10 * time.Second
	DefaultPoll         = time.Second
	DefaultLogLines     = 40
	// DefaultTeardownTimeout is longer than a pod's default grace period (30 s): a teardown
	// waits until the pods are gone, not only deleted.
	DefaultTeardownTimeout = 2 * time.Minute
	// forwardAttempts is how many port-forwards in a row may fail before that is the verdict.
	forwardAttempts = 3
)

// Config is one region's Kubernetes launcher.
type Config struct {
	Region string // the fleet's region (a label on everything applied)
	// Kubeconfig is the kubeconfig file ("" = $KUBECONFIG or ~/.kube/config, else the
	// in-cluster service account); Context one of its contexts ("" = its current one).
	Kubeconfig, Context string
	Namespace           string // where the bundle's objects are applied (required)
	// URL is where the prober reaches the replica (a Service DNS name when Lifeboat runs in the
	// cluster, an ingress URL); "" = a port-forward through the API server to the pod.
	URL string
	// Image is the init container's image: a lifeboat binary that restores the bundle from
	// Replica (the region's replica store URL) into the pod.
	Image, Replica string
	// RestoreSecret names a Secret whose keys are the init container's environment (the replica
	// store's credentials); "" = none (workload identity).
	RestoreSecret string
	// Port is the container port the port-forward reaches; 0 = the serving container's port
	// named "http", else its first.
	Port int
	// ModelVolume and EngineVolume are the pod volumes of the bundle's Deployment that hold the
	// model and the engine config; both are replaced by the restored bundle.
	ModelVolume, EngineVolume string
	Env                       []string // KEY=VALUE added to the serving container (no secrets)
	// ScheduleTimeout is how long a pod may stay Unschedulable before that is the verdict (a
	// cluster autoscaler adding GPU nodes needs minutes); 0 = at once.
	ScheduleTimeout time.Duration
	Heartbeat       time.Duration // the owner's heartbeat (default 10s)
	Poll            time.Duration // how often the rollout is looked at (default 1s)
	// TeardownTimeout bounds a teardown, which waits until the boot's pods are gone (default
	// DefaultTeardownTimeout); what remains then is named in the error.
	TeardownTimeout time.Duration
	// ReplaceInitContainers are the bundle's init containers that write the model (or engine)
	// volume and that the launcher's own restore replaces (they are dropped); any other init
	// container writing there is refused (policy.go).
	ReplaceInitContainers []string
	// Allow lists what the content policy lets the bundle's objects do (AllowKeys).
	Allow []string
	Log   *slog.Logger
}

// Launcher is the Kubernetes launcher (launch.Launcher).
type Launcher struct {
	cfg  Config
	rc   *rest.Config
	dyn  dynamic.Interface
	http *http.Client
	rm   *mapper
}

var _ launch.Launcher = (*Launcher)(nil)

// New checks cfg and connects (lazily: nothing is sent before Launch or CleanupLeftovers).
func New(cfg Config) (*Launcher, error) {
	if cfg.Namespace == "" {
		return nil, errors.New("kubernetes launcher: namespace is required")
	}
	if cfg.Image == "" {
		return nil, errors.New("kubernetes launcher: image (a lifeboat image for the init container that restores the model) is required")
	}
	for _, kv := range cfg.Env {
		if k, _, _ := strings.Cut(kv, "="); providers.SecretEnvName(k) {
			return nil, fmt.Errorf("kubernetes launcher: env %s looks like a secret: it would be written into the Deployment in clear; put it in a Secret the bundle's manifests reference", k)
		}
	}
	if cfg.URL != "" {
		u, err := warm.NormalizeBaseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("kubernetes launcher: url: %w", err)
		}
		cfg.URL = u
	}
	if cfg.ModelVolume == "" {
		cfg.ModelVolume = DefaultModelVolume
	}
	if cfg.EngineVolume == "" {
		cfg.EngineVolume = DefaultEngineVolume
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.TeardownTimeout <= 0 {
		cfg.TeardownTimeout = DefaultTeardownTimeout
	}
	for _, a := range cfg.Allow {
		if !slices.Contains(AllowKeys, a) {
			return nil, fmt.Errorf("kubernetes launcher: allow: %q is not one of %s", a, strings.Join(AllowKeys, ", "))
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	// The one kubeconfig loader the Kubernetes parts share: the file read bounded, no credential
	// in any message, every answer bounded. Each call here is bounded by withTimeout's context
	// instead of a client timeout, which would also cut the port-forward's streams.
	cl, err := kubeclient.Open(kubeclient.Config{Kubeconfig: cfg.Kubeconfig, Context: cfg.Context})
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	rc := cl.REST
	rc.Timeout = 0
	// client-go's default (5 requests/s) would make a teardown that waits for its objects, the
	// rollout watch and the heartbeat wait on each other; every loop here is already paced.
	rc.QPS, rc.Burst = 50, 100
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	dyn, err := dynamic.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes launcher: %w", err)
	}
	return &Launcher{cfg: cfg, rc: rc, dyn: dyn, http: hc, rm: &mapper{rc: rc, http: hc, lists: map[string]*metav1.APIResourceList{}}}, nil
}

// Namespace is where the launcher applies.
func (l *Launcher) Namespace() string { return l.cfg.Namespace }

var (
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrPod        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrEvent      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	gvrDeployment = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrReplicaSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

func newRunID() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ownerName is the ConfigMap that owns one boot's objects.
func ownerName(run string) string { return "lifeboat-boot-" + run }

// sanitize is the one treatment of any string the API server (or a pod) sent.
func sanitize(s string) string { return providers.Sanitize(s, 400) }

// withTimeout bounds one API call.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}
