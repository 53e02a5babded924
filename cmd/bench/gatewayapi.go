package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"lifeboat/failover/routers/gatewayapi"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/kubeclient"
	"lifeboat/internal/emulators"
)

// gatewayAPIStep is section 7's gateway-api line: the same step as HAProxy's and Caddy's (two
// classes change), applied to two HTTPRoutes on a real kube-apiserver (etcd on tmpfs) and read
// back.
func gatewayAPIStep(ctx context.Context, dir string) error {
	kdir := filepath.Join(dir, "kube")
	os.MkdirAll(kdir, 0o755)
	k, err := emulators.StartKube(kdir)
	if err != nil {
		fmt.Printf("   gateway-api: NOT AVAILABLE — %v\n", err)
		return nil
	}
	defer k.Stop()
	ns, err := k.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("gateway-api bench: %v", err)
	}
	dyn, err := dynamic.NewForConfig(k.RESTConfig())
	if err != nil {
		return err
	}
	a, b := stepStates()
	routes := map[string]string{"eu-only": "route-eu", "global": "route-global"}
	services := map[string]gatewayapi.Backend{}
	for class, name := range routes {
		var refs []any
		for _, r := range benchClasses[class] {
			services[r] = gatewayapi.Backend{Name: "svc-" + r, Port: 8000}
			refs = append(refs, map[string]any{"name": "svc-" + r, "port": int64(8000), "weight": int64(a.Weights[class][r])})
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}, "rules": []any{map[string]any{"backendRefs": refs}}},
		}}
		if _, err := dyn.Resource(gatewayapi.HTTPRoutes).Namespace(ns.Name).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("gateway-api bench: %v", err)
		}
	}
	g, err := gatewayapi.NewForCluster(gatewayapi.Config{Namespace: ns.Name, Routes: routes, Services: services, Classes: benchClasses},
		kubeclient.FromREST(k.RESTConfig(), ns.Name, 5*time.Second))
	if err != nil {
		return err
	}
	// a step is, per class, a PUT (an etcd commit) on the resourceVersion last read back, then a
	// GET of each route: 4 requests, the classes' routes at once (2 round trips)
	var d router.Driver = g
	return stepLatencyGoal(ctx, "gateway-api (kube-apiserver v1.37.2 + etcd 3.4 on tmpfs, HTTPRoute PUT on the resourceVersion last read per class, the classes at once, then GET)", "goal p99 ≤ 20 ms", d, a, b)
}
