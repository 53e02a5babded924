package enginesim

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

var latencyBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

func (h *histogram) observe(v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(latencyBuckets))
	}
	for i, b := range latencyBuckets {
		if v <= b {
			h.counts[i]++
			break
		}
	}
	h.sum += v
	h.n++
}

type metrics struct {
	mu            sync.Mutex
	promptTokens  uint64
	genTokens     uint64
	success       map[string]uint64
	ttft, e2e, qt histogram
	itl, prefill  histogram
}

func (m *metrics) init() {
	m.success = map[string]uint64{"stop": 0, "length": 0, "abort": 0}
}

func (m *metrics) observeQueue(d time.Duration) {
	m.mu.Lock()
	m.qt.observe(d.Seconds())
	m.mu.Unlock()
}

func (m *metrics) observePrefill(d time.Duration) {
	m.mu.Lock()
	m.prefill.observe(d.Seconds())
	m.mu.Unlock()
}

func (m *metrics) finish(prompt, gen int, reason string, ttft, e2e time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.promptTokens += uint64(prompt)
	m.genTokens += uint64(gen)
	m.success[reason]++
	m.ttft.observe(ttft.Seconds())
	m.e2e.observe(e2e.Seconds())
	// vLLM observes every gap between output tokens; the simulator's gaps are equal, so the
	// mean gap is observed once per gap.
	if gen > 1 {
		gap := (e2e - ttft).Seconds() / float64(gen-1)
		for range gen - 1 {
			m.itl.observe(gap)
		}
	}
}

func promLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	var b strings.Builder
	lbl := fmt.Sprintf(`engine="0",model_name="%s"`, promLabel(s.m.ServedNames[0]))
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %g\n", name, help, name, name, lbl, v)
	}
	running, waiting, kv := s.snapshot()
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(running))
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(waiting))
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kv)
	// vLLM's gauge (vllm/v1/metrics/loggers.py): one series per sleep_state, the current one 1.
	fmt.Fprintf(&b, "# HELP vllm:engine_sleep_state Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.\n# TYPE vllm:engine_sleep_state gauge\n")
	level := s.sleepLevel.Load()
	for i, st := range []string{"awake", "weights_offloaded", "discard_all"} {
		v := 0
		if int32(i) == level {
			v = 1
		}
		fmt.Fprintf(&b, "vllm:engine_sleep_state{%s,sleep_state=\"%s\"} %d\n", lbl, st, v)
	}

	m := &s.met
	m.mu.Lock()
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %d\n", name, help, name, name, lbl, v)
	}
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", m.promptTokens)
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", m.genTokens)
	counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", 0)
	counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", m.promptTokens)
	counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", 0)
	fmt.Fprintf(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	reasons := make([]string, 0, len(m.success))
	for r := range m.success {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(&b, "vllm:request_success_total{%s,finished_reason=\"%s\"} %d\n", lbl, r, m.success[r])
	}
	hist := func(name, help string, h *histogram) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
		var cum uint64
		for i, le := range latencyBuckets {
			if h.counts != nil {
				cum += h.counts[i]
			}
			fmt.Fprintf(&b, "%s_bucket{%s,le=\"%g\"} %d\n", name, lbl, le, cum)
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %g\n%s_count{%s} %d\n", name, lbl, h.n, name, lbl, h.sum, name, lbl, h.n)
	}
	hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &m.ttft)
	hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &m.e2e)
	hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", &m.qt)
	hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", &m.prefill)
	hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &m.itl)
	m.mu.Unlock()

	fmt.Fprintf(&b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n")
	prefix := "True"
	if s.m.Engine.Has("no-enable-prefix-caching") {
		prefix = "False"
	}
	fmt.Fprintf(&b, "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",enable_prefix_caching=\"%s\",engine=\"0\",gpu_memory_utilization=\"0.9\",num_cpu_blocks=\"0\",num_gpu_blocks=\"%d\"} 1\n", s.o.BlockSize, prefix, s.o.NumGPUBlocks)
	if s.m.Engine.EnableLoRA {
		fmt.Fprintf(&b, "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n")
		fmt.Fprintf(&b, "vllm:lora_requests_info{max_lora=\"%d\",running_lora_adapters=\"%s\",waiting_lora_adapters=\"\"} %d\n", s.m.Engine.MaxLoRAs, promLabel(s.runningLoRAs()), time.Now().Unix())
	}
	_, _ = w.Write([]byte(b.String()))
}
