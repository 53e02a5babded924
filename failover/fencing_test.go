//go:build integration

package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lifeboat/failover/routers/haproxy"
	"lifeboat/internal/base/lockowner"
	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

var runArgs = []string{"failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "signals.json", "--yes", "--reason", "test"}
var resumeArgs = []string{"failover", "resume", "--fleet", "fleet.yaml", "--signals", "signals.json", "--reason", "take over"}

// A holder paused (SIGSTOP) with its write in flight, past its lease, while another operator
// takes the run over and finishes it: after SIGCONT the paused one writes nothing more to the
// router — its in-flight write was conditional on the ETag it last read back, and every further
// router call is behind its own monotonic lease.
func TestPausedHolderNeverWritesAfterTakeover(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, _ := binDir(t, strings.Replace(d.fleetLine(), "router: {", "router: {timeout: 60s, ", 1), "step_interval: 300ms, lock_ttl: 1s")
	stalled, release := make(chan struct{}), make(chan struct{})
	var armed sync.Once
	var arm = make(chan struct{})
	d.setHook(func(r *http.Request) {
		if r.Method != http.MethodPut {
			return
		}
		select {
		case <-arm:
		default:
			return
		}
		first := false
		armed.Do(func() { first = true })
		if first {
			close(stalled)
			<-release // A's write waits here while A is stopped and B runs
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, filepath.Join(dir, "state"), RecResult, 0, time.Minute)
	close(arm)
	select {
	case <-stalled:
	case <-time.After(time.Minute):
		t.Fatalf("A never wrote its second step: %s", a.stderr)
	}
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 0 {
		a.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("B's resume: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "watching") {
		t.Errorf("B took the lock over without watching it (stderr %s)", errOut)
	}
	finalLog, finalEU := d.log(), d.doc("eu-only")
	close(release)
	a.cmd.Process.Signal(syscall.SIGCONT)
	codeA := a.wait(t, time.Minute)
	if got := d.log(); len(got) != len(finalLog) {
		t.Fatalf("the paused holder wrote to the router after the takeover (exit %d):\n%s\nA's stderr: %s", codeA, strings.Join(got[len(finalLog):], "\n"), a.stderr)
	}
	if got := d.doc("eu-only"); got.Weights["eu-west-1"] != 0 || got.Weights["eu-central-1"] != finalEU.Weights["eu-central-1"] {
		t.Fatalf("eu-only after A woke: %+v, B left %+v", got, finalEU)
	}
	if codeA == 0 {
		t.Fatalf("the paused holder exited 0 after losing the lock: %s", a.stderr)
	}
}

// An edit by another operator between two steps of a run: the next write's If-Match is the ETag
// this run last read back, the router answers 412, the run stops with exit 3 and the router keeps
// the other edit.
func TestHTTPRouterEditBetweenStepsStops(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 200ms, lock_ttl: 5s")
	edit := map[string]int{"eu-west-1": 45, "eu-central-1": 55}
	var once sync.Once
	armed := make(chan struct{})
	d.setHook(func(r *http.Request) {
		select {
		case <-armed:
		default:
			return
		}
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/eu-only") {
			once.Do(func() { d.edit("eu-only", edit) }) // lands just before the run's next write
		}
	})
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	close(armed)
	code := a.wait(t, time.Minute)
	if code != 3 || !strings.Contains(a.stderr.String(), "412") {
		t.Fatalf("run after a concurrent edit: exit %d, want 3 naming the 412\n%s", code, a.stderr)
	}
	if got := d.doc("eu-only"); got.Weights["eu-west-1"] != 45 || got.Weights["eu-central-1"] != 55 {
		t.Fatalf("the other operator's edit was overwritten: %+v\n%s", got, strings.Join(d.log(), "\n"))
	}
}

// The same through a real Caddy: an edit of the route between steps answers the run's next PATCH
// with 412 (If-Match on the Etag it read back), and the route keeps the edit.
func TestCaddyEditBetweenStepsStops(t *testing.T) {
	c := startBinCaddy(t, nil)
	dir, state := binDir(t, fmt.Sprintf("router: {driver: caddy, url: %q, backends: {eu-only: route-eu, global: route-global}}", c.Admin), "step_interval: 1500ms, lock_ttl: 5s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	time.Sleep(400 * time.Millisecond) // inside the step interval, after the run's own read
	edited := caddyRoute("route-eu", binDials, map[string]int{"eu-west-1": 45, "eu-central-1": 55}, nil)
	b, _ := json.Marshal(edited)
	req, _ := http.NewRequest(http.MethodPatch, c.Admin+"/id/route-eu", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the other operator's edit: %v %v", err, resp)
	}
	resp.Body.Close()
	want := caddyGet(t, c.Admin, "route-eu")
	code := a.wait(t, time.Minute)
	if stderr := a.stderr.String(); !(code == 3 && (strings.Contains(stderr, "412") || strings.Contains(stderr, "changed since"))) && !(code == 1 && strings.Contains(stderr, "drift")) {
		t.Fatalf("run after a concurrent route edit: exit %d, want 3 (changed since its read-back) or a drift hold\n%s", code, a.stderr)
	}
	if got := caddyGet(t, c.Admin, "route-eu"); got != want {
		t.Fatalf("the edit was overwritten:\nwant %s\ngot  %s", want, got)
	}
}

// HAProxy has no compare-and-swap: the run compares each backend's servers with its last
// read-back immediately before its commands, so an edit between steps stops it (exit 3) and the
// edit stays.
func TestHAProxyEditBetweenStepsStops(t *testing.T) {
	h := emulators.StartHAProxy(t, binHAProxyConfig())
	dir, state := binDir(t, fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}}", h.Socket), "step_interval: 1500ms, lock_ttl: 5s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	time.Sleep(400 * time.Millisecond) // inside the step interval, after the run's own read
	hr := &haproxy.Router{Socket: h.Socket}
	if err := hr.Set(testbed.Ctx(t), "set weight be_eu/eu-central-1 7"); err != nil {
		t.Fatal(err)
	}
	code := a.wait(t, time.Minute)
	if !(code == 3 && strings.Contains(a.stderr.String(), "changed since")) && !(code == 1 && strings.Contains(a.stderr.String(), "drift")) {
		t.Fatalf("run after a concurrent HAProxy edit: exit %d, want 3 or a drift hold\n%s", code, a.stderr)
	}
	srv, err := hr.Servers(testbed.Ctx(t), "be_eu")
	if err != nil || srv["eu-central-1"].Weight != 7 {
		t.Fatalf("the edit was overwritten: %v %+v", err, srv)
	}
}

// A holder that died on this host (SIGKILL) leaves its lock for a minute by its TTL; resume sees
// from the record's pid and process start time that it is gone and takes over at once, journaled.
func TestDeadHolderOnThisHostTakenOverAtOnce(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 2s, lock_ttl: 60s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, time.Minute)
	start := time.Now()
	code, out, errOut := runLB(t, dir, nil, append(resumeArgs, "-o", "json")...)
	if code != 0 {
		t.Fatalf("resume after the holder died: exit %d\n%s\n%s", code, out, errOut)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("resume waited %s for a dead holder's lock", took)
	}
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	_, recs, err := LatestRun(testbed.Ctx(t), store)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || (r.Kind == RecTakeover && strings.Contains(r.Detail, fmt.Sprintf("pid %d", a.cmd.Process.Pid)))
	}
	if !found {
		t.Fatalf("the take-over is not journaled: %+v", recs)
	}
}

// A lock record written by a machine whose clock is 61 s off: one 61 s behind (its expiry already
// in the past here) that keeps renewing is never stolen; one 61 s ahead whose holder stopped is
// taken over after the TTL on the taker's own clock, not after the record's far expiry.
func TestSkewedLockRecord(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 10ms, lock_ttl: 2s")
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	ctx := testbed.Ctx(t)
	skewed := func(off time.Duration, renewal int64) {
		lk := Lock{ID: "feedface0001", Holder: "bob@skewed pid 7", Operation: "failover evacuate eu-central-1", Reason: "skew",
			Since: time.Now().Add(off - time.Minute), Expires: time.Now().Add(off + 2*time.Second), TTLMS: 2000, Renewal: renewal, Token: 41,
			Owner: &lockowner.Owner{Machine: "another-host", Boot: "b", PIDNS: "pid:[1]", PID: 7, Start: 9}}
		b, _ := json.Marshal(lk)
		testbed.Put(t, store, LockKey, b, providers.Checksums{})
	}
	// behind: renewed every 300 ms by its (skewed) holder
	stop := make(chan struct{})
	done := make(chan struct{})
	skewed(-61*time.Second, 0)
	go func() {
		defer close(done)
		for n := int64(1); ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				skewed(-61*time.Second, n)
			}
		}
	}()
	code, _, errOut := runLB(t, dir, nil, runArgs...)
	if code != 3 || !strings.Contains(errOut, "bob@skewed") {
		close(stop)
		t.Fatalf("run against a live lock whose expiry reads 61 s ago: exit %d, want 3 naming the holder\n%s", code, errOut)
	}
	if len(d.log()) != 0 {
		close(stop)
		t.Fatalf("the router was written under another's live lock: %v", d.log())
	}
	// status shows the lock as held, though its expiry reads a minute ago
	if code, out, errOut := runLB(t, dir, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json"); code != 0 || !strings.Contains(out, `"holder": "bob@skewed pid 7"`) {
		close(stop)
		t.Fatalf("status under a skewed live lock: exit %d\n%s\n%s", code, out, errOut)
	}
	close(stop)
	<-done
	// ahead: the record's expiry is a minute away, but nothing renews it
	skewed(61*time.Second, 100)
	a := startLB(t, dir, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "signals.json", "--yes")
	if code := a.wait(t, time.Minute); code != 3 {
		t.Fatalf("run against a silent lock: exit %d, want 3 at once\n%s", code, a.stderr)
	}
	l := &Locker{Store: store, TTL: 2 * time.Second, Wait: true}
	begin := time.Now()
	lk, err := l.Acquire(ctx, "carol", "failover resume", "skew")
	if err != nil {
		t.Fatalf("a silent lock whose record reads 61 s ahead: %v", err)
	}
	if took := time.Since(begin); took < 2*time.Second || took > 20*time.Second {
		t.Fatalf("taken over after %s, want the TTL (2s) on this clock", took)
	}
	if lk.Token != 42 || lk.tookOver == nil {
		t.Fatalf("take-over: token %d, replaced %+v", lk.Token, lk.tookOver)
	}
}

// The fencing token never wraps: a lock at the largest token is refused, not taken as token
// −9223372036854775808.
func TestFencingTokenCannotWrap(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 10ms, lock_ttl: 2s")
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	b, _ := json.Marshal(Lock{ID: "ffff", Holder: "x", Released: true, Token: math.MaxInt64})
	testbed.Put(t, store, LockKey, b, providers.Checksums{})
	code, _, errOut := runLB(t, dir, nil, runArgs...)
	if code != 3 || !strings.Contains(errOut, "wrap") || len(d.log()) != 0 {
		t.Fatalf("lock at the largest token: exit %d, %d writes\n%s", code, len(d.log()), errOut)
	}
}

// Through a fault proxy in front of versitygw (S3) that lets a write land and drops its answer:
// the SDK's retry of our own lock create, first renewal and first journal record sees its own
// object — recognised as ours, not as "held by" or "written by someone else", and a lost renewal
// answer does not stop the run mid-ramp.
func TestLostLockAnswersAreOurs(t *testing.T) {
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(context.Background(), testbed.Bucket); err != nil {
		t.Fatal(err)
	}
	in := faultproxy.New()
	proxy, err := faultproxy.NewProxy(gw.Endpoint, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	prefix := testbed.FreshPrefix("lost-answer")
	state := fmt.Sprintf("s3://%s/%s?region=%s&endpoint=%s", testbed.Bucket, prefix, gw.Region, url.QueryEscape(proxy.URL))
	d := newHTTPDocRouter(t, binStart)
	dir := t.TempDir()
	writeBinFleet(t, dir, d.fleetLine(), state, "step_interval: 700ms, lock_ttl: 1s")
	lockWrites := in.Add(&faultproxy.Rule{Match: faultproxy.All(faultproxy.Ops(faultproxy.OpWrite), faultproxy.PathContains("failover/lock.json")), Times: 2, Action: faultproxy.DropAnswer()})
	journalWrites := in.Add(&faultproxy.Rule{Match: faultproxy.All(faultproxy.Ops(faultproxy.OpWrite), faultproxy.PathContains("failover/runs/")), Times: 1, Action: faultproxy.DropAnswer()})
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	code, out, errOut := runLB(t, dir, env, runArgs...)
	if code != 0 {
		t.Fatalf("run with lost answers: exit %d (lock answers dropped %d, journal %d)\n%s\n%s", code, lockWrites.Fired(), journalWrites.Fired(), out, errOut)
	}
	if lockWrites.Fired() != 2 || journalWrites.Fired() != 1 {
		t.Fatalf("faults fired: lock %d, journal %d", lockWrites.Fired(), journalWrites.Fired())
	}
	if got := d.doc("eu-only"); got.Weights["eu-central-1"] != 100 {
		t.Fatalf("the run did not finish: %+v\n%s", got, errOut)
	}
}

// Issue 18 §2: HAProxy restarted between two steps of a live run (its weights back to its
// config) is drift seen when it happens: the run reads the router after the step interval, holds
// with the drift named (exit 1) and journaled, and writes nothing over the restarted router.
func TestHAProxyRestartBetweenStepsHolds(t *testing.T) {
	h := emulators.StartHAProxy(t, binHAProxyConfig())
	dir, state := binDir(t, fmt.Sprintf("router: {driver: haproxy, socket: %q, backends: {eu-only: be_eu, global: be_global}}", h.Socket), "step_interval: 1500ms, lock_ttl: 5s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	h.Restart(t)
	code := a.wait(t, time.Minute)
	if code != 1 || !strings.Contains(a.stderr.String(), "drift") {
		t.Fatalf("run over a restarted HAProxy: exit %d, want 1 with the drift named\n%s", code, a.stderr)
	}
	hr := &haproxy.Router{Socket: h.Socket}
	for class, be := range map[string]string{"eu-only": "be_eu", "global": "be_global"} {
		srv, err := hr.Servers(testbed.Ctx(t), be)
		if err != nil {
			t.Fatal(err)
		}
		for r, w := range binStart.Weights[class] {
			if srv[r].Weight != w {
				t.Fatalf("%s/%s: weight %d after the hold, the restarted router had %d: the run wrote over it", be, r, srv[r].Weight, w)
			}
		}
	}
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	_, recs, err := LatestRun(testbed.Ctx(t), store)
	if err != nil {
		t.Fatal(err)
	}
	if last := recs[len(recs)-1]; last.Kind != RecHold || !strings.Contains(last.Detail, "drift") {
		t.Fatalf("last journal record %s %q, want a hold naming the drift", last.Kind, last.Detail)
	}
}

// binHAProxyConfig is an HAProxy config with one backend per class (be_eu, be_global), its
// servers named by region at binStart's weights.
func binHAProxyConfig() string {
	cfg := "defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n"
	for class, be := range map[string]string{"eu-only": "be_eu", "global": "be_global"} {
		cfg += fmt.Sprintf("backend %s\n  balance roundrobin\n", be)
		for r, w := range binStart.Weights[class] {
			cfg += fmt.Sprintf("  server %s %s weight %d\n", r, binDials[r], w)
		}
	}
	return cfg
}
