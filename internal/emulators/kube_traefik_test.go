package emulators

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// backend serves its name on the cluster IP of a new Service name (port 8000) until the test ends.
func backend(t *testing.T, k *Kube, ns, name string) {
	t.Helper()
	ip := k.ServiceIP(t, ns, name, 8000)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "8000"))
	if err != nil {
		t.Fatalf("listening on %s's cluster IP %s: %v", name, ip, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func setRoute(t *testing.T, k *Kube, ns string, weights map[string]int64) {
	t.Helper()
	var refs []any
	for _, name := range []string{"region-a", "region-b"} {
		refs = append(refs, map[string]any{"name": name, "port": int64(8000), "weight": weights[name]})
	}
	route := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "chat", "namespace": ns},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "traefik"}},
			"rules":      []any{map[string]any{"backendRefs": refs}},
		},
	}}
	body, _ := route.MarshalJSON()
	_, err := k.Dynamic(t).Resource(HTTPRoutesGVR).Namespace(ns).Patch(context.Background(), "chat", "application/apply-patch+yaml", body,
		metav1.PatchOptions{FieldManager: "test", Force: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
}

// count sends n requests through Traefik and counts which backend answered.
func count(t *testing.T, url string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	c := &http.Client{Timeout: 5 * time.Second}
	for range n {
		resp, err := c.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[strconv.Itoa(resp.StatusCode)+" "+string(b)]++
	}
	return got
}

// An HTTPRoute's backendRefs weights carry real traffic through Traefik's Gateway API provider
// to local servers on the Services' cluster IPs, and a weight change moves it.
func TestTraefikHTTPRouteWeights(t *testing.T) {
	t.Parallel()
	k := SharedKube(t)
	ns := k.Namespace(t)
	backend(t, k, ns, "region-a")
	backend(t, k, ns, "region-b")
	tr := StartTraefik(t, k, ns)

	setRoute(t, k, ns, map[string]int64{"region-a": 3, "region-b": 1})
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := count(t, tr.URL, 40)
		if got["200 region-a"] == 30 && got["200 region-b"] == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("weights 3:1 over 40 requests: got %v\n%s", got, tr.Output())
		}
		time.Sleep(200 * time.Millisecond)
	}
	setRoute(t, k, ns, map[string]int64{"region-a": 0, "region-b": 1})
	deadline = time.Now().Add(20 * time.Second)
	for {
		got := count(t, tr.URL, 20)
		if got["200 region-b"] == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("weights 0:1: got %v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
