package main

import (
	"fmt"
	"io"
	"lifeboat/verify/warm"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// probeCmd is `lifeboat probe URL --served-model-name NAME …`: is the vLLM replica at URL warm?
func (a *app) probeCmd() *cobra.Command {
	var (
		o      warm.ProbeOptions
		legacy []string // --model, the old name of --served-model-name
	)
	c := &cobra.Command{
		Use:   "probe URL --served-model-name NAME [--lora NAME]... [--ttft-budget 2s] [--timeout 10m] [-o text|json]",
		Short: "Decide, with evidence, whether a vLLM replica is warm",
		Long: `Probe follows vLLM's readiness contract against the OpenAI-compatible server at URL:

  listen      the port accepts connections (vLLM only listens once the engine is ready;
              refused means loading or dead). Polled with a backoff capped at 200 ms, so a
              replica that starts listening is seen within ~250 ms.
  health      GET /health is 200 (503: the engine died; a TLS failure is TLS_FAILED).
  awake       GET /is_sleeping and vllm:engine_sleep_state: an engine in vLLM's sleep mode
              is SLEEPING (the probe never wakes it).
  models      GET /v1/models lists every --served-model-name (vLLM's flag of that name) and
              every --lora as an adapter whose parent is one of them.
  generate    --requests (default 8) streamed /v1/chat/completions (/v1/completions with
              --completions-only), one after another, on the first --served-model-name, then one
              on each --lora: tokens arrive, [DONE] arrives, no error frame. Any failed request
              is not WARM; the result counts them (requests.sent, failed, failure_rate).
              TTFT is the median time to the first chunk with content; tokens/s the decode rate.
  metrics     /metrics (Prometheus text): vllm:cache_config_info num_gpu_blocks > 0,
              vllm:request_success_total rose, vllm:num_requests_waiting <= --max-waiting,
              vllm:kv_cache_usage_perc (or vllm:gpu_cache_usage_perc) <= --max-kv-usage —
              the worst read before, every 100 ms while the requests are in flight (the
              probe's own request not counted) and after them.
              A series the server does not export is reported as skipped, not OK.

A vLLM started with --api-key (or VLLM_API_KEY) wants "Authorization: Bearer TOKEN": name the
variable (--api-key-env NAME) or file (--api-key-file PATH) that holds it; the token is sent
to the replica only and never printed. A 401 or 403 is AUTH_FAILED.

--timeout is the total time the probe may take, from the first connection attempt to the last
check (as --timeout is everywhere in lifeboat). Within it every exchange has its own deadline
(--request-timeout for a whole request, --stall-timeout for a silent stream), so a server that
closes mid-stream, sends an error frame or garbage, or stalls gets a verdict, never a hang.

Verdicts: WARM, or the first failure in this order: UNREACHABLE (the URL never accepted a
connection within --timeout: loading, down or a wrong URL — a probe of a URL cannot tell
which), LOADING (engine not initialised), TLS_FAILED (certificate not trusted, not for this
host name, or no TLS on the port), ENGINE_DEAD (/health not 200, engine error frames, /metrics
unusable), AUTH_FAILED (401/403: no token, or the wrong one), SLEEPING, MODEL_MISSING,
ADAPTER_MISSING, CHAT_FAILED (generation failed: no chat template, error frame, truncated or
garbage stream, stall, a share of the requests failing; or the engine did not count them),
SATURATED (healthy but queue or KV cache over thresholds), SLOW (median TTFT over --ttft-budget).

Exit status: 0 WARM; 1 any other verdict from a replica that listened; 4 UNREACHABLE; 2 bad
input (an --api-key-env that is unset or empty, an unreadable --api-key-file included).`,
		Example: `  lifeboat probe http://10.0.3.7:8000 --served-model-name llama-3.3-70b-instruct --lora sql-lora
  lifeboat probe http://127.0.0.1:8000 --served-model-name llama-demo --ttft-budget 500ms --timeout 15m -o json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if len(args) != 1 {
				return usageErr("probe needs exactly one replica URL, got %d (see --help)", len(args))
			}
			base, err := warm.NormalizeBaseURL(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			o.Models = append(o.Models, legacy...)
			if len(o.Models) == 0 {
				return usageErr("probe needs --served-model-name NAME (the name vLLM serves the model as, its --served-model-name)")
			}
			for _, n := range append(append([]string{}, o.Models...), o.LoRAs...) {
				if strings.TrimSpace(n) == "" {
					return usageErr("--served-model-name/--lora: empty name")
				}
			}
			if err := checkProbeOptions(o); err != nil {
				return err
			}
			if o.Auth.Env != "" && o.Auth.File != "" {
				return usageErr("--api-key-env and --api-key-file: name one")
			}
			if _, err := o.Auth.Token(); err != nil {
				return usageErr("--api-key-env/--api-key-file: %v", err)
			}
			if a.verbose {
				a.log.Debug("probing", "url", base, "models", o.Models, "loras", o.LoRAs)
			}
			o = a.probeHooks(o, "probe")
			res := warm.Probe(cmd.Context(), base, o)
			if a.output == "json" {
				err = a.writeJSON(res)
			} else {
				err = renderProbe(a.stdout, res)
			}
			if err != nil {
				return err
			}
			return probeErr(res)
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.Models, "served-model-name", nil, "served model name that must be listed, as vLLM's --served-model-name (repeatable; the first is probed)")
	// --model was this flag's first name; everywhere else --model is a model directory. It
	// still works, hidden from --help.
	f.StringArrayVar(&legacy, "model", nil, "old name of --served-model-name")
	_ = f.MarkHidden("model")
	f.StringArrayVar(&o.LoRAs, "lora", nil, "LoRA adapter that must be listed with a --served-model-name as parent, and answer (repeatable)")
	f.BoolVar(&o.CompletionsOnly, "completions-only", false, "the model serves no chat: probe /v1/completions instead")
	f.StringVar(&o.Auth.Env, "api-key-env", "", "name of the environment variable holding the bearer token of a vLLM started with --api-key (the name, never the token)")
	f.StringVar(&o.Auth.File, "api-key-file", "", "file holding the bearer token of a vLLM started with --api-key")
	addProbeFlags(f, &o, warm.DefaultMaxWaiting, "the default allows a replica already taking traffic")
	return c
}

// addProbeFlags are the probe settings probe and boot share. They differ only in the default of
// --max-waiting: a replica probe looks at may already take traffic (16), one boot just started
// has an empty queue (0).
func addProbeFlags(f *pflag.FlagSet, o *warm.ProbeOptions, maxWaiting int, why string) {
	f.DurationVar(&o.TTFTBudget, "ttft-budget", warm.DefaultTTFTBudget, "time-to-first-token budget (over it: SLOW)")
	f.DurationVar(&o.Timeout, "timeout", warm.DefaultProbeTimeout, "total time the probe may take: the wait to listen (never listened: LOADING) and every exchange after it")
	f.DurationVar(&o.RequestTimeout, "request-timeout", warm.DefaultRequestTimeout, "deadline of each HTTP exchange, a whole stream included")
	f.DurationVar(&o.StallTimeout, "stall-timeout", warm.DefaultProbeStallTimeout, "a stream silent this long fails")
	f.IntVar(&o.MaxWaiting, "max-waiting", maxWaiting, "most requests allowed in vllm:num_requests_waiting (over it: SATURATED); "+why)
	f.Float64Var(&o.MaxKVUsage, "max-kv-usage", warm.DefaultMaxKVUsage, "highest KV-cache usage allowed, 0..1 (over it: SATURATED)")
	f.IntVar(&o.MaxTokens, "max-tokens", 8, "output tokens each probe request asks for")
	f.IntVar(&o.Requests, "requests", warm.DefaultProbeRequests, "streamed requests sent to the first served name; any failure is not WARM (a replica failing half its requests passes all 8 with probability 0.5^8 ≈ 0.4 %)")
}

// checkProbeOptions refuses probe settings that cannot work.
func checkProbeOptions(o warm.ProbeOptions) error {
	switch {
	case o.Timeout <= 0:
		return usageErr("--timeout %s: want a positive duration", o.Timeout)
	case o.TTFTBudget <= 0:
		return usageErr("--ttft-budget %s: want a positive duration", o.TTFTBudget)
	case o.RequestTimeout <= 0 || o.StallTimeout <= 0:
		return usageErr("--request-timeout and --stall-timeout want positive durations")
	case o.MaxWaiting < 0:
		return usageErr("--max-waiting %d: want 0 or more", o.MaxWaiting)
	case o.MaxKVUsage <= 0 || o.MaxKVUsage > 1:
		return usageErr("--max-kv-usage %g: want a fraction in (0, 1]", o.MaxKVUsage)
	case o.MaxTokens <= 0:
		return usageErr("--max-tokens %d: want 1 or more", o.MaxTokens)
	case o.Requests <= 0 || o.Requests > 1000:
		return usageErr("--requests %d: want 1 to 1000", o.Requests)
	}
	return nil
}

// probeHooks adds -v request logging and the every-few-seconds "waiting for" line.
func (a *app) probeHooks(o warm.ProbeOptions, who string) warm.ProbeOptions {
	if a.verbose {
		o.Log = a.log
	}
	if !a.quiet {
		o.Waiting = func(what string, el time.Duration) {
			fmt.Fprintf(a.stderr, "%s: %s, %s elapsed\n", who, what, el.Round(time.Second))
		}
	}
	return o
}

// probeErr is the verdict as an error for exitCode, as documented in probeCmd: WARM nil; a
// replica that never accepted a connection unreachable (4); any other verdict a problem (1).
func probeErr(r warm.ProbeResult) error {
	switch {
	case r.Verdict == warm.Warm:
		return nil
	case r.Verdict == warm.Unreachable || r.Verdict == warm.Loading && r.Timings.ListenS == nil:
		return unreachable("%s is %s: %s", r.URL, r.Verdict, r.Reason)
	default:
		return problem("%s is %s: %s", r.URL, r.Verdict, r.Reason)
	}
}

func fmtSecs(v *float64, unit string) string {
	if v == nil {
		return "-"
	}
	if unit == "/s" {
		return fmt.Sprintf("%.1f", *v)
	}
	return fmt.Sprintf("%.3fs", *v)
}

func renderProbe(w io.Writer, r warm.ProbeResult) error {
	fmt.Fprintf(w, "%s  %s\n", r.Verdict, r.URL)
	fmt.Fprintf(w, "  %s\n", r.Reason)
	t := r.Timings
	fmt.Fprintf(w, "  listen %s · healthy %s · ttft %s · tokens/s %s · warm %s\n",
		fmtSecs(t.ListenS, ""), fmtSecs(t.HealthyS, ""), fmtSecs(t.TTFTS, ""), fmtSecs(t.TokensPerS, "/s"), fmtSecs(t.WarmS, ""))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range r.Checks {
		status := "ok"
		switch {
		case c.Skipped:
			status = "skipped"
		case !c.OK:
			status = "FAIL"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", status, c.Name, c.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.LogTail != "" {
		fmt.Fprintln(w, "  log tail:")
		for _, l := range strings.Split(r.LogTail, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
	return nil
}
