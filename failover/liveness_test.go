//go:build integration

package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/emulators"
	"lifeboat/internal/faultproxy"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// Issue 28 §2 and §3: a live holder is never judged dead, nothing is written under a token that
// is no longer current, and recovery always finishes. Each test runs the real binary as separate
// processes against a real router API and a real state store.

// needRootNamespaces skips unless this test can make mount namespaces (root, unshare, setpriv).
func needRootNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs processes in their own mount namespace and as another user")
	}
	for _, tool := range []string{"unshare", "setpriv", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if out, err := exec.Command("unshare", "--mount", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot make a mount namespace here: %v %s", err, out)
	}
}

// startWrapped starts the lifeboat binary (at bin) in dir behind wrap, the command line that runs
// it ("$@" of a shell script).
func startWrapped(t *testing.T, dir string, env []string, wrap []string, bin string, args ...string) *lb {
	t.Helper()
	cmd := exec.Command(wrap[0], append(append(wrap[1:], bin), args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	p := &lb{cmd: cmd, stdout: &syncBuf{}, stderr: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		case err != nil:
			p.code = -2
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// journalRecords reads every run's records from a store.
func journalRecords(t *testing.T, state string) map[string][]Record {
	t.Helper()
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	ctx := testbed.Ctx(t)
	runs, err := Runs(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Record{}
	for _, r := range runs {
		j, err := ScanRun(ctx, store, r)
		if err != nil {
			t.Fatal(err)
		}
		out[r] = j.Records
	}
	return out
}

// §2: a holder on a cloned VM (the same /etc/machine-id and root pid namespace, another boot id)
// that renews its lock is alive to every observer here: resume watches its record and refuses
// (exit 3) when it changes; abort asks it to abort instead of taking its lock. Neither takes it
// over. The holder is a real process whose kernel boot id reads as another host's (bind-mounted
// over /proc/sys/kernel/random/boot_id in its own mount namespace).
func TestClonedHostHolderIsWaitedOut(t *testing.T) {
	needRootNamespaces(t)
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 6s, lock_ttl: 2s")
	boot := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(boot, []byte("0c10ed00-0000-4000-8000-00000000c10e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := []string{"unshare", "--mount", "--fork", "sh", "-c", `mount --bind "$BOOT" /proc/sys/kernel/random/boot_id && exec "$@"`, "clone"}
	a := startWrapped(t, dir, []string{"BOOT=" + boot}, clone, testbed.LifeboatBinary(t), runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 3 || !strings.Contains(errOut, "renewed the lock while this process watched") {
		t.Fatalf("resume against a live holder on a cloned host: exit %d, want 3 (it renewed while watched)\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runLB(t, dir, nil, "failover", "abort", "--fleet", "fleet.yaml", "--signals", "signals.json", "--reason", "clone", "--wait", "1m")
	if !strings.Contains(errOut, "Abort requested of the run holding the lock") {
		t.Fatalf("abort against a live holder on a cloned host: exit %d, want an abort request to it\n%s\n%s", code, out, errOut)
	}
	a.wait(t, time.Minute)
	for run, recs := range journalRecords(t, state) {
		for _, r := range recs {
			if r.Kind == RecTakeover {
				t.Fatalf("run %s: the live holder's lock was taken over: %s\nholder: %s", run, r.Detail, a.stderr)
			}
		}
	}
}

// §2: on a host whose /proc is mounted hidepid=2 a holder run by another user is invisible in
// /proc, yet kill(pid, 0) answers EPERM: it exists. resume, run as nobody in a mount namespace with
// such a /proc, cannot tell the root holder's start time, so it waits the TTL, sees the renewal
// and refuses (exit 3), never "no longer runs". The store is S3 (versitygw), which both users
// reach.
func TestHidepidHolderIsWaitedOut(t *testing.T) {
	needRootNamespaces(t)
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(context.Background(), testbed.Bucket); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lifeboat-hidepid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lifeboat")
	copyFile(t, testbed.LifeboatBinary(t), bin, 0o755)
	state := fmt.Sprintf("s3://%s/%s?region=%s&endpoint=%s", testbed.Bucket, testbed.FreshPrefix("hidepid"), gw.Region, url.QueryEscape(gw.Endpoint))
	d := newHTTPDocRouter(t, binStart)
	writeBinFleet(t, dir, d.fleetLine(), state, "step_interval: 6s, lock_ttl: 2s")
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true", "HOME=" + dir}
	a := startWrapped(t, dir, env, []string{"env"}, bin, runArgs...)
	deadline := time.Now().Add(time.Minute)
	for len(d.log()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the holder never wrote its first step: %s", a.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	hidden := []string{"unshare", "--mount", "--fork", "sh", "-c",
		`mount -t proc -o hidepid=2 proc /proc && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"`, "hidepid"}
	r := startWrapped(t, dir, env, hidden, bin, resumeArgs...)
	code := r.wait(t, time.Minute)
	if code != 3 || !strings.Contains(r.stderr.String(), "renewed the lock while this process watched") {
		t.Fatalf("resume (nobody, /proc hidepid=2) against a live root holder: exit %d, want 3 (it renewed while watched)\n%s\n%s", code, r.stdout, r.stderr)
	}
	if code := a.wait(t, time.Minute); code != 0 {
		t.Fatalf("the holder: exit %d\n%s", code, a.stderr)
	}
	// this process reads the journal itself, with the emulator's credentials (not the host's chain)
	t.Setenv("AWS_ACCESS_KEY_ID", gw.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gw.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for run, recs := range journalRecords(t, state) {
		for _, rec := range recs {
			if rec.Kind == RecTakeover {
				t.Fatalf("run %s: the live holder's lock was taken over: %s", run, rec.Detail)
			}
		}
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// §2: a holder that lost its lock (another took it over with the next token) while it still runs
// and its own lease has not run out journals nothing more under its old token: the router changed
// under it (the new holder's first write) and it stops (exit 3) without the hold record it used
// to write. The take-over is written into the store as Acquire writes one (the next token).
func TestOldTokenJournalsNothing(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 3s, lock_ttl: 30s")
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	store := testbed.OpenStore(t, state, testbed.StoreOptions())
	cur, ok, err := (&Locker{Store: store}).Read(testbed.Ctx(t))
	if err != nil || !ok {
		t.Fatalf("the holder's lock: %v %v", ok, err)
	}
	// another holder takes the lock over with the next token, as Acquire writes it
	taken := Lock{ID: "b0b0b0b0b0b0", Holder: "bob@elsewhere pid 1", Operation: "failover abort", Reason: "takes over",
		Since: time.Now(), Expires: time.Now().Add(30 * time.Second), TTLMS: 30000, Token: cur.Token + 1}
	b, _ := json.Marshal(taken)
	testbed.Put(t, store, LockKey, b, providers.Checksums{})
	d.edit("eu-only", map[string]int{"eu-west-1": 50, "eu-central-1": 50}) // the new holder's first write
	code := a.wait(t, time.Minute)
	if code != 3 {
		t.Fatalf("the old holder after losing its lock: exit %d, want 3\n%s", code, a.stderr)
	}
	for run, recs := range journalRecords(t, state) {
		for _, r := range recs {
			if r.Token == cur.Token && r.Time.After(taken.Since) {
				t.Fatalf("run %s: the old holder wrote a %s record under its old token %d after losing the lock: %s", run, r.Kind, r.Token, r.Detail)
			}
		}
	}
}

// §3: a holder whose state store stops answering (every request held by a fault proxy in front
// of versitygw) exits 3 saying its lease ran out, within a TTL of its lease; it never hangs on.
func TestStalledStoreHolderExits(t *testing.T) {
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
	t.Cleanup(func() { in.SetLatency(0, 0) })
	state := fmt.Sprintf("s3://%s/%s?region=%s&endpoint=%s", testbed.Bucket, testbed.FreshPrefix("stalled"), gw.Region, url.QueryEscape(proxy.URL))
	d := newHTTPDocRouter(t, binStart)
	dir := t.TempDir()
	writeBinFleet(t, dir, d.fleetLine(), state, "step_interval: 2s, lock_ttl: 2s")
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	a := startLB(t, dir, env, runArgs...)
	deadline := time.Now().Add(time.Minute)
	for len(d.log()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the holder never wrote its first step: %s", a.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.SetLatency(time.Hour, 0) // the store stops answering
	stalled := time.Now()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second): // the lease (1.5 s) and one TTL (2 s) passed many times over
		t.Fatalf("the holder still runs %s after its store stopped answering (lock_ttl 2s)\n%s", time.Since(stalled).Round(time.Second), a.stderr)
	}
	if a.code != 3 || !strings.Contains(a.stderr.String(), "lease ran out") {
		t.Fatalf("holder with a stalled store: exit %d, want 3 saying its lease ran out\n%s", a.code, a.stderr)
	}
}

// holdPuts makes the router's next PUT of class wait (the write in flight) until release is
// closed, and reports on held when it arrives; every later PUT is checked by after, if set.
func holdPuts(d *httpDocRouter, class string, arm <-chan struct{}, after func()) (held chan struct{}, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	var n int
	var mu sync.Mutex
	d.setHook(func(r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/"+class) {
			return
		}
		select {
		case <-arm:
		default:
			return
		}
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			once.Do(func() { close(held) })
			<-release
			return
		}
		if after != nil {
			after()
		}
	})
	return held, release
}

// §3: kill -9 with a router write in flight that lands after the next holder read the router:
// resume's conditional write finds the router changed — to exactly the dead holder's journaled
// intent for that step. That is the dead holder's own write: resume journals the step's result
// and finishes the run (exit 0), where it used to blame "someone else edited the router".
func TestInFlightWriteLandingLateIsFinished(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 300ms, lock_ttl: 5s")
	arm := make(chan struct{})
	var releaseOnce sync.Once
	var release chan struct{}
	held, release := holdPuts(d, "eu-only", arm, func() {
		// resume's own write of the step: the dead holder's write lands just before it
		releaseOnce.Do(func() { close(release); time.Sleep(200 * time.Millisecond) })
	})
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	close(arm)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatalf("the holder never wrote its second step: %s", a.stderr)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, time.Minute)
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 0 {
		t.Fatalf("resume after kill -9 with a write in flight: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	if got := d.doc("eu-only"); got.Weights["eu-west-1"] != 0 {
		t.Fatalf("the run did not finish: eu-only %+v", got)
	}
	landed := false
	for _, recs := range journalRecords(t, state) {
		for _, r := range recs {
			landed = landed || (r.Kind == RecResult && strings.Contains(r.Detail, "previous holder's write landed"))
		}
	}
	if !landed {
		t.Fatalf("the late write was not recorded as the dead holder's: %s", errOut)
	}
}

// §3: the router restarts from its configuration during a step (the write of step 2 in flight,
// the holder killed, the router back at its configured weights): resume re-plans from the router
// as it reads under the lock — never more than step_percent per step from there — and finishes
// (exit 0), where every resume used to hold on step_percent for ever.
func TestRouterRestartDuringStepReplans(t *testing.T) {
	d := newHTTPDocRouter(t, binStart)
	dir, state := binDir(t, d.fleetLine(), "step_interval: 300ms, lock_ttl: 5s")
	arm := make(chan struct{})
	held, release := holdPuts(d, "eu-only", arm, nil)
	a := startLB(t, dir, nil, runArgs...)
	waitJournal(t, a, strings.TrimPrefix(state, "file://"), RecResult, 0, time.Minute)
	close(arm)
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatalf("the holder never wrote its second step: %s", a.stderr)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t, time.Minute)
	d.restart(binStart) // reloaded from its configuration: the run's changes are gone
	d.setHook(nil)
	close(release) // the dead holder's write, held, is answered 412 (its If-Match is stale)
	code, out, errOut := runLB(t, dir, nil, resumeArgs...)
	if code != 0 {
		t.Fatalf("resume after a router restart during a step: exit %d, want 0\n%s\n%s", code, out, errOut)
	}
	if got := d.doc("eu-only"); got.Weights["eu-west-1"] != 0 {
		t.Fatalf("the run did not finish: eu-only %+v", got)
	}
	replanned := false
	for _, recs := range journalRecords(t, state) {
		for _, r := range recs {
			replanned = replanned || r.Kind == RecReplan
			if r.Kind == RecResult && r.Before != nil && r.After != nil {
				for class, w := range r.After.Weights {
					for region, v := range w {
						if moved := v - r.Before.Weights[class][region]; moved > 25 || moved < -25 {
							t.Errorf("step %d moved %s/%s by %d (step_percent 25)", *r.Step, class, region, moved)
						}
					}
				}
			}
		}
	}
	if !replanned {
		t.Fatalf("no replan journaled: %s", errOut)
	}
}
