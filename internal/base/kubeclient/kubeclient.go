package kubeclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"lifeboat/internal/base/redact"
)

// MaxKubeconfig bounds a kubeconfig file.
const MaxKubeconfig = 1 << 20

// MaxAnswer bounds one answer body from the API server.
const MaxAnswer = 8 << 20

// Config is what names a cluster: a kubeconfig file ("" is $KUBECONFIG, then ~/.kube/config,
// then the in-cluster service account), one of its contexts ("" is its current context), and
// the timeout of one exchange.
type Config struct {
	Kubeconfig string
	Context    string
	Timeout    time.Duration
}

// Cluster is an opened (not yet contacted) API server.
type Cluster struct {
	REST *rest.Config
	// Namespace is the context's namespace ("default" when it names none; in a pod, the pod's).
	Namespace string
	// Server is the API server's URL, for messages (no credential is in it).
	Server string
}

// Open loads c's kubeconfig (bounded) and returns its REST config with bounded answers and c's
// timeout. It contacts nothing.
func Open(c Config) (*Cluster, error) {
	var cc clientcmd.ClientConfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context}
	path := c.Kubeconfig
	if path == "" {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		for _, p := range rules.GetLoadingPrecedence() {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
	}
	switch {
	case path != "":
		raw, err := readBounded(path)
		if err != nil {
			return nil, err
		}
		kc, err := clientcmd.Load(raw)
		if err != nil {
			// the decoder's message can quote the file: never echo it (it may hold a token).
			return nil, fmt.Errorf("kubeconfig %s: not a kubeconfig (YAML or JSON with clusters, users and contexts)", path)
		}
		origin(kc, path)
		if err := clientcmd.ResolveLocalPaths(kc); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %v", path, err)
		}
		if c.Context != "" {
			if _, ok := kc.Contexts[c.Context]; !ok {
				return nil, fmt.Errorf("kubeconfig %s: context %q: not in the file", path, c.Context)
			}
		} else if kc.CurrentContext == "" {
			return nil, fmt.Errorf("kubeconfig %s: no current-context; name one (context)", path)
		}
		cc = clientcmd.NewNonInteractiveClientConfig(*kc, c.Context, overrides, nil)
	case c.Context != "":
		return nil, fmt.Errorf("context %q: no kubeconfig ($KUBECONFIG, ~/.kube/config) to find it in", c.Context)
	default:
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a pod: %v", err)
		}
		ns := "default"
		if b, err := readBounded("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
			ns = string(b)
		}
		return finish(rc, ns, c.Timeout), nil
	}
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %s", path, redact.Sanitize(err.Error(), 300))
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return finish(rc, ns, c.Timeout), nil
}

func origin(kc *clientcmdapi.Config, path string) {
	for _, o := range kc.AuthInfos {
		o.LocationOfOrigin = path
	}
	for _, o := range kc.Clusters {
		o.LocationOfOrigin = path
	}
	for _, o := range kc.Contexts {
		o.LocationOfOrigin = path
	}
}

// FromREST wraps an existing REST config (tests) as Open does.
func FromREST(rc *rest.Config, namespace string, timeout time.Duration) *Cluster {
	return finish(rest.CopyConfig(rc), namespace, timeout)
}

func finish(rc *rest.Config, ns string, timeout time.Duration) *Cluster {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	rc.Timeout = timeout
	rc.UserAgent = "lifeboat"
	if rc.QPS == 0 && rc.RateLimiter == nil {
		// client-go's default, 5 requests/s with bursts of 10, would hold a failover step back:
		// one spanning a dozen routes waits on the client, not on the API server.
		rc.QPS, rc.Burst = 50, 100
	}
	// Lifeboat's own bound on answers; client-go reads whole bodies.
	inner := rc.WrapTransport
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if inner != nil {
			rt = inner(rt)
		}
		return boundedTransport{rt}
	}
	return &Cluster{REST: rc, Namespace: ns, Server: rc.Host}
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKubeconfig+1))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %v", path, err)
	}
	if len(b) > MaxKubeconfig {
		return nil, fmt.Errorf("kubeconfig %s: larger than %d bytes", path, MaxKubeconfig)
	}
	return b, nil
}

type boundedTransport struct{ rt http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxAnswer}
	return resp, nil
}

// ErrTooLarge is matched by an answer cut off at MaxAnswer.
var ErrTooLarge = errors.New("API server answer too large")

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// one byte more tells a body of exactly MaxAnswer from a longer one
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxAnswer)
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// Answered reports whether err came from the API server itself (an HTTP status it sent),
// rather than from not reaching it (refused, reset, timed out, TLS, a cut-off answer).
func Answered(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	// a server that is there but not serving (503, 504, 429) is not answering either
	return !apierrors.IsServiceUnavailable(err) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTooManyRequests(err)
}

// Message is err's text fit for a terminal: sanitised, one line, bounded.
func Message(err error) string {
	return redact.Sanitize(err.Error(), 300)
}

// Canceled reports whether err is ctx's own cancellation (Ctrl-C), not a timeout.
func Canceled(ctx context.Context, err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(context.Cause(ctx), context.Canceled)
}
