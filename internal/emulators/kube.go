package emulators

// A real Kubernetes control plane on loopback for the Kubernetes launcher and Gateway API driver
// tests, installed by `make kube` (a dependency of `make test`; mk/kube.mk). One per test binary
// (SharedKube, stopped by emulators.Main / StopShared in TestMain), a fresh namespace per test
// (Kube.Namespace): tests run in parallel against it.
//
//   etcd            Debian's etcd-server 3.4 (/usr/bin/etcd), its data on tmpfs.
//   kube-apiserver  v1.37.2 (./bin): secure port on 127.0.0.1, serving certificate from a CA
//                   made at start-up (Kube.CAFile); authorization RBAC, so a Role that lacks a
//                   verb really is refused; a service-account signing key, so ServiceAccounts
//                   get real tokens (TokenRequest); Service cluster IPs in KubeServiceCIDR.
//   kube-controller-manager  deployment, replicaset, garbage collector (ownerReference
//                   cascades), namespace, serviceaccount(-token), endpointslice, job,
//                   root-ca publisher controllers.
//   kube-scheduler  real scheduling: a pod asking for more nvidia.com/gpu than a node has, or
//                   not tolerating a taint, is PodScheduled=False reason Unschedulable with the
//                   scheduler's message ("0/2 nodes are available: 1 Insufficient
//                   nvidia.com/gpu, 1 node(s) had untolerated taint …").
//   kwok v0.8.0     two fake nodes without a kubelet: KubeGPUNode (KubeGPUsPerNode GPUs, no
//                   taint) and KubeTaintedNode (no GPUs, taint KubeTaint). Its stages make a
//                   scheduled pod Running and Ready within about a second (an IP from
//                   10.244.0.0/16), delete pods being deleted, and complete Jobs' pods.
//
// Credentials: Kube.Kubeconfig is the admin (user lifeboat-admin in system:masters, context
// KubeContext). Kube.UserKubeconfig mints a client-certificate kubeconfig for any user and
// groups; Kube.ServiceAccountKubeconfig one with a ServiceAccount's token: both have no rights
// until a test binds some, so RBAC tests are real.
//
// Failures a test can trigger: set the pod annotation FaultAnnotation ("lifeboat.test/fault",
// in a Deployment's pod template) to FaultImagePull, FaultCrashLoop, FaultOOMKilled or
// FaultNotReady and kwok gives the pod the container statuses (and a Warning event) the kubelet
// would; see the constants. Unschedulable needs no annotation: ask for KubeGPUsPerNode+1 GPUs.
// A pod's logs (pods/log, and ?previous=true for CrashLoopBackOff's last lines): Kube.PodLogs
// points every pod of a namespace at local files.
//
// Port-forward: Kube.ForwardPodPort(t, ns, pod, port, "127.0.0.1:PORT") creates a kwok
// PortForward (pod "" — a ClusterPortForward for every pod of the namespace, e.g. a Deployment's).
// The API server's pods/portforward (client-go tools/portforward, over SPDY or SPDY over
// WebSocket as kubectl port-forward does; both tested) then goes to kwok, serving the nodes' kubelet API on 127.0.0.1 with a
// certificate from the CA, which dials the local target — e.g. an engine-sim started by the test
// on 127.0.0.1:PORT. Create it before the launcher port-forwards; a pod must be Running.
//
// Data plane: Kubernetes refuses loopback addresses as pod endpoints but accepts a loopback
// Service range, and Linux routes all of 127/8 to lo: Kube.ServiceIP creates a Service and
// returns its cluster IP, and a test binds its backend (an engine-sim) on that IP and the port.
// StartTraefik (kube_traefik.go) runs Traefik v3.6.12's Gateway API provider against the control
// plane with a Gateway "traefik" in the test's namespace, sending to Services' cluster IPs
// (nativeLBByDefault): an HTTPRoute's backendRefs weights then split real requests among those
// backends (TestTraefikHTTPRouteWeights).
//
// The Gateway API CRDs v1.6.3 (standard channel) and kwok's PortForward/Logs CRDs are installed at
// start-up from the Go module cache (`go mod download`; `make kube` fetches them).

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeContext is the context name of every kubeconfig this package writes.
const KubeContext = "lifeboat-test"

// KubeServiceCIDR is the shared control plane's Service cluster IP range (loopback).
const KubeServiceCIDR = "127.0.96.0/20"

// EtcdBinary is Debian's etcd-server.
const EtcdBinary = "/usr/bin/etcd"

// Kube is a running control plane. Its fields are read-only.
type Kube struct {
	Kubeconfig string // admin kubeconfig file (context KubeContext, user in system:masters)
	URL        string // https://127.0.0.1:PORT
	CAFile     string // PEM of the CA that signed the serving certificate (and client certificates)

	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	admin  *rest.Config
	client *kubernetes.Clientset
	procs  []*Process // in start order; stopped in reverse

	etcdData string   // holds etcd's data directory (on tmpfs when there is one), removed by Stop
	etcdLock *os.File // the owner lock of etcdData, held while this process lives (see etcdOwnerLock)

	mapperOnce sync.Once
	restMapper *restmapper.DeferredDiscoveryRESTMapper
	dyn        dynamic.Interface
	mapperErr  error
}

var sharedKube shared[*Kube]

// SharedKube returns the test binary's control plane, starting it on first use (a few seconds).
// It stops in emulators.Main / StopShared. Missing binaries skip the test (fail it under
// LIFEBOAT_REQUIRE_EMULATORS=1).
func SharedKube(t testing.TB) *Kube {
	t.Helper()
	return sharedKube.get(t, "kube", StartKube)
}

// KubeBinary returns the path of a Kubernetes binary built into ./bin by `make kube`
// (kube-apiserver, kube-controller-manager, kube-scheduler, kwok, traefik), or ErrNotInstalled.
func KubeBinary(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %s is missing (run `make kube`): %w", name, p, ErrNotInstalled)
	}
	return p, nil
}

// StartKube starts etcd and kube-apiserver (waiting for /readyz), installs the CRDs, registers
// the fake nodes and starts kube-controller-manager, kube-scheduler and kwok, returning once the
// nodes are Ready; its files are in dir. Stop stops them; dir is the caller's to remove.
func StartKube(dir string) (*Kube, error) {
	bins := map[string]string{}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		p, err := KubeBinary(name)
		if err != nil {
			return nil, err
		}
		bins[name] = p
	}
	apiserver := bins["kube-apiserver"]
	if _, err := os.Stat(EtcdBinary); err != nil {
		return nil, fmt.Errorf("etcd: %s is missing (run `make kube`, which installs etcd-server): %w", EtcdBinary, ErrNotInstalled)
	}
	k := &Kube{dir: dir}
	ok := false
	defer func() {
		if !ok {
			k.Stop()
		}
	}()
	if err := k.writePKI(); err != nil {
		return nil, fmt.Errorf("kube: certificates: %w", err)
	}
	etcdURL, err := k.startEtcd()
	if err != nil {
		return nil, err
	}
	if err := k.startAPIServer(apiserver, etcdURL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := k.installCRDs(ctx); err != nil {
		return nil, err
	}
	if err := k.startCluster(ctx, bins); err != nil {
		return nil, err
	}
	ok = true
	return k, nil
}

// Stop stops every process of the control plane, the last started first.
func (k *Kube) Stop() {
	for i := len(k.procs) - 1; i >= 0; i-- {
		k.procs[i].Stop()
	}
	k.procs = nil
	if k.etcdData != "" {
		_ = os.RemoveAll(k.etcdData)
	}
	if k.etcdLock != nil {
		k.etcdLock.Close()
	}
}

// RESTConfig returns a copy of the admin client configuration.
func (k *Kube) RESTConfig() *rest.Config { return rest.CopyConfig(k.admin) }

// Clientset returns an admin clientset.
func (k *Kube) Clientset() *kubernetes.Clientset { return k.client }

// Namespace creates a fresh namespace for the test (with its "default" ServiceAccount, so pods
// are admitted at once) and deletes it when the test ends.
func (k *Kube) Namespace(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := k.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := k.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("kube: deleting namespace %s: %v", ns.Name, err)
		}
	})
	_, err = k.client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kube: creating the default ServiceAccount of %s: %v", ns.Name, err)
	}
	return ns.Name
}

// namespacePrefix turns a test name into a DNS label prefix: "t-" + lower-case name, at most 40
// characters, ending in "-" (GenerateName adds 5 random characters).
func namespacePrefix(name string) string {
	var b strings.Builder
	b.WriteString("t-")
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	s := strings.TrimRight(b.String(), "-")
	return s + "-"
}

// UserKubeconfig writes a kubeconfig (context KubeContext) that authenticates as user in groups
// with a client certificate signed by the control plane's CA, and returns its path. The user has
// no rights until a test binds some: use it to prove what a Role does and does not grant.
func (k *Kube) UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	certPEM, keyPEM, err := k.clientCert(user, groups)
	if err != nil {
		t.Fatalf("kube: client certificate for %s: %v", user, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k.writeKubeconfig(path, &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}, ""); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServiceAccountKubeconfig writes a kubeconfig (context KubeContext, default namespace
// namespace) holding a one-hour token of ServiceAccount namespace/name (created when missing),
// from the TokenRequest API, and returns its path: what a pod running as that ServiceAccount
// would present.
func (k *Kube) ServiceAccountKubeconfig(t testing.TB, namespace, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := k.client.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kube: creating ServiceAccount %s/%s: %v", namespace, name, err)
	}
	secs := int64(3600)
	tr, err := k.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube: token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := k.writeKubeconfig(path, &clientcmdapi.AuthInfo{Token: tr.Status.Token}, namespace); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServiceIP creates a ClusterIP Service namespace/name with one TCP port and no selector, and
// returns its cluster IP (in KubeServiceCIDR, on loopback): a test binds its local server on
// ip:port, and whatever sends to the Service's cluster IP (Traefik with nativeLB) reaches it.
func (k *Kube) ServiceIP(t testing.TB, namespace, name string, port int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := k.client.CoreV1().Services(namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube: creating Service %s/%s: %v", namespace, name, err)
	}
	return svc.Spec.ClusterIP
}

func (k *Kube) startEtcd() (string, error) {
	// etcd's fsyncs dominate a control plane's writes; 3.4 has no --unsafe-no-fsync, so its data
	// lives on tmpfs when there is one.
	dataParent := k.dir
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dataParent = "/dev/shm"
	}
	removeStaleEtcdData(dataParent)
	owned, err := os.MkdirTemp(dataParent, "lifeboat-etcd-")
	if err != nil {
		return "", fmt.Errorf("etcd: %w", err)
	}
	if k.etcdLock, err = lockEtcdData(owned); err != nil {
		_ = os.RemoveAll(owned)
		return "", fmt.Errorf("etcd: lock %s: %w", owned, err)
	}
	data := filepath.Join(owned, "data") // removed between start attempts; the lock stays
	var url string
	p, err := startWithRetry(context.Background(), func() (*Process, error) {
		_ = os.RemoveAll(data)
		client, err := FreePort()
		if err != nil {
			return nil, err
		}
		peer, err := FreePort()
		if err != nil {
			return nil, err
		}
		url = "http://127.0.0.1:" + strconv.Itoa(client)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
		p, err := spawnProcess("etcd", EtcdBinary, []string{
			"--name=lifeboat", "--data-dir=" + data,
			"--listen-client-urls=" + url, "--advertise-client-urls=" + url,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=lifeboat=" + peerURL,
			"--log-level=warn", "--logger=zap", "--quota-backend-bytes=1073741824",
		}, nil)
		if err != nil {
			return nil, err
		}
		p.Addr = strings.TrimPrefix(url, "http://")
		if err := waitReady(&http.Client{Timeout: 2 * time.Second}, url+"/health", 30*time.Second, p.done); err != nil {
			p.Stop()
			return nil, fmt.Errorf("etcd did not become healthy on %s: %w\n%s", url, err, p.Output())
		}
		return p, nil
	})
	if err != nil {
		_ = os.RemoveAll(owned)
		return "", err
	}
	k.procs = append(k.procs, p)
	k.etcdData = owned
	return url, nil
}

// etcdOwnerLock is the file in an etcd data directory its test binary holds an flock on for as
// long as it lives: a lock is released by the kernel when its holder exits (kill -9 too), and
// unlike a pid it means the same in every PID namespace sharing /dev/shm.
const etcdOwnerLock = "owner.lock"

// lockEtcdData takes the owner lock of dir and returns its file: the lock holds while the file
// is open, and the kernel releases it when the process exits (kill -9 too).
func lockEtcdData(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, etcdOwnerLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleEtcdData removes the etcd data directories of test binaries that died without
// StopShared (a TestMain without emulators.Main, a kill -9): on tmpfs they would hold memory.
// A directory is stale when its owner lock can be taken; one without a lock file is left alone
// unless it is an hour old (its owner may be between creating it and locking it).
func removeStaleEtcdData(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "lifeboat-etcd-*"))
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, etcdOwnerLock), os.O_RDWR, 0)
		if err != nil {
			if st, serr := os.Stat(d); errors.Is(err, fs.ErrNotExist) && serr == nil && time.Since(st.ModTime()) > time.Hour {
				_ = os.RemoveAll(d)
			}
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(d)
		}
		f.Close()
	}
}

func (k *Kube) startAPIServer(bin, etcdURL string) error {
	p, err := startWithRetry(context.Background(), func() (*Process, error) {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		k.URL = "https://127.0.0.1:" + strconv.Itoa(port)
		p, err := spawnProcess("kube-apiserver", bin, []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + filepath.Join(k.dir, "apiserver-certs"),
			"--tls-cert-file=" + k.path("serving.crt"), "--tls-private-key-file=" + k.path("serving.key"),
			"--client-ca-file=" + k.CAFile,
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + k.path("sa.key"),
			"--service-account-signing-key-file=" + k.path("sa.key"),
			"--service-cluster-ip-range=" + KubeServiceCIDR,
			"--authorization-mode=RBAC",
			"--endpoint-reconciler-type=none",
			// it taints a new node not-ready until the node lifecycle controller (not run: kwok's
			// nodes have no kubelet to evict from) lifts it
			"--disable-admission-plugins=TaintNodesByCondition",
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-client-certificate=" + k.path("admin.crt"), "--kubelet-client-key=" + k.path("admin.key"),
			"--kubelet-certificate-authority=" + k.CAFile,
			"--profiling=false",
			"--v=0",
		}, nil)
		if err != nil {
			return nil, err
		}
		p.Addr = "127.0.0.1:" + strconv.Itoa(port)
		if err := k.loadAdmin(); err != nil {
			p.Stop()
			return nil, err
		}
		hc, err := rest.HTTPClientFor(k.admin)
		if err != nil {
			p.Stop()
			return nil, err
		}
		hc.Timeout = 2 * time.Second
		if err := waitReady(hc, k.URL+"/readyz", 90*time.Second, p.done); err != nil {
			p.Stop()
			return nil, fmt.Errorf("kube-apiserver did not become ready on %s: %w\n%s", k.URL, err, p.Output())
		}
		return p, nil
	})
	if err != nil {
		return err
	}
	k.procs = append(k.procs, p)
	return nil
}

// loadAdmin writes the admin kubeconfig for k.URL and builds the admin client from it.
func (k *Kube) loadAdmin() error {
	k.Kubeconfig = k.path("admin.kubeconfig")
	certPEM, err := os.ReadFile(k.path("admin.crt"))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(k.path("admin.key"))
	if err != nil {
		return err
	}
	if err := k.writeKubeconfig(k.Kubeconfig, &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}, ""); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kube: admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	k.admin = cfg
	k.client, err = kubernetes.NewForConfig(cfg)
	return err
}

func (k *Kube) writeKubeconfig(path string, auth *clientcmdapi.AuthInfo, namespace string) error {
	ca, err := os.ReadFile(k.CAFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeContext] = &clientcmdapi.Cluster{Server: k.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos[KubeContext] = auth
	cfg.Contexts[KubeContext] = &clientcmdapi.Context{Cluster: KubeContext, AuthInfo: KubeContext, Namespace: namespace}
	cfg.CurrentContext = KubeContext
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("kube: writing %s: %w", path, err)
	}
	return nil
}

// waitReady polls url until it answers 200, the process exits or the timeout passes.
func waitReady(hc *http.Client, url string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s: %s", url, resp.Status)
		} else {
			last = err
		}
		select {
		case <-exited:
			return errors.New("process exited")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timeout after %s: %v", timeout, last)
		}
	}
}

func (k *Kube) path(name string) string { return filepath.Join(k.dir, name) }

// writePKI makes the CA, the API server's serving certificate, the admin client certificate and
// the service-account signing key (ECDSA P-256: milliseconds, where RSA would take a second).
func (k *Kube) writePKI() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lifeboat-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return err
	}
	k.caCert, err = x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	k.caKey = caKey
	k.CAFile = k.path("ca.crt")
	if err := os.WriteFile(k.CAFile, pemBlock("CERTIFICATE", caDER), 0o644); err != nil {
		return err
	}
	serving, servingKey, err := k.signCert(servingTemplate("kube-apiserver"))
	if err != nil {
		return err
	}
	adminCert, adminKey, err := k.clientCert("lifeboat-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"serving.crt": serving, "serving.key": servingKey,
		"admin.crt": adminCert, "admin.key": adminKey,
		"sa.key": pemBlock("EC PRIVATE KEY", saDER),
	} {
		if err := os.WriteFile(k.path(name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// servingTemplate is a server certificate for 127.0.0.1 and localhost.
func servingTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.0.96.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

// clientCert returns a client certificate and key (PEM) for user in groups, signed by the CA.
func (k *Kube) clientCert(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	return k.signCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (k *Kube) signCert(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(7 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, k.caCert, key.Public(), k.caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TLSConfig returns a TLS configuration that trusts the control plane's CA.
func (k *Kube) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(k.caCert)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
