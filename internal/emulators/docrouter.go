package emulators

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// DocRouter is a custom L7 router's control API on loopback, the protocol of the http router
// driver (failover/routers/httpdoc): one JSON document per backend at URL/BACKEND, GET answers it
// with an ETag, PUT replaces it only with If-Match on the current ETag (412 otherwise), an unknown
// backend is 404. It keeps documents as the bytes written: it checks no schema.
type DocRouter struct {
	URL     string
	mu      sync.Mutex
	docs    map[string][]byte
	version map[string]int
}

// StartDocRouter serves docs (backend → document) until the test ends.
func StartDocRouter(t testing.TB, docs map[string][]byte) *DocRouter {
	t.Helper()
	d := &DocRouter{docs: map[string][]byte{}, version: map[string]int{}}
	for k, v := range docs {
		d.docs[k] = append([]byte(nil), v...)
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	d.URL = srv.URL
	return d
}

func (d *DocRouter) etag(name string) string { return fmt.Sprintf(`"%s-%d"`, name, d.version[name]) }

func (d *DocRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/")
	doc, ok := d.docs[name]
	if !ok {
		http.Error(w, "no such document", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("ETag", d.etag(name))
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	case http.MethodPut:
		if r.Header.Get("If-Match") != d.etag(name) {
			http.Error(w, "stale If-Match", http.StatusPreconditionFailed)
			return
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.docs[name] = b
		d.version[name]++
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "GET or PUT", http.StatusMethodNotAllowed)
	}
}

// Edit replaces a document as another writer would (a new version: a write conditional on an
// older one answers 412).
func (d *DocRouter) Edit(name string, doc []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[name] = append([]byte(nil), doc...)
	d.version[name]++
}

// Doc is a document as it is now.
func (d *DocRouter) Doc(name string) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]byte(nil), d.docs[name]...)
}
