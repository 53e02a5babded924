//go:build integration

package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/failover/routers/httpdoc"
	"lifeboat/fleet/router"
	"lifeboat/internal/emulators"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// The abort-request tests break `lifeboat failover abort` from another terminal: separate
// processes of the real binary, a real router (the http driver's protocol, every write logged)
// and a real state store (the file store, and versitygw as S3), under SIGSTOP, SIGKILL, a
// requester's skewed clock and a request an earlier run left behind.

// abortStore is a state store the abort tests run against: its URL for the fleet, the
// environment the binary needs for it, and the store opened in this process.
type abortStore struct {
	name, url string
	env       []string
	store     providers.Store
}

func abortStores(t *testing.T) []func(t *testing.T, dir string) abortStore {
	testbed.LifeboatBinary(t)
	gw := emulators.SharedVersityGW(t)
	return []func(t *testing.T, dir string) abortStore{
		func(t *testing.T, dir string) abortStore {
			os.MkdirAll(filepath.Join(dir, "state"), 0o700)
			url := "file://" + filepath.Join(dir, "state")
			return abortStore{name: "file", url: url, store: testbed.OpenStore(t, url, testbed.StoreOptions())}
		},
		func(t *testing.T, dir string) abortStore {
			if err := gw.Bucket(context.Background(), testbed.Bucket); err != nil {
				t.Fatal(err)
			}
			url := gw.URL(testbed.Bucket, testbed.FreshPrefix("abort-request"))
			o := testbed.StoreOptions()
			o.S3Credentials = credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, "")
			return abortStore{name: "s3", url: url, store: testbed.OpenStore(t, url, o),
				env: []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}}
		},
	}
}

// eachAbortStore runs body once per state store, with a fresh directory holding fleet.yaml (the
// http router d, failover settings pol) and signals.json.
func eachAbortStore(t *testing.T, pol string, body func(t *testing.T, dir string, st abortStore, d *httpDocRouter)) {
	for _, open := range abortStores(t) {
		dir := t.TempDir()
		st := open(t, dir)
		t.Run(st.name, func(t *testing.T) {
			d := newHTTPDocRouter(t, binStart)
			writeBinFleet(t, dir, d.fleetLine(), st.url, pol)
			body(t, dir, st, d)
		})
	}
}

// storeRecords is every record of the latest run in the store.
func storeRecords(t *testing.T, s providers.Store) []Record {
	t.Helper()
	_, recs, err := LatestRun(testbed.Ctx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// waitStoreRecord waits (while p runs) until the latest run, started under a token past after,
// has a record of kind at step (any step: -1).
func waitStoreRecord(t *testing.T, p *lb, s providers.Store, after int64, kind string, step int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("lifeboat %v exited %d before a %s record (step %d)\nstdout: %s\nstderr: %s", p.cmd.Args[1:], p.code, kind, step, p.stdout, p.stderr)
		default:
		}
		run, recs, _ := LatestRun(testbed.Ctx(t), s)
		if runOrder(run) <= after {
			recs = nil // an earlier run's
		}
		for _, r := range recs {
			if r.Kind == kind && (step < 0 || r.Step != nil && *r.Step == step) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s record (step %d) in the journal within %s", kind, step, within)
}

// waitAbortRequest waits (while p runs) until the abort request object exists.
func waitAbortRequest(t *testing.T, p *lb, s providers.Store) AbortRequest {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var req AbortRequest
		err := providers.ReadJSON(testbed.Ctx(t), s, AbortRequestKey, providers.ReadOptions{}, maxAbortRequestBytes, &req)
		if err == nil {
			return req
		}
		select {
		case <-p.done:
			t.Fatalf("lifeboat %v exited %d before writing an abort request\nstdout: %s\nstderr: %s", p.cmd.Args[1:], p.code, p.stdout, p.stderr)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no abort request within a minute")
	return AbortRequest{}
}

func abortRequestExists(t *testing.T, s providers.Store) bool {
	t.Helper()
	_, err := s.Stat(testbed.Ctx(t), AbortRequestKey)
	if err != nil && !errors.Is(err, providers.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func storeLock(t *testing.T, s providers.Store) Lock {
	t.Helper()
	lk, ok, err := (&Locker{Store: s}).Read(testbed.Ctx(t))
	if err != nil || !ok {
		t.Fatalf("read the lock: ok %v, %v", ok, err)
	}
	return lk
}

// writeWeights is the weights a logged router write ("CLASS vN: {json}") set; ok false for an
// edit by another operator.
func writeWeights(t *testing.T, entry string) (class string, w map[string]int, ok bool) {
	t.Helper()
	class, body, _ := strings.Cut(entry, " ")
	_, body, _ = strings.Cut(body, ": ")
	var doc httpdoc.Doc
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return class, nil, false
	}
	return class, doc.Weights, true
}

var abortArgs = []string{"failover", "abort", "--fleet", "fleet.yaml", "--signals", "signals.json", "--yes", "--reason", "receivers saturating"}

// A holder stopped (SIGSTOP) while the abort is requested, then continued inside its lease:
// the first thing it writes after SIGCONT is the abort's way back — every write after it moves
// eu-west-1's share up again, none carries the evacuation on — and the requester sees it end
// back at its baseline. Journaled: the abort request with who asked and why.
func TestAbortRequestedOfStoppedHolder(t *testing.T) {
	eachAbortStore(t, "step_interval: 1500ms, lock_ttl: 20s", func(t *testing.T, dir string, st abortStore, d *httpDocRouter) {
		a := startLB(t, dir, st.env, runArgs...)
		waitStoreRecord(t, a, st.store, 0, RecResult, 0, time.Minute)
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := d.log()
		atStop := map[string]httpdoc.Doc{"eu-only": d.doc("eu-only"), "global": d.doc("global")}
		ab := startLB(t, dir, st.env, append(abortArgs, "--wait", "90s")...)
		req := waitAbortRequest(t, ab, st.store)
		if lk := storeLock(t, st.store); req.Token != lk.Token || req.LockID != lk.ID {
			t.Fatalf("the request names token %d lock %s; the stopped holder's lock is token %d id %s", req.Token, req.LockID, lk.Token, lk.ID)
		}
		if got := d.log(); len(got) != len(stopped) {
			t.Fatalf("the router was written while its holder was stopped: %v", got[len(stopped):])
		}
		a.cmd.Process.Signal(syscall.SIGCONT)
		codeA, codeAb := a.wait(t, time.Minute), ab.wait(t, time.Minute)
		if codeAb != 0 || !strings.Contains(ab.stdout.String(), "aborted at the request and back at its baseline") {
			t.Fatalf("abort: exit %d\n%s\n%s\nthe run: exit %d\n%s", codeAb, ab.stdout, ab.stderr, codeA, a.stderr)
		}
		if codeA == 0 || !strings.Contains(a.stderr.String(), "abort requested by") {
			t.Fatalf("the run after SIGCONT: exit %d\n%s", codeA, a.stderr)
		}
		after := d.log()[len(stopped):]
		if len(after) == 0 {
			t.Fatal("the run wrote nothing after SIGCONT: it did not step back")
		}
		for _, e := range after {
			class, w, ok := writeWeights(t, e)
			if !ok {
				t.Fatalf("not a write of the run: %s", e)
			}
			if w["eu-west-1"] < atStop[class].Weights["eu-west-1"] {
				t.Fatalf("after SIGCONT the run carried the evacuation on before honouring the abort: %s (eu-west-1 was %d at SIGSTOP)\n%s",
					e, atStop[class].Weights["eu-west-1"], strings.Join(after, "\n"))
			}
		}
		for class, want := range binStart.Weights {
			if got := d.doc(class).Weights; !(router.Weights{class: got}).Equal(router.Weights{class: want}) {
				t.Fatalf("%s after the abort: %v, want the baseline %v", class, got, want)
			}
		}
		found := false
		for _, r := range storeRecords(t, st.store) {
			found = found || r.Kind == RecAbortRequest && strings.Contains(r.Detail, req.By) && r.Reason == "receivers saturating"
		}
		if !found {
			t.Fatalf("the abort request is not journaled with who asked: %+v", storeRecords(t, st.store))
		}
		if abortRequestExists(t, st.store) {
			t.Fatal("the honoured abort request is left in the store")
		}
	})
}

// A holder stopped past its lease while the abort is requested: the requester does not wait
// out --wait for it but says, once the lock record stayed unchanged for its TTL on its own
// clock, that the holder can write nothing more and what to run next; after SIGCONT the holder
// writes nothing to the router (its lease ran out), and the command the requester named
// (unlock, then abort) brings the router back to the baseline.
func TestAbortRequestedOfHolderStoppedPastItsLease(t *testing.T) {
	eachAbortStore(t, "step_interval: 1500ms, lock_ttl: 2s", func(t *testing.T, dir string, st abortStore, d *httpDocRouter) {
		a := startLB(t, dir, st.env, runArgs...)
		waitStoreRecord(t, a, st.store, 0, RecResult, 0, time.Minute)
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := d.log()
		held := storeLock(t, st.store)
		code, out, errOut := runLB(t, dir, st.env, append(abortArgs, "--wait", "10m")...)
		if code != 1 || !strings.Contains(errOut, "has not renewed it") || !strings.Contains(errOut, "lifeboat failover unlock --fleet fleet.yaml --id "+held.ID) {
			a.cmd.Process.Signal(syscall.SIGCONT)
			t.Fatalf("abort of a silent holder: exit %d, want 1 naming the unlock\n%s\n%s", code, out, errOut)
		}
		if abortRequestExists(t, st.store) {
			t.Error("the request to a holder that can no longer honour it is left in the store")
		}
		a.cmd.Process.Signal(syscall.SIGCONT)
		if codeA := a.wait(t, time.Minute); codeA == 0 {
			t.Fatalf("the holder stopped past its lease exited 0: %s", a.stderr)
		}
		if got := d.log(); len(got) != len(stopped) {
			t.Fatalf("the holder wrote to the router after SIGCONT, past its lease:\n%s\n%s", strings.Join(got[len(stopped):], "\n"), a.stderr)
		}
		// the lock is released by the holder on its way out, or still stale: unlock names the id
		if lk := storeLock(t, st.store); !lk.Released {
			if code, out, errOut := runLB(t, dir, st.env, "failover", "unlock", "--fleet", "fleet.yaml", "--id", held.ID, "--reason", "stopped"); code != 0 {
				t.Fatalf("unlock: exit %d\n%s\n%s", code, out, errOut)
			}
		}
		if code, out, errOut := runLB(t, dir, st.env, abortArgs...); code != 0 {
			t.Fatalf("the abort named next: exit %d\n%s\n%s", code, out, errOut)
		}
		if got := d.doc("eu-only").Weights; got["eu-west-1"] != 50 {
			t.Fatalf("eu-only after the abort: %v", got)
		}
	})
}

// A request from a machine whose clock is far off (a year behind, an hour ahead) is judged by
// the token it names, never by its time: one for the running lock's token is honoured, whatever
// its time says; one for an earlier token is ignored, however recent its time.
func TestAbortRequestFromSkewedClock(t *testing.T) {
	eachAbortStore(t, "step_interval: 1500ms, lock_ttl: 20s", func(t *testing.T, dir string, st abortStore, d *httpDocRouter) {
		put := func(req AbortRequest) {
			b, _ := json.Marshal(req)
			testbed.Put(t, st.store, AbortRequestKey, b, providers.Checksums{})
		}
		// an hour ahead, for the token before this run's: ignored, the run completes
		a := startLB(t, dir, st.env, runArgs...)
		waitStoreRecord(t, a, st.store, 0, RecResult, 0, time.Minute)
		lk := storeLock(t, st.store)
		put(AbortRequest{By: "bob@ahead pid 7", Reason: "skew", Time: time.Now().Add(time.Hour), Token: lk.Token - 1, LockID: "0123456789ab"})
		if code := a.wait(t, time.Minute); code != 0 {
			t.Fatalf("a run with an earlier token's request in the store: exit %d\n%s", code, a.stderr)
		}
		if got := d.doc("eu-only").Weights; got["eu-west-1"] != 0 {
			t.Fatalf("the run did not finish: %v", got)
		}
		if code, out, errOut := runLB(t, dir, st.env, abortArgs...); code != 0 {
			t.Fatalf("abort: exit %d\n%s\n%s", code, out, errOut)
		}
		// a year behind, for this run's token: honoured
		prev := storeLock(t, st.store).Token
		a = startLB(t, dir, st.env, runArgs...)
		waitStoreRecord(t, a, st.store, prev, RecResult, 0, time.Minute)
		lk = storeLock(t, st.store)
		put(AbortRequest{By: "carol@behind pid 8", Reason: "skew", Time: time.Now().AddDate(-1, 0, 0), Token: lk.Token, LockID: lk.ID})
		if code := a.wait(t, time.Minute); code == 0 || !strings.Contains(a.stderr.String(), "carol@behind") {
			t.Fatalf("a request from a clock a year behind: exit %d\n%s", code, a.stderr)
		}
		if got := d.doc("eu-only").Weights; got["eu-west-1"] != 50 {
			t.Fatalf("eu-only after the honoured request: %v", got)
		}
	})
}

// A request an earlier run left behind — asked while it held the lock, after its last abort
// check, and never honoured — does not abort the next run, nor does an object at the request's
// key that is not a request at all.
func TestStaleAbortRequestIgnored(t *testing.T) {
	eachAbortStore(t, "step_interval: 1500ms, lock_ttl: 20s, max_transitions_per_hour: 100", func(t *testing.T, dir string, st abortStore, d *httpDocRouter) {
		// The holder is stopped with its last step's write in flight (the one that withdraws
		// eu-west-1: the document no longer names it), after its last check for an abort request.
		// The handler learns the process through a channel, not a shared variable: the run's
		// first PUT can arrive before startLB has returned, and the channel orders the two.
		started := make(chan *lb, 1)
		stopped := make(chan struct{})
		var once sync.Once
		d.setHook(func(r *http.Request) {
			if r.Method != http.MethodPut {
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if !bytes.Contains(b, []byte(`"eu-west-1"`)) {
				once.Do(func() {
					p := <-started
					p.cmd.Process.Signal(syscall.SIGSTOP)
					close(stopped)
				})
			}
		})
		a := startLB(t, dir, st.env, runArgs...)
		started <- a
		select {
		case <-stopped:
		case <-a.done:
			t.Fatalf("the run ended (exit %d) before its last step\n%s", a.code, a.stderr)
		case <-time.After(time.Minute):
			t.Fatalf("the run never reached its last step\n%s", a.stderr)
		}
		code, out, errOut := runLB(t, dir, st.env, append(abortArgs, "--wait", "1s")...)
		d.setHook(nil)
		a.cmd.Process.Signal(syscall.SIGCONT)
		if code != 1 || !strings.Contains(errOut, "has not honoured the abort request within --wait") {
			t.Fatalf("abort that times out: exit %d\n%s\n%s", code, out, errOut)
		}
		if code := a.wait(t, time.Minute); code != 0 {
			t.Fatalf("the run past its last check: exit %d\n%s", code, a.stderr)
		}
		if !abortRequestExists(t, st.store) {
			t.Fatal("the test needs the earlier run's request left behind")
		}
		if code, out, errOut := runLB(t, dir, st.env, abortArgs...); code != 0 {
			t.Fatalf("abort: exit %d\n%s\n%s", code, out, errOut)
		}
		code, out, errOut = runLB(t, dir, st.env, runArgs...)
		if code != 0 || strings.Contains(errOut, "abort requested by") {
			t.Fatalf("the next run with an earlier run's request in the store: exit %d\n%s\n%s", code, out, errOut)
		}
		if code, out, errOut := runLB(t, dir, st.env, abortArgs...); code != 0 {
			t.Fatalf("abort: exit %d\n%s\n%s", code, out, errOut)
		}
		testbed.Put(t, st.store, AbortRequestKey, []byte("not a request {"), providers.Checksums{})
		code, out, errOut = runLB(t, dir, st.env, runArgs...)
		if code != 0 || !strings.Contains(errOut, "not one") {
			t.Fatalf("a run with junk at %s: exit %d, want 0 with a warning\n%s\n%s", AbortRequestKey, code, out, errOut)
		}
		if got := d.doc("eu-only").Weights; got["eu-west-1"] != 0 {
			t.Fatalf("the run did not finish: %v", got)
		}
	})
}

// The holder killed (SIGKILL) while abort --wait waits for it: the requester sees at once that
// it is gone (its pid on this host), exits 1 naming the command to run next instead of waiting
// out --wait, and that command takes the dead holder's lock over and steps back.
func TestAbortWaitHolderKilled(t *testing.T) {
	eachAbortStore(t, "step_interval: 30s, lock_ttl: 60s", func(t *testing.T, dir string, st abortStore, d *httpDocRouter) {
		a := startLB(t, dir, st.env, runArgs...)
		waitStoreRecord(t, a, st.store, 0, RecResult, 0, time.Minute)
		ab := startLB(t, dir, st.env, append(abortArgs, "--wait", "10m")...)
		waitAbortRequest(t, ab, st.store)
		a.cmd.Process.Signal(syscall.SIGKILL)
		a.wait(t, time.Minute)
		if code := ab.wait(t, 30*time.Second); code != 1 || !strings.Contains(ab.stderr.String(), "died before honouring") ||
			!strings.Contains(ab.stderr.String(), "lifeboat failover abort --fleet fleet.yaml --reason 'receivers saturating'") {
			t.Fatalf("abort --wait after the holder died: exit %d, want 1 naming the next command\n%s\n%s", code, ab.stdout, ab.stderr)
		}
		if abortRequestExists(t, st.store) {
			t.Error("the request to a dead holder is left in the store")
		}
		code, out, errOut := runLB(t, dir, st.env, abortArgs...)
		if code != 0 {
			t.Fatalf("the abort named next: exit %d\n%s\n%s", code, out, errOut)
		}
		if got := d.doc("eu-only").Weights; got["eu-west-1"] != 50 {
			t.Fatalf("eu-only after the abort: %v", got)
		}
		found := false
		for _, r := range storeRecords(t, st.store) {
			found = found || r.Kind == RecTakeover
		}
		if !found {
			t.Fatalf("the take-over of the dead holder's lock is not journaled: %+v", storeRecords(t, st.store))
		}
	})
}
