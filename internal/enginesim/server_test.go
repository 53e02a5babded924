package enginesim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"lifeboat/internal/sample"
)

func newTestServer(t *testing.T, l *sample.Layout, o ServerOptions) (*Server, *httptest.Server) {
	t.Helper()
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if o.InterTokenDelay == 0 {
		o.InterTokenDelay = time.Millisecond
	}
	s := NewServer(m, o)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseEvents reads "data: …" events until [DONE] or EOF.
func sseEvents(t *testing.T, r io.Reader) (events []map[string]any, done bool) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			return events, true
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("bad event %q: %v", data, err)
		}
		events = append(events, ev)
	}
	return events, false
}

const chatBody = `{"model": "llama-demo", "messages": [{"role": "user", "content": "What is a lifeboat?"}], "max_tokens": 5, "stream": true, "stream_options": {"include_usage": true}}`

func TestModelsCards(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{}), ServerOptions{})
	code, body := getBody(t, hs.URL+"/v1/models")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	var list struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 2 {
		t.Fatalf("cards: %s", body)
	}
	base, lora := list.Data[0], list.Data[1]
	if base.ID != "llama-demo" || base.Parent != nil || base.MaxModelLen == nil || *base.MaxModelLen != 8192 || base.OwnedBy != "vllm" {
		t.Errorf("base card %s", body)
	}
	if lora.ID != sample.LoRAName || lora.Parent == nil || *lora.Parent != "llama-demo" || lora.MaxModelLen != nil {
		t.Errorf("LoRA card %s", body)
	}
	for _, p := range []string{"/health", "/ping"} {
		if code, body := getBody(t, hs.URL+p); code != 200 || body != "" {
			t.Errorf("%s = %d %q", p, code, body)
		}
	}
	if _, body := getBody(t, hs.URL+"/version"); !strings.Contains(body, "-lifeboat-sim") {
		t.Errorf("/version = %s", body)
	}
}

func TestStreamedChat(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{}), ServerOptions{})
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs, done := sseEvents(t, resp.Body)
	if !done {
		t.Fatal("no [DONE]")
	}
	if len(evs) != 1+5+1 {
		t.Fatalf("%d events, want role + 5 content + usage: %v", len(evs), evs)
	}
	delta := func(ev map[string]any) map[string]any {
		return ev["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	if delta(evs[0])["role"] != "assistant" {
		t.Errorf("first chunk %v", evs[0])
	}
	var text string
	for _, ev := range evs[1:6] {
		text += delta(ev)["content"].(string)
	}
	if text == "" {
		t.Error("no content")
	}
	if fr := evs[5]["choices"].([]any)[0].(map[string]any)["finish_reason"]; fr != "length" {
		t.Errorf("finish_reason %v", fr)
	}
	if u := evs[6]["usage"].(map[string]any); u["completion_tokens"].(float64) != 5 || u["prompt_tokens"].(float64) < 5 {
		t.Errorf("usage %v", u)
	}
	// Deterministic: the same request gives the same text, non-streamed too.
	r2 := post(t, hs.URL+"/v1/chat/completions", strings.Replace(chatBody, `"stream": true`, `"stream": false`, 1))
	defer r2.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	json.NewDecoder(r2.Body).Decode(&out)
	if len(out.Choices) != 1 || out.Choices[0].Message.Content != text {
		t.Errorf("non-streamed %+v, streamed %q", out, text)
	}
}

func TestChatWithoutTemplate400CompletionsWork(t *testing.T) {
	l := genRepo(t, sample.Options{NoLoRA: true})
	if err := l.MutateJSON("model/tokenizer_config.json", func(d map[string]any) error { delete(d, "chat_template"); return nil }); err != nil {
		t.Fatal(err)
	}
	_, hs := newTestServer(t, l, ServerOptions{})
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "chat template") {
		t.Errorf("chat without template: %d %s", resp.StatusCode, b)
	}
	resp = post(t, hs.URL+"/v1/completions", `{"model": "llama-demo", "prompt": "A lifeboat is", "max_tokens": 3, "stream": true}`)
	evs, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	if !done || len(evs) != 3 {
		t.Errorf("completions: done %v, %d events", done, len(evs))
	}
	// /tokenize with messages fails the same way; with a prompt it counts BOS + tokens.
	resp = post(t, hs.URL+"/tokenize", `{"messages": [{"role": "user", "content": "hi"}]}`)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("/tokenize messages without template: %d", resp.StatusCode)
	}
	resp = post(t, hs.URL+"/tokenize", `{"prompt": "A lifeboat"}`)
	var tk struct {
		Count  int   `json:"count"`
		Tokens []int `json:"tokens"`
	}
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	if tk.Count < 2 || tk.Tokens[0] != 448 {
		t.Errorf("/tokenize = %+v, want BOS 448 first", tk)
	}
}

func TestBrokenTemplate400(t *testing.T) {
	l := genRepo(t, sample.Options{NoLoRA: true})
	os.WriteFile(l.Path("model/chat_template.jinja"), []byte("{% for m in messages %}{{ m.content }"), 0o644)
	_, hs := newTestServer(t, l, ServerOptions{})
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("broken chat_template.jinja (wins over tokenizer_config.json): %d", resp.StatusCode)
	}
}

func TestUnknownModel404(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{NoLoRA: true}), ServerOptions{})
	resp := post(t, hs.URL+"/v1/completions", `{"model": "nope", "prompt": "x"}`)
	var e struct {
		Error apiError `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != 404 || e.Error.Code != 404 || e.Error.Type != "NotFoundError" || !strings.Contains(e.Error.Message, "`nope` does not exist") {
		t.Errorf("%d %+v", resp.StatusCode, e)
	}
}

// metricValue finds the first sample line starting with name (and containing sub) and returns its value.
func metricValue(t *testing.T, body, name, sub string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, sub) {
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("bad sample %q", line)
			}
			return f
		}
	}
	t.Fatalf("metric %s{%s} not found in\n%s", name, sub, body)
	return 0
}

func checkExposition(t *testing.T, body string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || !strings.HasPrefix(line, "vllm:") || (!strings.Contains(line[:i], `engine="0"`) && !strings.HasPrefix(line, "vllm:lora_requests_info{")) {
			t.Errorf("bad line %q", line)
			continue
		}
		if _, err := strconv.ParseFloat(line[i+1:], 64); err != nil {
			t.Errorf("bad value in %q", line)
		}
	}
}

func TestMetricsCountersRise(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{}), ServerOptions{})
	_, before := getBody(t, hs.URL+"/metrics")
	checkExposition(t, before)
	if v := metricValue(t, before, "vllm:cache_config_info", "num_gpu_blocks"); v != 1 {
		t.Errorf("cache_config_info = %v", v)
	}
	if !strings.Contains(before, `num_gpu_blocks="4096"`) || !strings.Contains(before, "vllm:lora_requests_info{") {
		t.Error("cache_config_info labels or lora_requests_info missing")
	}
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody)
	sseEvents(t, resp.Body)
	resp.Body.Close()
	_, after := getBody(t, hs.URL+"/metrics")
	checkExposition(t, after)
	for _, c := range []struct{ name, sub string }{
		{"vllm:request_success_total", `finished_reason="length"`},
		{"vllm:prompt_tokens_total", `model_name="llama-demo"`},
		{"vllm:generation_tokens_total", ""},
		{"vllm:time_to_first_token_seconds_count", ""},
		{"vllm:e2e_request_latency_seconds_count", ""},
		{"vllm:request_queue_time_seconds_count", ""},
		{"vllm:request_prefill_time_seconds_count", ""},
		{"vllm:inter_token_latency_seconds_count", ""},
	} {
		if b, a := metricValue(t, before, c.name, c.sub), metricValue(t, after, c.name, c.sub); a <= b {
			t.Errorf("%s did not rise: %v → %v", c.name, b, a)
		}
	}
}

func TestSaturationShowsWaiting(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{NoLoRA: true}), ServerOptions{Saturate: true})
	_, body := getBody(t, hs.URL+"/metrics")
	if w := metricValue(t, body, "vllm:num_requests_waiting", ""); w <= 0 {
		t.Errorf("waiting = %v", w)
	}
	if kv := metricValue(t, body, "vllm:kv_cache_usage_perc", ""); kv < 0.9 {
		t.Errorf("kv usage = %v", kv)
	}
}

// A real queue: one sequence slot, a long-running request, a second waits.
func TestQueueWaiting(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{NoLoRA: true}), ServerOptions{MaxNumSeqs: 1, InterTokenDelay: 20 * time.Millisecond})
	body := `{"prompt": "A lifeboat", "max_tokens": 40, "stream": true}`
	for range 2 {
		go func() {
			resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, m := getBody(t, hs.URL+"/metrics")
		if metricValue(t, m, "vllm:num_requests_waiting", "") >= 1 && metricValue(t, m, "vllm:num_requests_running", "") == 1 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("never saw 1 running and 1 waiting")
}

func TestEngineDead(t *testing.T) {
	_, hs := newTestServer(t, genRepo(t, sample.Options{NoLoRA: true}), ServerOptions{EngineDeadAfter: 1})
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody)
	_, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	if !done {
		t.Fatal("first request should succeed")
	}
	resp = post(t, hs.URL+"/v1/chat/completions", chatBody)
	evs, done := sseEvents(t, resp.Body)
	resp.Body.Close()
	if done || len(evs) != 1 || evs[0]["error"] == nil {
		t.Errorf("after death: done %v, events %v", done, evs)
	}
	if code, _ := getBody(t, hs.URL+"/health"); code != 503 {
		t.Errorf("/health = %d, want 503", code)
	}
}

func TestRuntimeLoRA(t *testing.T) {
	l := genRepo(t, sample.Options{})
	_, off := newTestServer(t, l, ServerOptions{})
	if resp := post(t, off.URL+"/v1/load_lora_adapter", `{}`); resp.StatusCode != 404 && resp.StatusCode != 405 {
		t.Errorf("without VLLM_ALLOW_RUNTIME_LORA_UPDATING: %d", resp.StatusCode)
	}
	_, hs := newTestServer(t, l, ServerOptions{AllowRuntimeLoRA: true})
	dir := l.Path("model/loras/" + sample.LoRAName)
	if resp := post(t, hs.URL+"/v1/load_lora_adapter", `{"lora_name": "two", "lora_path": "`+dir+`"}`); resp.StatusCode != 200 {
		t.Errorf("load: %d", resp.StatusCode)
	}
	if resp := post(t, hs.URL+"/v1/load_lora_adapter", `{"lora_name": "three", "lora_path": "/nonexistent"}`); resp.StatusCode != 400 {
		t.Errorf("load missing: %d", resp.StatusCode)
	}
	if _, body := getBody(t, hs.URL+"/v1/models"); !strings.Contains(body, `"id":"two"`) {
		t.Errorf("models after load: %s", body)
	}
	resp := post(t, hs.URL+"/v1/completions", `{"model": "two", "prompt": "x", "max_tokens": 2}`)
	if resp.StatusCode != 200 {
		t.Errorf("completion on runtime adapter: %d", resp.StatusCode)
	}
}

func TestCrashAfter(t *testing.T) {
	l := genRepo(t, sample.Options{NoLoRA: true})
	m, err := Load(context.Background(), l.ModelDir, l.EngineFile, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(m, ServerOptions{CrashAfter: 2, InterTokenDelay: time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), ln, s) }()
	url := "http://" + ln.Addr().String()
	for i := range 2 {
		resp := post(t, url+"/v1/completions", `{"prompt": "x", "max_tokens": 2}`)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrCrashed) {
			t.Errorf("Serve = %v, want ErrCrashed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the crash point")
	}
	if _, err := http.Get(url + "/health"); err == nil {
		t.Error("still serving after the crash")
	}
}
