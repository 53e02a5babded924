//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/clitest"
	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// metricLine is the value of one series of a metrics text, "" when it is absent.
func metricLine(text, series string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			return v
		}
	}
	return ""
}

// `watch --once` prints every region's metrics, from a signals file read again at each run: a
// region that turns warm changes what evacuating its neighbour would do.
func TestWatchOnceSignalsChange(t *testing.T) {
	clitest.Binary(t) // built from the module, before the test moves to its directory
	failoverDir(t)
	r := cli(t, nil, "watch", "--fleet", "fleet.yaml", "--signals", "cold.json", "--once", "--verify-interval", "0")
	if r.code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", r.code, r.stderr)
	}
	for series, want := range map[string]string{
		`lifeboat_evacuation_outcome{class="eu-only",outcome="refused",region="eu-west-1",rule="residency"}`: "1",
		`lifeboat_evacuation_outcome{class="global",outcome="complete",region="eu-west-1",rule=""}`:          "1",
		`lifeboat_evacuation_plan_outcome{outcome="refused",region="eu-west-1",rule="residency"}`:            "1",
		`lifeboat_evacuation_plan_outcome{outcome="complete",region="us-east-1",rule=""}`:                    "1",
		`lifeboat_region_warm{region="eu-central-1"}`:                                                        "0",
		`lifeboat_region_warm{region="eu-west-1"}`:                                                           "1",
		`lifeboat_failover_lock_held{holder=""}`:                                                             "0",
		`lifeboat_router_drift`:                                                                              "0",
		`lifeboat_evacuation_shed_ratio{class="global",region="eu-west-1"}`:                                  "0",
	} {
		if got := metricLine(r.stdout, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
	if metricLine(r.stdout, "lifeboat_watch_last_evaluation_timestamp_seconds") == "" {
		t.Errorf("no lifeboat_watch_last_evaluation_timestamp_seconds:\n%s", r.stdout)
	}
	if t.Failed() {
		t.Fatalf("metrics:\n%s", r.stdout)
	}
	// eu-central-1 turns warm: evacuating eu-west-1 is complete for eu-only too
	os.WriteFile("cold.json", []byte(readFile(t, "warm.json")), 0o644)
	r = cli(t, nil, "watch", "--fleet", "fleet.yaml", "--signals", "cold.json", "--once", "--verify-interval", "0")
	for series, want := range map[string]string{
		`lifeboat_evacuation_outcome{class="eu-only",outcome="refused",region="eu-west-1",rule=""}`:  "0",
		`lifeboat_evacuation_outcome{class="eu-only",outcome="complete",region="eu-west-1",rule=""}`: "1",
		`lifeboat_region_warm{region="eu-central-1"}`:                                                "1",
	} {
		if got := metricLine(r.stdout, series); got != want {
			t.Errorf("after the change: %s = %q, want %s", series, got, want)
		}
	}
	if t.Failed() {
		t.Fatalf("metrics:\n%s", r.stdout)
	}
}

// switchable serves an engine-sim, or answers /health 503 while down is set, or never answers
// while stall is set (a silent listener: the connection is accepted, nothing comes back).
type switchable struct {
	h, saturated       http.Handler
	down, stall, queue atomic.Bool
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.stall.Load() {
		<-r.Context().Done()
		return
	}
	if s.queue.Load() {
		s.saturated.ServeHTTP(w, r) // the same engine with a standing queue
		return
	}
	if s.down.Load() && r.URL.Path == "/health" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.h.ServeHTTP(w, r)
}

// watchLiveFleet writes a fleet whose three regions are engine-sim replicas the test can take
// down or stall, and the router's weights; it returns the regions' switches.
func watchLiveFleet(t *testing.T) map[string]*switchable {
	t.Helper()
	testbed.LifeboatBinary(t)
	ctx := context.Background()
	l, err := sample.Generate(ctx, t.TempDir(), sample.Options{NoLoRA: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(ctx, l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw, url := map[string]*switchable{}, map[string]string{}
	for _, r := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		sw[r] = &switchable{h: enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond}),
			saturated: enginesim.NewServer(m, enginesim.ServerOptions{InterTokenDelay: time.Millisecond, Saturate: true, SaturateWait: 10 * time.Millisecond})}
		hs := httptest.NewServer(sw[r])
		t.Cleanup(hs.Close)
		url[r] = hs.URL
	}
	dir := failoverDir(t)
	fleet := fmt.Sprintf(`model: {name: %s, manifest: m.json}
regions:
  us-east-1: {replica: ./r, endpoint: %q, capacity: {replicas: 6, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
  eu-west-1: {replica: ./r, endpoint: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
  eu-central-1: {replica: ./r, endpoint: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}, signals: {mean_prompt_tokens: 100}}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1]
router: {driver: file, path: weights.json}
failover: {step_percent: 25, step_interval: 600ms, spill_cap_percent: 60, drain_timeout: 1s, failback_dwell: 2s, assumed_utilization_percent: 20}
state: file://./state
`, m.ServedNames[0], url["us-east-1"], url["eu-west-1"], url["eu-central-1"])
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644)
	return sw
}

// Live engines: a region whose /health stops answering 200 turns evacuating its neighbour's
// eu-only class from complete to refused (residency), and its own warm and healthy to 0; an
// engine whose queue grows shows its queue wait.
func TestWatchOnceLiveEngines(t *testing.T) {
	sw := watchLiveFleet(t)
	once := func() string {
		r := cli(t, nil, "watch", "--fleet", "fleet.yaml", "--once", "--probe-timeout", "5s", "--verify-interval", "0")
		if r.code != 0 {
			t.Fatalf("watch --once: exit %d\n%s", r.code, r.stderr)
		}
		return r.stdout
	}
	out := once()
	for series, want := range map[string]string{
		`lifeboat_region_warm{region="eu-central-1"}`:                                                "1",
		`lifeboat_region_healthy{region="eu-central-1"}`:                                             "1",
		`lifeboat_evacuation_outcome{class="eu-only",outcome="complete",region="eu-west-1",rule=""}`: "1",
	} {
		if got := metricLine(out, series); got != want {
			t.Fatalf("%s = %q, want %s\n%s", series, got, want, out)
		}
	}
	sw["eu-central-1"].down.Store(true)
	out = once()
	for series, want := range map[string]string{
		`lifeboat_region_warm{region="eu-central-1"}`:                                                        "0",
		`lifeboat_region_healthy{region="eu-central-1"}`:                                                     "0",
		`lifeboat_evacuation_outcome{class="eu-only",outcome="refused",region="eu-west-1",rule="residency"}`: "1",
		`lifeboat_region_warm{region="us-east-1"}`:                                                           "1",
	} {
		if got := metricLine(out, series); got != want {
			t.Fatalf("after eu-central-1 went down: %s = %q, want %s\n%s", series, got, want, out)
		}
	}
	// us-east-1's engine grows a standing queue: its queue wait goes from 0 to a wait
	if got := metricLine(out, `lifeboat_region_queue_wait_seconds{region="us-east-1"}`); got != "0" {
		t.Fatalf("us-east-1's queue wait before its queue grew: %q\n%s", got, out)
	}
	sw["us-east-1"].queue.Store(true)
	out = once()
	if got := metricLine(out, `lifeboat_region_queue_wait_seconds{region="us-east-1"}`); got == "" || got == "0" {
		t.Fatalf("us-east-1's queue wait after its queue grew: %q\n%s", got, out)
	}
}

// lockedBuffer is a bytes.Buffer safe to write from the process's pipe while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A region whose engine stalls (accepts, never answers) does not stall the others: the served
// metrics keep updating every interval, a scrape never waits for the evaluation in progress,
// and a change of another region shows within a few intervals. SIGTERM ends the watch, exit 0.
func TestWatchStalledRegionDoesNotStallOthers(t *testing.T) {
	sw := watchLiveFleet(t)
	sw["us-east-1"].stall.Store(true)
	var stderr lockedBuffer
	p := clitest.Start(t, clitest.Options{Stderr: &stderr}, "watch", "--fleet", "fleet.yaml", "--listen", "127.0.0.1:0",
		"--interval", "2s", "--probe-timeout", "1s", "--verify-interval", "0")
	addrRE := regexp.MustCompile(`listen=(127\.0\.0\.1:\d+)`)
	var addr string
	for deadline := time.Now().Add(20 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		p.Cmd.Process.Kill()
		t.Fatalf("watch never said where it serves:\n%s", stderr.String())
	}
	scrape := func() (string, time.Duration) {
		start := time.Now()
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), time.Since(start)
	}
	// wait for the metrics to say what is wanted, at most within; every scrape is quick
	await := func(within time.Duration, want map[string]string) (string, []string) {
		var text string
		var seen []string
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var took time.Duration
			text, took = scrape()
			if took > 500*time.Millisecond {
				t.Fatalf("a scrape waited %s (an evaluation in progress must not hold it)", took)
			}
			if ts := metricLine(text, "lifeboat_watch_last_evaluation_timestamp_seconds"); ts != "" && (len(seen) == 0 || seen[len(seen)-1] != ts) {
				seen = append(seen, ts)
			}
			ok := true
			for s, v := range want {
				ok = ok && metricLine(text, s) == v
			}
			if ok {
				return text, seen
			}
		}
		t.Fatalf("within %s the metrics did not show %v:\n%s\n%s", within, want, text, stderr.String())
		return "", nil
	}
	await(10*time.Second, map[string]string{
		`lifeboat_region_healthy{region="us-east-1"}`:    "0",
		`lifeboat_region_warm{region="eu-central-1"}`:    "1",
		`lifeboat_region_healthy{region="eu-central-1"}`: "1",
		`lifeboat_region_warm{region="eu-west-1"}`:       "1",
	})
	sw["eu-central-1"].down.Store(true)
	_, seen := await(8*time.Second, map[string]string{
		`lifeboat_region_healthy{region="eu-central-1"}`:                                                     "0",
		`lifeboat_evacuation_outcome{class="eu-only",outcome="refused",region="eu-west-1",rule="residency"}`: "1",
		`lifeboat_region_warm{region="eu-west-1"}`:                                                           "1",
	})
	if len(seen) < 1 {
		t.Fatalf("no evaluation timestamp served")
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if r := p.Wait(); r.Code != 0 {
		t.Fatalf("watch after SIGTERM: exit %d\n%s", r.Code, r.Stderr)
	}
}

// The replicas are quick-verified as check does: a local bundle is UNVERIFIED (nothing failed,
// no native checksums: ok, as check passes it), a missing one NOT_FOUND (not ok), each with the
// time it was verified.
func TestWatchOnceReplicaVerification(t *testing.T) {
	clitest.Binary(t)
	l, m := fixture(t, sample.Options{NoLoRA: true})
	dir := failoverDir(t)
	fleet := strings.Replace(cliFleet, "manifest: m.json", "manifest: "+m, 1)
	fleet = strings.Replace(fleet, "us-east-1: {replica: ./r,", "us-east-1: {replica: "+l.Root+",", 1)
	os.WriteFile(filepath.Join(dir, "fleet.yaml"), []byte(fleet), 0o644)
	r := cli(t, nil, "watch", "--fleet", "fleet.yaml", "--signals", "warm.json", "--once")
	if r.code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", r.code, r.stderr)
	}
	for series, want := range map[string]string{
		`lifeboat_replica_verify_ok{region="us-east-1",status="UNVERIFIED"}`: "1",
		`lifeboat_replica_verify_ok{region="eu-west-1",status="NOT_FOUND"}`:  "0",
	} {
		if got := metricLine(r.stdout, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
	if metricLine(r.stdout, `lifeboat_replica_verified_timestamp_seconds{region="us-east-1"}`) == "" {
		t.Errorf("no verification time for us-east-1")
	}
	if t.Failed() {
		t.Fatalf("metrics:\n%s", r.stdout)
	}
}
