package warm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeVLLM is a scriptable vLLM look-alike for hostile-server tests.
type fakeVLLM struct {
	health   atomic.Int32
	models   string
	metrics  func(probeDone bool) string
	chat     func(w http.ResponseWriter, r *http.Request)
	finished atomic.Bool
	quit     chan struct{} // closed at test end: stalling handlers return
	// drop, when set, is asked before each request: true closes the connection unanswered.
	drop func(path string) bool
}

// dropAfter drops the requests for path from its (first+1)th on, n of them (n < 0: all).
func dropAfter(path string, first, n int) func(string) bool {
	var seen, dropped atomic.Int32
	return func(p string) bool {
		if p != path || int(seen.Add(1)) <= first || (n >= 0 && int(dropped.Load()) >= n) {
			return false
		}
		dropped.Add(1)
		return true
	}
}

const goodModels = `{"object":"list","data":[{"id":"llama-demo","object":"model","parent":null,"max_model_len":8192},
{"id":"sql-lora","object":"model","parent":"llama-demo","max_model_len":null}]}`

func goodMetrics(done bool) string {
	n := 3
	if done {
		n = 4
	}
	return fmt.Sprintf(`# HELP vllm:num_requests_waiting waiting
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama-demo"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama-demo"} 0.01
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="length",model_name="llama-demo"} %d
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="4096"} 1
`, n)
}

func sse(w http.ResponseWriter, frames ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	for _, f := range frames {
		fmt.Fprintf(w, "data: %s\n\n", f)
		w.(http.Flusher).Flush()
	}
}

func stall(r *http.Request, quit chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-quit:
	}
}

func content(s string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}})
	return string(b)
}

func goodChat(w http.ResponseWriter, r *http.Request) {
	sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, content("Hi"), content(" there"), `{"choices":[],"usage":{"completion_tokens":2}}`, "[DONE]")
}

func (f *fakeVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.drop != nil && f.drop(r.URL.Path) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
		return
	}
	switch r.URL.Path {
	case "/health":
		w.WriteHeader(int(f.health.Load()))
	case "/v1/models":
		fmt.Fprint(w, f.models)
	case "/metrics":
		fmt.Fprint(w, f.metrics(f.finished.Load()))
	case "/v1/chat/completions", "/v1/completions":
		// Read the body: only then does net/http notice a client that hangs up (r.Context()).
		_, _ = io.Copy(io.Discard, r.Body)
		f.chat(w, r)
		f.finished.Store(true)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T, mod func(f *fakeVLLM)) string {
	f := &fakeVLLM{models: goodModels, metrics: goodMetrics, chat: goodChat, quit: make(chan struct{})}
	f.health.Store(200)
	if mod != nil {
		mod(f)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		close(f.quit)
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func fastOpts() ProbeOptions {
	// Timeout is the whole probe's budget: room for the listen, the exchanges and the up-to-5s
	// wait for the success counter to rise.
	return ProbeOptions{Models: []string{"llama-demo"}, LoRAs: []string{"sql-lora"}, Timeout: 30 * time.Second,
		RequestTimeout: 3 * time.Second, StallTimeout: 500 * time.Millisecond}
}

func TestProbeHostileServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mod    func(f *fakeVLLM)
		opts   func(o *ProbeOptions)
		want   Verdict
		detail string
	}{
		{"warm", nil, nil, Warm, ""},
		{"closes mid-stream", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				sse(w, content("Hi"))
				c, _, _ := w.(http.Hijacker).Hijack()
				c.Close()
			}
		}, nil, ChatFailed, "before [DONE]"},
		{"error frame", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				sse(w, content("Hi"), `{"error":{"message":"boom","type":"InternalServerError","code":500}}`)
			}
		}, nil, ChatFailed, "error frame after 1 tokens: boom"},
		{"engine dead frame", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				f.health.Store(503)
				sse(w, `{"error":{"message":"EngineCore encountered an issue","type":"EngineDeadError","code":500}}`)
			}
		}, nil, EngineDead, "EngineCore"},
		{"garbage SSE", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) { sse(w, content("Hi"), "{not json", "[DONE]") }
		}, nil, ChatFailed, "garbage in the event stream"},
		{"not SSE lines", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "<html>oops</html>\n")
			}
		}, nil, ChatFailed, "not server-sent events"},
		{"JSON instead of a stream", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"choices":[]}`) }
		}, nil, ChatFailed, "not an event stream"},
		{"stall", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				sse(w, content("Hi"))
				stall(r, f.quit)
			}
		}, nil, ChatFailed, "stalled"},
		{"stall before headers", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) { stall(r, f.quit) }
		}, nil, ChatFailed, "stalled"},
		{"never-ending stream", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				sse(w)
				for r.Context().Err() == nil {
					if _, err := fmt.Fprintf(w, "data: %s\n\n", content("x")); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					time.Sleep(20 * time.Millisecond)
				}
			}
		}, nil, ChatFailed, "no [DONE] within"},
		{"no content", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) { sse(w, "[DONE]") }
		}, nil, ChatFailed, "without any content"},
		{"chat template missing", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":{"message":"As of transformers v4.44, default chat template is no longer allowed","type":"BadRequestError","code":400}}`)
			}
		}, nil, ChatFailed, "HTTP 400: As of transformers"},
		{"health 503", func(f *fakeVLLM) { f.health.Store(503) }, nil, EngineDead, "503"},
		// One connection dropped on a loaded machine is not an engine death; an engine that stops
		// answering is.
		// (Two drops: net/http itself resends an unanswered GET once when it was on a reused
		// connection.)
		{"one health request dropped", func(f *fakeVLLM) { f.drop = dropAfter("/health", 1, 2) }, nil, Warm, ""},
		{"one metrics request dropped", func(f *fakeVLLM) { f.drop = dropAfter("/metrics", 1, 2) }, nil, Warm, ""},
		{"health gone after the probe", func(f *fakeVLLM) { f.drop = dropAfter("/health", 1, -1) }, nil, EngineDead, "GET /health"},
		{"model missing", nil, func(o *ProbeOptions) { o.Models = []string{"other"} }, ModelMissing, "not in /v1/models"},
		{"adapter wrong parent", nil, func(o *ProbeOptions) { o.Models = []string{"llama-demo", "x"} }, ModelMissing, ""},
		{"adapter missing", nil, func(o *ProbeOptions) { o.LoRAs = []string{"nope"} }, AdapterMissing, "nope"},
		{"adapter parent", func(f *fakeVLLM) {
			f.models = `{"data":[{"id":"llama-demo","parent":null},{"id":"sql-lora","parent":"someone-else"}]}`
		}, nil, AdapterMissing, `parent "someone-else"`},
		{"slow", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(300 * time.Millisecond)
				goodChat(w, r)
			}
		}, func(o *ProbeOptions) { o.TTFTBudget = 100 * time.Millisecond }, Slow, "budget 100ms"},
		{"saturated queue", func(f *fakeVLLM) {
			f.metrics = func(done bool) string {
				return strings.Replace(goodMetrics(done), `model_name="llama-demo"} 0`+"\n", `model_name="llama-demo"} 70`+"\n", 1)
			}
		}, nil, Saturated, "num_requests_waiting 70"},
		{"saturated KV, old name", func(f *fakeVLLM) {
			f.metrics = func(done bool) string {
				return strings.Replace(goodMetrics(done), "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", 2)
			}
		}, func(o *ProbeOptions) { o.MaxKVUsage = 0.005 }, Saturated, "vllm:gpu_cache_usage_perc"},
		{"not counted", func(f *fakeVLLM) { f.metrics = func(bool) string { return goodMetrics(false) } }, nil, ChatFailed, "probe counted"},
		{"engine not initialised", func(f *fakeVLLM) {
			f.metrics = func(done bool) string {
				return strings.Replace(goodMetrics(done), `num_gpu_blocks="4096"`, `num_gpu_blocks="0"`, 1)
			}
		}, nil, Loading, "num_gpu_blocks=0"},
		{"garbage metrics", func(f *fakeVLLM) { f.metrics = func(bool) string { return "vllm:x{{{ 1\n" } }, nil, EngineDead, "not Prometheus text"},
		{"minimal metrics tolerated", func(f *fakeVLLM) {
			f.metrics = func(bool) string { return "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n" }
		}, nil, Warm, ""},
		{"completions only", func(f *fakeVLLM) {
			f.chat = func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/completions" {
					w.WriteHeader(404)
					return
				}
				sse(w, `{"choices":[{"index":0,"text":"Hi"}]}`, "[DONE]")
			}
		}, func(o *ProbeOptions) { o.CompletionsOnly = true }, Warm, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := newFake(t, tc.mod)
			o := fastOpts()
			if tc.opts != nil {
				tc.opts(&o)
			}
			start := time.Now()
			res := Probe(context.Background(), url, o)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("probe took %s", took)
			}
			js, _ := json.MarshalIndent(res, "", "  ")
			if res.Verdict != tc.want || !strings.Contains(res.Reason, tc.detail) {
				t.Errorf("verdict %s (%s), want %s containing %q\n%s", res.Verdict, res.Reason, tc.want, tc.detail, js)
			}
			if tc.want == Warm && (res.Timings.WarmS == nil || res.Timings.TTFTS == nil || res.Timings.TokensPerS == nil) {
				t.Errorf("warm without timings:\n%s", js)
			}
			if tc.want != Warm && res.Timings.WarmS != nil {
				t.Errorf("warm_s set on %s", res.Verdict)
			}
		})
	}
}

func TestProbeNeverListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	o := fastOpts()
	o.Timeout = 600 * time.Millisecond
	res := Probe(context.Background(), "http://"+addr, o)
	// Nothing Lifeboat started listens there: UNREACHABLE, not LOADING (issue 27).
	if res.Verdict != Unreachable || !strings.Contains(res.Reason, "never accepted a connection") || res.Timings.ListenS != nil {
		t.Errorf("%+v", res)
	}
}

// TestProbeSeesListenPromptly starts listening after the prober began polling; the prober must
// notice within MaxPollInterval (asserted loosely, with a generous margin for a loaded machine).
func TestProbeSeesListenPromptly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := &fakeVLLM{models: goodModels, metrics: goodMetrics, chat: goodChat, quit: make(chan struct{})}
	f.health.Store(200)
	listening := make(chan time.Time, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			listening <- time.Time{}
			return
		}
		listening <- time.Now()
		srv := &http.Server{Handler: f}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}()
	o := fastOpts()
	res := Probe(context.Background(), "http://"+addr, o)
	at := <-listening
	if at.IsZero() {
		t.Skip("port was taken meanwhile")
	}
	if res.Verdict != Warm || res.Timings.ListenS == nil {
		t.Fatalf("%+v", res)
	}
	// The first "listen" check saw the connection; its detail counts attempts (backoff bounded).
	if !strings.Contains(res.Checks[0].Detail, "attempt") {
		t.Errorf("listen check: %+v", res.Checks[0])
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	for in, want := range map[string]string{"http://h:8000/": "http://h:8000", "http://h:8000/v1": "http://h:8000", "https://h/p/v1/": "https://h/p"} {
		if got, err := NormalizeBaseURL(in); err != nil || got != want {
			t.Errorf("%s → %s %v", in, got, err)
		}
	}
	for _, bad := range []string{"h:8000", "ftp://h", "http://", "http://h?x=1"} {
		if _, err := NormalizeBaseURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// --timeout is the probe's total budget (issue 8: one meaning everywhere): a replica that
// listens and then holds a request open is given up on when the budget passes, not after the
// longer per-request deadline, and the verdict says which limit ended it.
func TestProbeTimeoutIsTotal(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(f *fakeVLLM)
	}{
		{"chat held open", func(f *fakeVLLM) { f.chat = func(w http.ResponseWriter, r *http.Request) { stall(r, f.quit) } }},
		{"health held open", func(f *fakeVLLM) {
			f.health.Store(0) // never written: the handler below answers
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var u string
			if c.name == "health held open" {
				quit := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stall(r, quit) }))
				t.Cleanup(func() { close(quit); srv.CloseClientConnections(); srv.Close() })
				u = srv.URL
			} else {
				u = newFake(t, c.mod)
			}
			o := fastOpts()
			o.Timeout, o.RequestTimeout, o.StallTimeout = time.Second, time.Hour, time.Hour
			done := make(chan ProbeResult, 1)
			go func() { done <- Probe(context.Background(), u, o) }()
			var res ProbeResult
			select {
			case res = <-done:
			case <-time.After(time.Minute): // only a guard against a hang; the budget is 1s
				t.Fatal("the probe ran past its total --timeout")
			}
			if res.Verdict == Warm || !strings.Contains(res.Reason, "total --timeout of 1s passed") || res.Timings.ListenS == nil {
				t.Errorf("%s: %+v", res.Verdict, res)
			}
		})
	}
}
