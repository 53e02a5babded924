package emulators

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Gateway API resources (v1, standard channel).
var (
	GatewayClassesGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	GatewaysGVR       = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	HTTPRoutesGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// TraefikGatewayClass is the GatewayClass StartTraefik creates (once) for Traefik's controller.
const TraefikGatewayClass = "lifeboat-traefik"

// Traefik is a real Traefik v3 with its Gateway API provider, watching one namespace of a Kube.
type Traefik struct {
	URL       string // http://127.0.0.1:PORT — the Gateway's HTTP listener
	Namespace string
	Gateway   string // the Gateway's name, in Namespace: an HTTPRoute's parentRefs name
	*Process
}

// StartTraefik runs Traefik against k, watching namespace only, with a Gateway named "traefik"
// in it whose HTTP listener is the returned URL, and waits until Traefik reports the Gateway
// Programmed. It stops when the test ends.
//
// Traefik sends to a Service's cluster IP and port (nativeLBByDefault), not to its endpoints:
// the cluster IPs are on loopback (KubeServiceCIDR), so a backend is a local server listening on
// its Service's cluster IP (Kube.ServiceIP). An HTTPRoute in namespace with
// parentRefs [{name: traefik}] and backendRefs [{name: SERVICE, port: PORT, weight: W}, …]
// splits requests to URL by weight (Traefik's weighted round robin) among those servers.
func StartTraefik(t testing.TB, k *Kube, namespace string) *Traefik {
	t.Helper()
	bin, err := KubeBinary("traefik")
	if err != nil {
		Unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dyn := k.Dynamic(t)
	gc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": TraefikGatewayClass},
		"spec":     map[string]any{"controllerName": "traefik.io/gateway-controller"},
	}}
	if _, err := dyn.Resource(GatewayClassesGVR).Create(ctx, gc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("traefik: creating the GatewayClass: %v", err)
	}

	var tr *Traefik
	for attempt := 0; ; attempt++ {
		web, err1 := FreePort()
		ping, err2 := FreePort()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		p, err := spawnProcess("traefik", bin, []string{
			"--entryPoints.web.address=127.0.0.1:" + strconv.Itoa(web),
			"--entryPoints.traefik.address=127.0.0.1:" + strconv.Itoa(ping),
			"--ping=true",
			"--providers.kubernetesGateway=true",
			"--providers.kubernetesGateway.namespaces=" + namespace,
			"--providers.kubernetesGateway.nativeLBByDefault=true",
			"--providers.kubernetesGateway.throttleDuration=0s",
			"--providers.kubernetesGateway.statusAddress.ip=127.0.0.1",
			"--log.level=INFO",
			"--global.checkNewVersion=false", "--global.sendAnonymousUsage=false",
		}, []string{"KUBECONFIG=" + k.Kubeconfig})
		if err != nil {
			t.Fatal(err)
		}
		err = waitReady(&http.Client{Timeout: 2 * time.Second}, "http://127.0.0.1:"+strconv.Itoa(ping)+"/ping", 30*time.Second, p.done)
		if err != nil {
			p.Stop()
			if attempt < 2 {
				continue // a free port taken in between
			}
			t.Fatalf("traefik did not start: %v\n%s", err, p.Output())
		}
		p.Addr = "127.0.0.1:" + strconv.Itoa(web)
		tr = &Traefik{URL: "http://" + p.Addr, Namespace: namespace, Gateway: "traefik", Process: p}
		t.Cleanup(p.Stop)
		break
	}

	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": tr.Gateway, "namespace": namespace},
		"spec": map[string]any{
			"gatewayClassName": TraefikGatewayClass,
			"listeners": []any{map[string]any{
				"name": "web", "protocol": "HTTP", "port": int64(portOf(tr.Addr)),
				"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "Same"}},
			}},
		},
	}}
	if _, err := dyn.Resource(GatewaysGVR).Namespace(namespace).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatalf("traefik: creating the Gateway: %v", err)
	}
	for {
		u, err := dyn.Resource(GatewaysGVR).Namespace(namespace).Get(ctx, tr.Gateway, metav1.GetOptions{})
		if err == nil && conditionTrue(u, "Programmed") {
			return tr
		}
		select {
		case <-ctx.Done():
			t.Fatalf("traefik: the Gateway is not Programmed: %v\n%s", ctx.Err(), tr.Output())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func portOf(addr string) int {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			p, _ := strconv.Atoi(addr[i+1:])
			return p
		}
	}
	return 0
}

// conditionTrue reports whether status.conditions holds typ with status "True".
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
