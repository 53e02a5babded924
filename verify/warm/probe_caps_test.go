package warm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProbeCapsWhatAPeerSends: issue 9 item 3. A replica is not trusted to be small: an event
// stream line that never ends, a stream that never ends, a /metrics page or a model list over the
// cap each fail a named check — the probe neither grows without bound nor says WARM with its
// metric checks skipped.
func TestProbeCapsWhatAPeerSends(t *testing.T) {
	endless := func(prefix string, chunk []byte) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.Write([]byte(prefix))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	bigMetrics := func(done bool) string {
		// Exactly 16 MiB of comment lines first: a reader that cuts there sees a clean page with
		// no vllm: series, and used to skip every metric check and say WARM.
		return strings.Repeat("#"+strings.Repeat(" ", 62)+"\n", 16<<20/64) + goodMetrics(done)
	}
	for _, tc := range []struct {
		name   string
		mod    func(f *fakeVLLM)
		want   Verdict
		detail string
	}{
		{"line without newline", func(f *fakeVLLM) {
			f.chat = endless("data: ", []byte(strings.Repeat("a", 32<<10)))
		}, ChatFailed, fmt.Sprintf("line longer than %d bytes", MaxSSELineBytes)},
		{"endless comment lines", func(f *fakeVLLM) {
			f.chat = endless("", []byte(strings.Repeat(": keep-alive\n", 2<<10)))
		}, ChatFailed, fmt.Sprintf("larger than %d bytes without [DONE]", MaxStreamBytes)},
		{"metrics over the cap", func(f *fakeVLLM) { f.metrics = bigMetrics }, EngineDead, "GET /metrics: body over the prober's size cap"},
		{"models over the cap", func(f *fakeVLLM) {
			f.models = `{"data":[{"id":"llama-demo","parent":null},{"id":"sql-lora","parent":"llama-demo"}],"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
		}, ModelMissing, "body over the prober's size cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := newFake(t, tc.mod)
			o := fastOpts()
			o.StallTimeout, o.RequestTimeout = 10*time.Second, 20*time.Second // only the caps may end it
			res := Probe(context.Background(), url, o)
			js, _ := json.MarshalIndent(res.Checks, "", "  ")
			if res.Verdict != tc.want || !strings.Contains(res.Reason, tc.detail) {
				t.Errorf("verdict %s (%s), want %s containing %q\n%s", res.Verdict, res.Reason, tc.want, tc.detail, js)
			}
		})
	}
}

// TestProbeStallCountsBytes: the stall watchdog measures silence in bytes, not lines — an
// answer whose lines arrive slowly, a byte at a time, is not a stall, however long a line takes.
func TestProbeStallCountsBytes(t *testing.T) {
	url := newFake(t, func(f *fakeVLLM) {
		f.chat = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			lines := "data: " + content("Hi") + "\n\ndata: " + content(" there") + "\n\ndata: [DONE]\n\n"
			for i := 0; i < len(lines); i++ {
				w.Write([]byte{lines[i]})
				w.(http.Flusher).Flush()
				if i < 60 { // the first line takes ~60 gaps, each far below the stall timeout
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
	})
	o := fastOpts()
	o.LoRAs, o.TTFTBudget = nil, -1
	o.StallTimeout, o.RequestTimeout = 300*time.Millisecond, 20*time.Second
	res := Probe(context.Background(), url, o)
	if res.Verdict != Warm {
		js, _ := json.MarshalIndent(res.Checks, "", "  ")
		t.Fatalf("verdict %s (%s), want WARM: bytes kept arriving\n%s", res.Verdict, res.Reason, js)
	}
}

// TestProbeRedirectsStayOnHost: issue 9 item 10. A replica answering 302 to another host (a
// metadata address, say) is not followed; a redirect on the replica's own host still is.
func TestProbeRedirectsStayOnHost(t *testing.T) {
	var hit atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit.Add(1)
		fmt.Fprint(w, goodModels)
	}))
	defer other.Close()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			http.Redirect(w, r, other.URL+"/latest/meta-data/", http.StatusFound)
		case "/health":
			http.Redirect(w, r, "/health-real", http.StatusFound) // same host: followed
		case "/health-real":
			w.WriteHeader(200)
		default:
			http.NotFound(w, r)
		}
	}))
	defer front.Close()
	o := fastOpts()
	res := Probe(context.Background(), front.URL, o)
	if hit.Load() != 0 {
		t.Errorf("the prober followed a redirect to another host (%d requests there)", hit.Load())
	}
	if res.Verdict != ModelMissing || !strings.Contains(res.Reason, "refused: not the same scheme, host and port") {
		t.Errorf("verdict %s (%s), want MODEL_MISSING naming the refused redirect", res.Verdict, res.Reason)
	}
	for _, c := range res.Checks {
		if c.Name == "health" && !c.OK {
			t.Errorf("a same-host redirect was not followed: %s", c.Detail)
		}
	}
}
