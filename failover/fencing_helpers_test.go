//go:build integration

package failover

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lifeboat/failover/routers/httpdoc"
	"lifeboat/fleet/router"
	"lifeboat/internal/clitest"
)

// The fencing tests run the real lifeboat binary as separate processes against a real router
// and a real state store.

// binFleet is a three-region fleet; router is the fleet's router line, state its store URL and
// extra more failover settings.
func binFleet(rtr, state, failover string) string {
	return fmt.Sprintf(`model: {name: llama-demo, manifest: m.json}
regions:
  us-east-1: {replica: ./r, endpoint: 'http://127.0.0.1:1', capacity: {replicas: 6, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: ./r, endpoint: 'http://127.0.0.2:1', capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: ./r, endpoint: 'http://127.0.0.3:1', capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1]
%s
failover: {step_percent: 25, spill_cap_percent: 60, drain_timeout: 1s, %s}
state: %q
`, rtr, failover, state)
}

// binSignals: every region warm and calm.
const binSignals = `{"weights": {"eu-only": {"eu-west-1": 50, "eu-central-1": 50}, "global": {"us-east-1": 60, "eu-west-1": 40}},
 "regions": {
 "us-east-1": {"warm": true, "healthy": true, "queue_wait_ms": 20, "running": 0, "prefill_tokens_per_s": 9600},
 "eu-west-1": {"warm": true, "healthy": true, "queue_wait_ms": 30, "running": 0, "prefill_tokens_per_s": 6400},
 "eu-central-1": {"warm": true, "healthy": true, "queue_wait_ms": 10, "running": 0, "prefill_tokens_per_s": 6400}}}`

var binStart = router.RouterState{Weights: router.Weights{
	"eu-only": {"eu-west-1": 50, "eu-central-1": 50},
	"global":  {"us-east-1": 60, "eu-west-1": 40},
}, States: router.States{}}

// binDir writes fleet.yaml and signals.json into a fresh directory with a file state store.
func binDir(t *testing.T, rtr, failover string) (dir, state string) {
	t.Helper()
	dir = t.TempDir()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	state = "file://" + filepath.Join(dir, "state")
	writeBinFleet(t, dir, rtr, state, failover)
	return dir, state
}

func writeBinFleet(t *testing.T, dir, rtr, state, failover string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(binFleet(rtr, state, failover)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "signals.json"), []byte(binSignals), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lb is one lifeboat process.
type lb struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuf
	done           chan struct{}
	code           int
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startLB starts the lifeboat binary in dir with args (and env), through the one CLI runner;
// its output is readable while it runs.
func startLB(t *testing.T, dir string, env []string, args ...string) *lb {
	t.Helper()
	p := &lb{stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	pr := clitest.Start(t, clitest.Options{Dir: dir, Env: env, Stdout: p.stdout, Stderr: p.stderr}, args...)
	p.cmd = pr.Cmd
	go func() {
		p.code = pr.Wait().Code // a signal's end is 128 + its number
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to end (at most d) and returns its exit code.
func (p *lb) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("lifeboat %v did not end within %s\nstdout: %s\nstderr: %s", p.cmd.Args[1:], d, p.stdout, p.stderr)
	}
	return -1
}

// runLB runs the binary to its end.
func runLB(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	p := startLB(t, dir, env, args...)
	code := p.wait(t, 2*time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// waitJournal polls the file state store until a record of kind (and step, when ≥ 0) exists,
// while p runs.
func waitJournal(t *testing.T, p *lb, stateDir, kind string, step int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("lifeboat %v exited %d before a %s record (step %d)\nstdout: %s\nstderr: %s", p.cmd.Args[1:], p.code, kind, step, p.stdout, p.stderr)
		default:
		}
		found := false
		filepath.Walk(filepath.Join(stateDir, runsDir), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".json") {
				return nil
			}
			b, _ := os.ReadFile(p)
			var rec Record
			if json.Unmarshal(b, &rec) == nil && rec.Kind == kind && (step < 0 || (rec.Step != nil && *rec.Step == step)) {
				found = true
			}
			return nil
		})
		if found {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s record (step %d) in the journal within %s", kind, step, within)
}

// httpDocRouter is a custom L7 router's control API (the http driver's protocol) with a log of
// every accepted write; hook, when set, runs before each request is served (outside the lock).
type httpDocRouter struct {
	mu      sync.Mutex
	docs    map[string]httpdoc.Doc
	version map[string]int
	writes  []string // "BACKEND v<N>: body" of every accepted PUT
	hook    func(r *http.Request)
	srv     *httptest.Server
}

func newHTTPDocRouter(t *testing.T, start router.RouterState) *httpDocRouter {
	d := &httpDocRouter{docs: map[string]httpdoc.Doc{}, version: map[string]int{}}
	for class, w := range start.Weights {
		doc := httpdoc.Doc{Weights: map[string]int{}, States: map[string]router.State{}}
		for r, v := range w {
			doc.Weights[r] = v
		}
		d.docs[class] = doc
	}
	d.srv = httptest.NewServer(d)
	t.Cleanup(d.srv.Close)
	return d
}

// setHook installs hook under the lock: the server may already be answering (binDir reads the
// router), and an unguarded write races with ServeHTTP's read.
func (d *httpDocRouter) setHook(hook func(r *http.Request)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hook = hook
}

func (d *httpDocRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	hook := d.hook
	d.mu.Unlock()
	if hook != nil {
		hook(r)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/")
	doc, ok := d.docs[name]
	if !ok {
		http.Error(w, "no such document", http.StatusNotFound)
		return
	}
	etag := fmt.Sprintf(`"%s-%d"`, name, d.version[name])
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("ETag", etag)
		json.NewEncoder(w).Encode(doc)
	case http.MethodPut:
		if r.Header.Get("If-Match") != etag {
			http.Error(w, "stale If-Match", http.StatusPreconditionFailed)
			return
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var nd httpdoc.Doc
		if err := json.Unmarshal(b, &nd); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d.docs[name] = nd
		d.version[name]++
		d.writes = append(d.writes, fmt.Sprintf("%s v%d: %s", name, d.version[name], b))
		w.WriteHeader(http.StatusNoContent)
	}
}

// edit changes a document as another operator would (a write the log records too).
func (d *httpDocRouter) edit(class string, w map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.docs[class] = httpdoc.Doc{Weights: w, States: map[string]router.State{}}
	d.version[class]++
	d.writes = append(d.writes, fmt.Sprintf("%s v%d: edit by another operator %v", class, d.version[class], w))
}

func (d *httpDocRouter) log() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.writes...)
}

func (d *httpDocRouter) doc(class string) httpdoc.Doc {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.docs[class]
}

func (d *httpDocRouter) fleetLine() string {
	return fmt.Sprintf("router: {driver: http, url: %q, backends: {eu-only: eu-only, global: global}}", d.srv.URL)
}

// restart puts every document back to start, as a router reloaded from its configuration does
// (a new version: a write conditional on an older one answers 412).
func (d *httpDocRouter) restart(start router.RouterState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for class, w := range start.Weights {
		doc := httpdoc.Doc{Weights: map[string]int{}, States: map[string]router.State{}}
		for r, v := range w {
			doc.Weights[r] = v
		}
		d.docs[class] = doc
		d.version[class]++
		d.writes = append(d.writes, fmt.Sprintf("%s v%d: restart", class, d.version[class]))
	}
}
