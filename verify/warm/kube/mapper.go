package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// mapper finds the resource of a kind by asking the API server for its group-version's resource
// list (GET /api/v1, /apis/GROUP/VERSION), cached: the client-go discovery packages would
// register every API group in the binary at start-up.
type mapper struct {
	rc    *rest.Config
	http  *http.Client
	mu    sync.Mutex
	lists map[string]*metav1.APIResourceList
}

const maxDiscoveryBytes = 4 << 20

func (m *mapper) resourceFor(ctx context.Context, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	gv := gvk.GroupVersion().String()
	m.mu.Lock()
	list := m.lists[gv]
	m.mu.Unlock()
	if list == nil {
		p := "/apis/" + gv
		if gvk.Group == "" {
			p = "/api/" + gvk.Version
		}
		ctx, cancel := withTimeout(ctx)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(m.rc.Host, "/")+p, nil)
		if err != nil {
			return schema.GroupVersionResource{}, false, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := m.http.Do(req)
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discover %s: %w", gv, err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes))
		switch {
		case err != nil:
			return schema.GroupVersionResource{}, false, fmt.Errorf("discover %s: %w", gv, err)
		case resp.StatusCode == http.StatusNotFound:
			return schema.GroupVersionResource{}, false, fmt.Errorf("the API server does not serve %s (is its CRD installed?)", gv)
		case resp.StatusCode != http.StatusOK:
			return schema.GroupVersionResource{}, false, fmt.Errorf("discover %s: %s", gv, resp.Status)
		}
		list = &metav1.APIResourceList{}
		if err := json.Unmarshal(data, list); err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discover %s: %w", gv, err)
		}
		m.mu.Lock()
		m.lists[gv] = list
		m.mu.Unlock()
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), r.Namespaced, nil
		}
	}
	return schema.GroupVersionResource{}, false, fmt.Errorf("the API server serves no kind %s in %s", gvk.Kind, gv)
}
