//go:build integration

package warm_test

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/verify/warm"
)

// simModel loads the sample repository for one test.
func simModel(t *testing.T) *enginesim.Model {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(context.Background(), l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// countingSim serves the engine simulator on loopback and counts the generation requests it
// answered with HTTP 500: what the replica really did, to hold the probe's count against.
func countingSim(t *testing.T, m *enginesim.Model, so enginesim.ServerOptions) (string, *atomic.Int64) {
	t.Helper()
	srv := enginesim.NewServer(m, so)
	var failed atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		srv.ServeHTTP(rec, r)
		if rec.code == http.StatusInternalServerError {
			failed.Add(1)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String(), &failed
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(c int) { r.code = c; r.ResponseWriter.WriteHeader(c) }
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestProbeHalfFailingReplicaIsNeverWarmByLuck: issue 27 item 4. A replica failing half its
// requests, over many seeds of the simulator's failure draws: the probe sends 8 requests, so it
// calls such a replica WARM only when all 8 happened to succeed (probability 0.5^8 = 1/256 per
// seed). Property, for every seed: WARM exactly when the replica answered every request; the
// result's failure count is what the replica really failed; and the share of WARM verdicts over
// all seeds stays within what 0.5^8 allows (the draws are seeded: the run is deterministic).
func TestProbeHalfFailingReplicaIsNeverWarmByLuck(t *testing.T) {
	const seeds = 120
	warmRuns := 0
	m := simModel(t)
	for seed := uint64(1); seed <= seeds; seed++ {
		url, failed := countingSim(t, m, enginesim.ServerOptions{FailRate: 0.5, Seed: seed, InterTokenDelay: time.Millisecond})
		res := warm.Probe(context.Background(), url, warm.ProbeOptions{Models: []string{sample.DefaultServedName},
			Timeout: 30 * time.Second, TTFTBudget: -1, MaxWaiting: -1})
		if res.Requests.Sent != warm.DefaultProbeRequests {
			t.Fatalf("seed %d: sent %d requests, want the documented default %d", seed, res.Requests.Sent, warm.DefaultProbeRequests)
		}
		if int64(res.Requests.Failed) != failed.Load() {
			t.Errorf("seed %d: the probe counted %d failures, the replica failed %d", seed, res.Requests.Failed, failed.Load())
		}
		if (res.Verdict == warm.Warm) != (failed.Load() == 0) {
			js, _ := json.Marshal(res)
			t.Errorf("seed %d: verdict %s with %d of %d requests failed\n%s", seed, res.Verdict, failed.Load(), res.Requests.Sent, js)
		}
		if res.Verdict != warm.Warm && res.Verdict != warm.ChatFailed {
			t.Errorf("seed %d: verdict %s (%s), want CHAT_FAILED for failed requests", seed, res.Verdict, res.Reason)
		}
		if res.Requests.Failed > 0 && (res.Requests.FailureRate == nil || math.Abs(*res.Requests.FailureRate-float64(res.Requests.Failed)/8) > 1e-9) {
			t.Errorf("seed %d: failure_rate %v for %d of 8", seed, res.Requests.FailureRate, res.Requests.Failed)
		}
		if res.Verdict == warm.Warm {
			warmRuns++
		}
	}
	// Expected 120/256 ≈ 0.47 WARM runs; more than 3 would be P < 0.002 under the model — a
	// probe that gives up after one request would be WARM about 60 times.
	if warmRuns > 3 {
		t.Errorf("%d of %d seeds called WARM: more than 0.5^8 allows", warmRuns, seeds)
	}
	t.Logf("%d of %d half-failing replicas called WARM (0.5^8 × %d = %.2f expected)", warmRuns, seeds, seeds, seeds/256.0)
}

// TestProbeSeesTheQueueWhileInFlight: 54 requests wait in front of the probe's first one, and
// have drained once it is done. Read only after the probe (as before issue 27) the queue is
// empty and the replica WARM; read before and while in flight it is SATURATED.
func TestProbeSeesTheQueueWhileInFlight(t *testing.T) {
	url, _ := countingSim(t, simModel(t), enginesim.ServerOptions{HoldWaiting: 54, HoldWait: 800 * time.Millisecond, InterTokenDelay: time.Millisecond})
	res := warm.Probe(context.Background(), url, warm.ProbeOptions{Models: []string{sample.DefaultServedName},
		Timeout: 30 * time.Second, MaxWaiting: 16})
	if res.Verdict != warm.Saturated {
		js, _ := json.MarshalIndent(res.Checks, "", "  ")
		t.Fatalf("verdict %s (%s), want SATURATED\n%s", res.Verdict, res.Reason, js)
	}
	t.Log(res.Reason)
}

// TestProbeSleepMode: an engine put to sleep is SLEEPING (and not woken by the probe); one
// woken whose engine cannot generate, though /health says 200, is not WARM; one woken whole is.
func TestProbeSleepMode(t *testing.T) {
	o := warm.ProbeOptions{Models: []string{sample.DefaultServedName}, Timeout: 30 * time.Second, TTFTBudget: -1}
	m := simModel(t)
	for _, tc := range []struct {
		name   string
		broken bool
		wake   bool
		want   warm.Verdict
	}{
		{"asleep", false, false, warm.Sleeping},
		{"woken", false, true, warm.Warm},
		{"woken broken", true, true, warm.ChatFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := countingSim(t, m, enginesim.ServerOptions{EnableSleepMode: true, WakeBroken: tc.broken, InterTokenDelay: time.Millisecond})
			post(t, url+"/sleep?level=1")
			if tc.wake {
				post(t, url+"/wake_up")
			}
			res := warm.Probe(context.Background(), url, o)
			if res.Verdict != tc.want {
				js, _ := json.MarshalIndent(res.Checks, "", "  ")
				t.Fatalf("verdict %s (%s), want %s\n%s", res.Verdict, res.Reason, tc.want, js)
			}
			if tc.want == warm.Sleeping && res.Requests.Sent != 0 {
				t.Errorf("sent %d generation requests to a sleeping engine", res.Requests.Sent)
			}
			// /health answered 200 throughout: sleep and a broken wake are not an engine death.
			for _, c := range res.Checks {
				if c.Name == "health" && !c.OK {
					t.Errorf("health: %s", c.Detail)
				}
			}
		})
	}
}

func post(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
}
