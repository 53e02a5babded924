package enginesim

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lifeboat/internal/base/wait"
)

// Version is what /version reports.
const Version = "0.11.0-lifeboat-sim"

// ServerOptions are the latency model and the fault flags.
type ServerOptions struct {
	PrefillRate      float64       // prompt tokens per second (default 4000)
	InterTokenDelay  time.Duration // between output tokens (default 5ms)
	MaxNumSeqs       int           // concurrent sequences (default 8)
	NumGPUBlocks     int           // KV cache blocks (default 4096)
	BlockSize        int           // tokens per block (default 16)
	DefaultMaxTokens int           // when a request sets none (default 16)

	CrashAfter      int           // > 0: after this many generation requests, Crashed() closes
	EngineDeadAfter int           // > 0: after this many generation requests, the engine is dead
	Saturate        bool          // phantom queue: waiting stays high, KV usage near 1, extra queue wait
	SaturateWait    time.Duration // queue wait added to each request when saturated (default 2s)

	AllowRuntimeLoRA bool // VLLM_ALLOW_RUNTIME_LORA_UPDATING

	// APIKey is vLLM's --api-key (or VLLM_API_KEY): every route but the public ones (/health,
	// /ping, /load, /version, /metrics) answers 401 {"error": "Unauthorized"} without
	// "Authorization: Bearer APIKEY", as vLLM's AuthenticationMiddleware does.
	APIKey string
	// EnableSleepMode serves vLLM's sleep mode: POST /sleep, POST /wake_up, GET /is_sleeping.
	EnableSleepMode bool
	// WakeBroken: fault: after POST /wake_up the engine cannot generate (an error frame on every
	// request) while /health still answers 200 — weights that did not come back.
	WakeBroken bool
	// FailRate: fault: this share of generation requests fails with HTTP 500, drawn from a
	// generator seeded with Seed (the same seed, the same failures, in request order).
	FailRate float64
	Seed     uint64
	// HoldWaiting: fault: this many phantom requests wait in the queue from the start; the first
	// generation request waits HoldWait behind them, and then they are gone (a queue that has
	// drained by the time a request that waited in it is done).
	HoldWaiting int
	HoldWait    time.Duration
}

func (o *ServerOptions) defaults() {
	if o.PrefillRate <= 0 {
		o.PrefillRate = 4000
	}
	if o.InterTokenDelay < 0 {
		o.InterTokenDelay = 0
	}
	if o.MaxNumSeqs <= 0 {
		o.MaxNumSeqs = 8
	}
	if o.NumGPUBlocks <= 0 {
		o.NumGPUBlocks = 4096
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 16
	}
	if o.DefaultMaxTokens <= 0 {
		o.DefaultMaxTokens = 16
	}
	if o.SaturateWait <= 0 {
		o.SaturateWait = 2 * time.Second
	}
	if o.HoldWait <= 0 {
		o.HoldWait = time.Second
	}
}

// saturatedWaiting is the phantom queue length --sim-saturate reports.
const saturatedWaiting = 64

// Server serves vLLM's OpenAI-compatible API for a loaded Model.
type Server struct {
	m   *Model
	o   ServerOptions
	mux *http.ServeMux

	slots    chan struct{}
	requests atomic.Int64 // generation requests admitted
	dead     atomic.Bool
	crashed  chan struct{}
	crashOne sync.Once

	mu          sync.Mutex
	loras       []LoRA
	running     int
	waiting     int
	kvTokens    int // tokens held by running sequences
	loraRunning map[string]int
	met         metrics

	sleepLevel atomic.Int32 // 0 awake, 1 weights offloaded, 2 all discarded
	broken     atomic.Bool  // woken with --sim-wake-broken
	held       atomic.Int64 // phantom waiting requests (--sim-hold-waiting)
	failMu     sync.Mutex
	failRNG    *rand.Rand
}

// NewServer builds the server for m.
func NewServer(m *Model, o ServerOptions) *Server {
	o.defaults()
	s := &Server{m: m, o: o, mux: http.NewServeMux(), slots: make(chan struct{}, o.MaxNumSeqs), crashed: make(chan struct{})}
	s.loras = append(s.loras, m.LoRAs...)
	s.loraRunning = map[string]int{}
	s.met.init()
	s.held.Store(int64(o.HoldWaiting))
	s.failRNG = rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /ping", s.health)
	s.mux.HandleFunc("POST /ping", s.health)
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]string{"version": Version})
	})
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, true) })
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, false) })
	if o.AllowRuntimeLoRA {
		s.mux.HandleFunc("POST /v1/load_lora_adapter", s.loadLoRA)
		s.mux.HandleFunc("POST /v1/unload_lora_adapter", s.unloadLoRA)
	}
	if o.EnableSleepMode {
		s.mux.HandleFunc("POST /sleep", s.sleep)
		s.mux.HandleFunc("POST /wake_up", s.wakeUp)
		s.mux.HandleFunc("GET /is_sleeping", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]bool{"is_sleeping": s.sleepLevel.Load() > 0})
		})
	}
	return s
}

// publicPaths are the routes vLLM's AuthenticationMiddleware leaves open with --api-key
// (vllm/entrypoints/serve/middleware/authenticate.py, PUBLIC_ENDPOINTS); every other route is
// guarded. Older vLLMs guarded only /v1/…: a probe that sends its token everywhere passes both.
var publicPaths = []string{"/health", "/ping", "/load", "/version", "/metrics"}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.o.APIKey != "" && r.Method != http.MethodOptions && !public(r.URL.Path) && !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	s.mux.ServeHTTP(w, r)
}

func public(path string) bool {
	for _, p := range publicPaths {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// authorized compares the bearer token as vLLM does: scheme "bearer" in any case, the token's
// SHA-256 compared in constant time.
func (s *Server) authorized(r *http.Request) bool {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return false
	}
	a, b := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(s.o.APIKey))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// sleep is vLLM's POST /sleep?level=1|2: the engine offloads (1) or discards (2) its weights
// and serves no generation until POST /wake_up.
func (s *Server) sleep(w http.ResponseWriter, r *http.Request) {
	level := int32(1)
	if r.URL.Query().Get("level") == "2" {
		level = 2
	}
	s.sleepLevel.Store(level)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) wakeUp(w http.ResponseWriter, _ *http.Request) {
	if s.sleepLevel.Swap(0) > 0 && s.o.WakeBroken {
		s.broken.Store(true)
	}
	w.WriteHeader(http.StatusOK)
}

// failNext draws whether the next generation request fails (--sim-fail-rate).
func (s *Server) failNext() bool {
	if s.o.FailRate <= 0 {
		return false
	}
	s.failMu.Lock()
	defer s.failMu.Unlock()
	return s.failRNG.Float64() < s.o.FailRate
}

// Crashed is closed when --sim-crash-after is reached; the process should exit non-zero.
func (s *Server) Crashed() <-chan struct{} { return s.crashed }

// Dead reports whether the simulated engine has died.
func (s *Server) Dead() bool { return s.dead.Load() }

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if s.dead.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func errType(code int) string {
	switch code {
	case 400:
		return "BadRequestError"
	case 404:
		return "NotFoundError"
	case 503:
		return "ServiceUnavailableError"
	default:
		return "InternalServerError"
	}
}

// writeError writes vLLM's error JSON.
func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, map[string]apiError{"error": {Message: fmt.Sprintf(format, args...), Type: errType(code), Code: code}})
}

type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen *int64  `json:"max_model_len"`
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	now := time.Now().Unix()
	var cards []modelCard
	for _, n := range s.m.ServedNames {
		ml := s.m.MaxModelLen
		cards = append(cards, modelCard{ID: n, Object: "model", Created: now, OwnedBy: "vllm", Root: s.m.Dir, MaxModelLen: &ml})
	}
	s.mu.Lock()
	for _, l := range s.loras {
		base := l.Base
		cards = append(cards, modelCard{ID: l.Name, Object: "model", Created: now, OwnedBy: "vllm", Root: l.Path, Parent: &base})
	}
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"object": "list", "data": cards})
}

// knownModel reports whether name is a served name or a loaded adapter ("" means the first).
func (s *Server) knownModel(name string) bool {
	if name == "" {
		return true
	}
	for _, n := range s.m.ServedNames {
		if n == name {
			return true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.loras {
		if l.Name == name {
			return true
		}
	}
	return false
}

func (s *Server) loadLoRA(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
		Path string `json:"lora_path"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.Name == "" || req.Path == "" {
		writeError(w, 400, "Both 'lora_name' and 'lora_path' must be provided.")
		return
	}
	if s.knownModel(req.Name) {
		writeError(w, 400, "The lora adapter '%s' has already been loaded.", req.Name)
		return
	}
	l, err := s.m.checkAdapter(req.Name, s.m.resolve(req.Path), s.m.ServedNames[0])
	if err != nil {
		writeError(w, 400, "%v", err)
		return
	}
	s.mu.Lock()
	s.loras = append(s.loras, l)
	s.mu.Unlock()
	w.WriteHeader(200)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

func (s *Server) unloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"lora_name"`
	}
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.loras {
		if l.Name == req.Name {
			s.loras = append(s.loras[:i], s.loras[i+1:]...)
			w.WriteHeader(200)
			fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
			return
		}
	}
	writeError(w, 404, "The lora adapter '%s' cannot be found.", req.Name)
}

// request is the union of the chat and completion request fields the simulator reads.
type request struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	Tools               json.RawMessage `json:"tools"`
}

// promptIDs tokenizes the request: chat messages through the chat template, or the prompt.
func (s *Server) promptIDs(ctx context.Context, req *request, chat bool) ([]int, int, error) {
	if chat {
		if s.m.ChatTemplate == nil {
			//lint:ignore ST1005 vLLM's own 400 message, verbatim: the prober is tested against what a real engine answers
			return nil, 400, fmt.Errorf("As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.")
		}
		agp := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		text, err := renderChat(ctx, *s.m.ChatTemplate, req.Messages, req.Tools, agp, s.m.BOSToken, s.m.EOSToken)
		if err != nil {
			return nil, 400, err
		}
		ids, err := s.m.Tokenizer.Encode(text, false)
		if err != nil {
			return nil, 400, err
		}
		return ids, 0, nil
	}
	var prompt string
	if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
		var ids []int
		if err2 := json.Unmarshal(req.Prompt, &ids); err2 == nil && len(ids) > 0 {
			return ids, 0, nil
		}
		var list []string
		if err3 := json.Unmarshal(req.Prompt, &list); err3 != nil || len(list) != 1 {
			return nil, 400, fmt.Errorf("prompt must be a string, a list of one string or a list of token ids")
		}
		prompt = list[0]
	}
	add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	ids, err := s.m.Tokenizer.Encode(prompt, add)
	if err != nil {
		return nil, 400, err
	}
	return ids, 0, nil
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		writeError(w, 400, "invalid request: %v", err)
		return
	}
	if !s.knownModel(req.Model) {
		writeError(w, 404, "The model `%s` does not exist.", req.Model)
		return
	}
	ids, code, err := s.promptIDs(r.Context(), &req, req.Messages != nil)
	if err != nil {
		writeError(w, code, "%v", err)
		return
	}
	writeJSON(w, 200, map[string]any{"count": len(ids), "max_model_len": s.m.MaxModelLen, "tokens": ids, "token_strs": nil})
}

// admit waits for a sequence slot: the waiting queue.
func (s *Server) admit(ctx context.Context, kv int) (time.Duration, error) {
	start := time.Now()
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	var err error
	if s.o.Saturate {
		err = wait.Sleep(ctx, s.o.SaturateWait)
	}
	if err == nil && s.held.Load() > 0 {
		// behind the phantom queue, which has drained once this request is through it
		if err = wait.Sleep(ctx, s.o.HoldWait); err == nil {
			s.held.Store(0)
		}
	}
	if err == nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	s.mu.Lock()
	s.waiting--
	if err == nil {
		s.running++
		s.kvTokens += kv
	}
	s.mu.Unlock()
	return time.Since(start), err
}

func (s *Server) release(kv int) {
	s.mu.Lock()
	s.running--
	s.kvTokens -= kv
	s.mu.Unlock()
	<-s.slots
}

// outputTokens derives the completion deterministically from the model name and the prompt.
func (s *Server) outputTokens(model string, prompt []int, n int) []int {
	h := sha256.New()
	h.Write([]byte(model))
	var b [4]byte
	for _, id := range prompt {
		binary.LittleEndian.PutUint32(b[:], uint32(id))
		h.Write(b[:])
	}
	sum := h.Sum(nil)
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
	out := make([]int, n)
	for i := range out {
		out[i] = s.m.outputIDs[rng.IntN(len(s.m.outputIDs))]
	}
	return out
}

// completion is one admitted generation request and what its reply needs.
type completion struct {
	chat         bool
	model, id    string
	object       string // of the whole reply ("chat.completion", "text_completion")
	created      int64
	prompt, out  []int
	maxTokens    int
	start        time.Time
	includeUsage bool
	stream       bool
	usage        map[string]int
}

// generate serves /v1/completions and /v1/chat/completions: validate and tokenize, count the
// request against the fault-injection thresholds, queue for KV-cache room, prefill, then reply
// whole or streamed with the inter-token latency.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	c, ok := s.parseGeneration(w, r, chat)
	if !ok {
		return
	}
	n := s.requests.Add(1)
	if s.o.EngineDeadAfter > 0 && n > int64(s.o.EngineDeadAfter) {
		s.dead.Store(true)
	}
	if s.dead.Load() {
		s.engineDeadReply(w, c.stream)
		return
	}
	if s.sleepLevel.Load() > 0 {
		writeError(w, http.StatusServiceUnavailable, "The engine is sleeping (POST /wake_up wakes it).")
		return
	}
	if s.broken.Load() {
		s.brokenReply(w, c.stream)
		return
	}
	if s.failNext() {
		writeError(w, http.StatusInternalServerError, "engine-sim: simulated request failure (--sim-fail-rate %g)", s.o.FailRate)
		return
	}
	defer func() {
		if s.o.CrashAfter > 0 && n >= int64(s.o.CrashAfter) {
			// The crash comes after this answer: send it before Serve drops the connections,
			// or the last request counted would see a reset instead of its reply.
			_ = http.NewResponseController(w).Flush()
			s.crashOne.Do(func() { close(s.crashed) })
		}
	}()
	ctx := r.Context()
	c.start = time.Now()
	kv := len(c.prompt) + c.maxTokens
	queued, err := s.admit(ctx, kv)
	if err != nil {
		return // client went away while queued
	}
	defer s.release(kv)
	defer s.countLoRA(c.model)()
	s.met.observeQueue(queued)
	prefill := time.Duration(float64(len(c.prompt)) / s.o.PrefillRate * float64(time.Second))
	if err := wait.Sleep(ctx, prefill); err != nil {
		return
	}
	s.met.observePrefill(prefill)
	s.fillCompletion(c, n)
	if c.stream {
		s.replyStream(ctx, w, c)
	} else {
		s.replyWhole(ctx, w, c)
	}
}

// parseGeneration decodes and validates a generation request and tokenizes its prompt; on a bad
// request it writes the error reply and returns false.
func (s *Server) parseGeneration(w http.ResponseWriter, r *http.Request, chat bool) (*completion, bool) {
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		writeError(w, 400, "invalid request: %v", err)
		return nil, false
	}
	switch {
	case !s.knownModel(req.Model):
		writeError(w, 404, "The model `%s` does not exist.", req.Model)
		return nil, false
	case chat && len(req.Messages) == 0:
		writeError(w, 400, "messages: field required")
		return nil, false
	case !chat && len(req.Prompt) == 0:
		writeError(w, 400, "prompt: field required")
		return nil, false
	}
	c := &completion{chat: chat, model: req.Model, stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if c.model == "" {
		c.model = s.m.ServedNames[0]
	}
	prompt, code, err := s.promptIDs(r.Context(), &req, chat)
	if err != nil {
		writeError(w, code, "%v", err)
		return nil, false
	}
	c.prompt = prompt
	c.maxTokens = s.o.DefaultMaxTokens
	if req.MaxCompletionTokens != nil {
		c.maxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		c.maxTokens = *req.MaxTokens
	}
	if c.maxTokens < 1 {
		writeError(w, 400, "max_tokens must be at least 1, got %d.", c.maxTokens)
		return nil, false
	}
	if int64(len(prompt)+c.maxTokens) > s.m.MaxModelLen {
		writeError(w, 400, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", s.m.MaxModelLen, len(prompt)+c.maxTokens, len(prompt), c.maxTokens)
		return nil, false
	}
	return c, true
}

// countLoRA counts a running request against its LoRA adapter (for vllm:lora_requests_info) and
// returns the function that uncounts it.
func (s *Server) countLoRA(model string) func() {
	if !s.isLoRA(model) {
		return func() {}
	}
	s.mu.Lock()
	s.loraRunning[model]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.loraRunning[model]--
		s.mu.Unlock()
	}
}

// fillCompletion draws the output tokens and sets the reply's id, timestamps and usage.
func (s *Server) fillCompletion(c *completion, n int64) {
	c.out = s.outputTokens(c.model, c.prompt, c.maxTokens)
	c.id = fmt.Sprintf("%s-%x", map[bool]string{true: "chatcmpl", false: "cmpl"}[c.chat], sha256.Sum256([]byte(fmt.Sprint(n, c.start.UnixNano()))))[:40]
	c.created = c.start.Unix()
	c.usage = map[string]int{"prompt_tokens": len(c.prompt), "completion_tokens": len(c.out), "total_tokens": len(c.prompt) + len(c.out)}
	c.object = "text_completion"
	if c.chat {
		c.object = "chat.completion"
	}
}

// replyWhole waits out the decode time and writes one JSON reply.
func (s *Server) replyWhole(ctx context.Context, w http.ResponseWriter, c *completion) {
	ttft := time.Since(c.start)
	for i := 1; i < len(c.out); i++ {
		if err := wait.Sleep(ctx, s.o.InterTokenDelay); err != nil {
			return
		}
	}
	text := s.m.Tokenizer.Decode(c.out, true)
	var choice map[string]any
	if c.chat {
		choice = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text, "tool_calls": []any{}}, "logprobs": nil, "finish_reason": "length", "stop_reason": nil}
	} else {
		choice = map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": "length", "stop_reason": nil}
	}
	s.met.finish(len(c.prompt), len(c.out), "length", ttft, time.Since(c.start))
	writeJSON(w, 200, map[string]any{"id": c.id, "object": c.object, "created": c.created, "model": c.model, "choices": []any{choice}, "usage": c.usage})
}

// sseWriter writes server-sent events: "data: {json}\n\n", flushed one by one.
type sseWriter struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func (e sseWriter) send(v any) bool {
	b, _ := json.Marshal(v)
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return false
	}
	if e.fl != nil {
		e.fl.Flush()
	}
	return true
}

// replyStream streams the reply token by token (a role-only first chunk for chats, an optional
// usage chunk, then [DONE]); an engine death mid-stream ends it with an error frame.
func (s *Server) replyStream(ctx context.Context, w http.ResponseWriter, c *completion) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	fl, _ := w.(http.Flusher)
	ev := sseWriter{w: w, fl: fl}
	chunkObj := "text_completion"
	if c.chat {
		chunkObj = "chat.completion.chunk"
		if !ev.send(map[string]any{"id": c.id, "object": chunkObj, "created": c.created, "model": c.model, "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}}}) {
			return
		}
	}
	var ttft time.Duration
	for i, tok := range c.out {
		if i > 0 {
			if err := wait.Sleep(ctx, s.o.InterTokenDelay); err != nil {
				return
			}
		}
		if s.dead.Load() {
			ev.send(engineDeadFrame())
			return
		}
		if i == 0 {
			ttft = time.Since(c.start)
		}
		if !ev.send(map[string]any{"id": c.id, "object": chunkObj, "created": c.created, "model": c.model, "choices": []any{s.streamChoice(c, i, tok)}}) {
			return
		}
	}
	if c.includeUsage {
		ev.send(map[string]any{"id": c.id, "object": chunkObj, "created": c.created, "model": c.model, "choices": []any{}, "usage": c.usage})
	}
	s.met.finish(len(c.prompt), len(c.out), "length", ttft, time.Since(c.start))
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// streamChoice is the choice of the i-th streamed token (the last carries finish_reason).
func (s *Server) streamChoice(c *completion, i, tok int) map[string]any {
	text := s.m.Tokenizer.Decode([]int{tok}, true)
	var finish any
	if i == len(c.out)-1 {
		finish = "length"
	}
	if c.chat {
		return map[string]any{"index": 0, "delta": map[string]any{"content": text}, "logprobs": nil, "finish_reason": finish}
	}
	return map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": finish, "stop_reason": nil}
}

func engineDeadFrame() map[string]apiError {
	return map[string]apiError{"error": {Message: "EngineCore encountered an issue. See stack trace (above) for the root cause.", Type: "EngineDeadError", Code: 500}}
}

// brokenReply is a woken engine whose weights did not come back: an error frame, /health 200.
func (s *Server) brokenReply(w http.ResponseWriter, stream bool) {
	frame := map[string]apiError{"error": {Message: "CUDA error: an illegal memory access was encountered", Type: "InternalServerError", Code: 500}}
	if !stream {
		writeJSON(w, 500, frame)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	b, _ := json.Marshal(frame)
	fmt.Fprintf(w, "data: %s\n\n", b)
}

func (s *Server) engineDeadReply(w http.ResponseWriter, stream bool) {
	if !stream {
		writeJSON(w, 500, engineDeadFrame())
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	b, _ := json.Marshal(engineDeadFrame())
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// snapshot returns the scheduler gauges.
func (s *Server) snapshot() (running, waiting int, kvUsage float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	running, waiting = s.running, s.waiting+int(s.held.Load())
	kvUsage = float64(s.kvTokens) / float64(s.o.NumGPUBlocks*s.o.BlockSize)
	if s.o.Saturate {
		waiting += saturatedWaiting
		kvUsage = max(kvUsage, 0.99)
	}
	return running, waiting, min(kvUsage, 1)
}

// runningLoRAs lists the adapters of running requests, comma-separated as vLLM's info gauge does.
func (s *Server) runningLoRAs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n, c := range s.loraRunning {
		if c > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func (s *Server) isLoRA(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.loras {
		if l.Name == name {
			return true
		}
	}
	return false
}
