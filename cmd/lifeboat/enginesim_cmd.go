package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/internal/enginesim"
)

// engineSimCmd is `lifeboat engine-sim MODEL_DIR --config FILE --port N`: a vLLM-compatible
// engine simulator started exactly like `vllm serve`.
func (a *app) engineSimCmd() *cobra.Command {
	var (
		configPath string
		host       string
		port       int
		lo         enginesim.Options
		so         enginesim.ServerOptions
	)
	cmd := &cobra.Command{
		Use:   "engine-sim MODEL_DIR --config FILE --port N",
		Short: "Run a vLLM-compatible engine simulator over a model directory (no GPU needed)",
		Example: `  lifeboat engine-sim ./restored/model --config ./restored/engine/engine.yaml --port 8000
  lifeboat probe http://127.0.0.1:8000 --served-model-name llama-demo`,
		Long: `engine-sim is started like "vllm serve": the model directory as the argument, the
engine config YAML with --config, the port with --port. It loads the model directory the way vLLM
does (config.json, tokenizer.json, every shard header and all weight bytes, quantization, context
length, static LoRA adapters) and exits non-zero with a vLLM-like message where vLLM would fail.
Only then does it listen, serving /health, /ping, /version, /v1/models, /v1/chat/completions,
/v1/completions (SSE streaming as vLLM), /tokenize, /metrics and, with
VLLM_ALLOW_RUNTIME_LORA_UPDATING=true, /v1/load_lora_adapter.

With --api-key KEY or VLLM_API_KEY (vLLM's own), every route but /health, /ping, /load,
/version and /metrics answers 401 {"error": "Unauthorized"} without "Authorization: Bearer KEY".
With --enable-sleep-mode it serves vLLM's POST /sleep?level=1|2, POST /wake_up and
GET /is_sleeping; vllm:engine_sleep_state says which state it is in.

Latency model: TTFT = queue wait + prompt tokens / --sim-prefill-rate; --sim-itl between tokens;
at most --sim-max-num-seqs sequences run at once, the rest wait (vllm:num_requests_waiting).
Fault flags: --sim-load-delay, --sim-crash-after, --sim-engine-dead-after, --sim-saturate,
--sim-fail-rate (with --sim-seed), --sim-hold-waiting, --sim-wake-broken.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if port < 0 || port > 65535 {
				return usageErr("--port %d is not a port number", port)
			}
			if configPath != "" {
				if _, err := os.Stat(configPath); err != nil {
					return usageErr("--config: %v", err)
				}
			}
			so.AllowRuntimeLoRA = envTrue(os.Getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING"))
			if so.APIKey == "" {
				so.APIKey = os.Getenv("VLLM_API_KEY") // as vLLM: the flag, else the variable
			}
			if so.FailRate < 0 || so.FailRate > 1 {
				return usageErr("--sim-fail-rate %g: want a share in [0, 1]", so.FailRate)
			}
			if so.HoldWaiting < 0 {
				return usageErr("--sim-hold-waiting %d: want 0 or more", so.HoldWaiting)
			}
			start := time.Now()
			fmt.Fprintf(a.stderr, "INFO engine-sim: loading %s\n", args[0])
			m, err := enginesim.Load(ctx, args[0], configPath, lo)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err() // interrupted while loading: 130
				}
				return withCode(exitProblem, err)
			}
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return withCode(exitProblem, fmt.Errorf("OSError: [Errno 98] error while attempting to bind on address: %v", err))
			}
			fmt.Fprintf(a.stderr, "INFO engine-sim: loaded %d shard(s), %d weight bytes in %s; serving %s on http://%s\n",
				len(m.Shards), m.WeightBytes, time.Since(start).Round(time.Millisecond), strings.Join(m.ServedNames, ", "), ln.Addr())
			err = enginesim.Serve(ctx, ln, enginesim.NewServer(m, so))
			if errors.Is(err, enginesim.ErrCrashed) {
				return withCode(exitProblem, err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "vLLM engine config YAML (long-form flag names as keys)")
	f.StringVar(&host, "host", "127.0.0.1", "address to listen on")
	f.IntVar(&port, "port", 8000, "port to listen on (0 picks a free one)")
	f.Float64Var(&so.PrefillRate, "sim-prefill-rate", 4000, "prompt tokens per second of prefill")
	f.DurationVar(&so.InterTokenDelay, "sim-itl", 5*time.Millisecond, "inter-token latency")
	f.IntVar(&so.MaxNumSeqs, "sim-max-num-seqs", 8, "sequences running at once; the rest wait")
	f.IntVar(&so.NumGPUBlocks, "sim-num-gpu-blocks", 4096, "KV cache blocks (vllm:cache_config_info num_gpu_blocks)")
	f.IntVar(&so.DefaultMaxTokens, "sim-default-max-tokens", 16, "output tokens when a request sets no max_tokens")
	f.DurationVar(&lo.LoadDelay, "sim-load-delay", 0, "fault: extra cold-start time before listening")
	f.IntVar(&so.CrashAfter, "sim-crash-after", 0, "fault: exit non-zero after N generation requests (0 = never)")
	f.IntVar(&so.EngineDeadAfter, "sim-engine-dead-after", 0, "fault: engine dies after N generation requests: /health 503, error frames (0 = never)")
	f.BoolVar(&so.Saturate, "sim-saturate", false, "fault: saturated engine: long waiting queue, KV cache usage near 1, slow admission")
	f.DurationVar(&so.SaturateWait, "sim-saturate-wait", 2*time.Second, "queue wait added to each request with --sim-saturate")
	f.StringVar(&so.APIKey, "api-key", "", "vLLM's --api-key: the bearer token every non-public route wants (default: $VLLM_API_KEY)")
	f.BoolVar(&so.EnableSleepMode, "enable-sleep-mode", false, "vLLM's sleep mode: POST /sleep, POST /wake_up, GET /is_sleeping")
	f.BoolVar(&so.WakeBroken, "sim-wake-broken", false, "fault: after POST /wake_up every generation fails with an error frame while /health stays 200")
	f.Float64Var(&so.FailRate, "sim-fail-rate", 0, "fault: this share (0..1) of generation requests fails with HTTP 500")
	f.Uint64Var(&so.Seed, "sim-seed", 1, "seed of --sim-fail-rate's draws (the same seed fails the same requests, in order)")
	f.IntVar(&so.HoldWaiting, "sim-hold-waiting", 0, "fault: this many phantom requests wait in the queue until the first generation request has waited --sim-hold-wait behind them")
	f.DurationVar(&so.HoldWait, "sim-hold-wait", time.Second, "how long the first request waits behind --sim-hold-waiting")
	return cmd
}

// envTrue reads a vLLM boolean environment variable ("1", "true", "True").
func envTrue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}
