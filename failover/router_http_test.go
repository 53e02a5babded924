//go:build integration

package failover

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"lifeboat/failover/routers/httpdoc"
	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/testbed"
)

// docRouter is a minimal custom L7 router's control API on loopback: one JSON document per
// class, GET with an ETag, PUT only with a matching If-Match.
type docRouter struct {
	mu      sync.Mutex
	docs    map[string][]byte
	version map[string]int
	meddle  atomic.Int32 // change the document behind the client's back this many times
}

func (d *docRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/")
	doc, ok := d.docs[name]
	if !ok {
		http.Error(w, "no such class", http.StatusNotFound)
		return
	}
	etag := fmt.Sprintf(`"%s-%d"`, name, d.version[name])
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("ETag", etag)
		w.Write(doc)
		if d.meddle.Load() > 0 {
			d.meddle.Add(-1)
			d.version[name]++ // someone else edits right after our read
		}
	case http.MethodPut:
		if r.Header.Get("If-Match") != etag {
			http.Error(w, "stale", http.StatusPreconditionFailed)
			return
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		d.docs[name] = b
		d.version[name]++
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestHTTPRouterEvacuation(t *testing.T) {
	d := &docRouter{docs: map[string][]byte{}, version: map[string]int{}}
	for class, be := range map[string]string{"eu-only": "eu", "global": "global"} {
		b, _ := json.Marshal(httpdoc.Doc{Weights: startWeights.Weights[class]})
		d.docs[be] = b
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	yaml := strings.Replace(testFleetYAML("", "file://"+filepath.Join(dir, "state")), `router: {driver: file, path: ""}`,
		fmt.Sprintf("router: {driver: http, url: %q, backends: {eu-only: eu, global: global}}", srv.URL), 1)
	f, err := fleet.Parse([]byte(yaml), filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rtr, _ := fleet.OpenRouter(f)
	e := &Executor{Fleet: f, Store: testbed.OpenStore(t, f.State, testbed.StoreOptions()), Router: rtr, Signals: &StaticSignals{Regions: calmSignals(f)}}
	ctx := testbed.Ctx(t)
	d.meddle.Store(1) // one concurrent edit after the run's read: 412, the run stops, nothing overwritten
	if _, err := e.Run(ctx, evacuate("eu-west-1")); !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("a concurrent edit: %v, want ErrRouterConflict", err)
	}
	out, err := e.Run(ctx, evacuate("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := rtr.Read(ctx)
	if df := router.Diff(out.Plan.Final, got); len(df) > 0 {
		t.Fatal(df)
	}
	if strings.Contains(string(d.docs["eu"]), "eu-west-1") {
		t.Fatalf("a withdrawn region is still in the document: %s", d.docs["eu"])
	}
	d.meddle.Store(100) // every read is stale by the time of the write
	err = rtr.Apply(ctx, router.RouterState{Weights: router.Weights{"eu-only": {"eu-central-1": 100}}})
	if !errors.Is(err, router.ErrRouterConflict) {
		t.Fatalf("persistent concurrent edits: %v, want a conflict", err)
	}
}
