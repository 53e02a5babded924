// What "warm" means for one replica (ProbeOptions, their defaults), and the redirect rule every
// HTTP client of the prober and of the failover's live signals uses.

package warm

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/providers"
)

// Defaults for ProbeOptions zero values.
const (
	DefaultProbeTimeout      = 10 * time.Minute
	DefaultTTFTBudget        = 2 * time.Second
	DefaultRequestTimeout    = 60 * time.Second
	DefaultProbeStallTimeout = 30 * time.Second
	DefaultMaxWaiting        = 16 // the CLI's --max-waiting default (a replica already taking traffic)
	DefaultMaxKVUsage        = 0.9
	// DefaultProbeRequests is how many streamed requests the probe sends the first served name:
	// any that fails makes the replica not WARM, so one failing a share p of its requests passes
	// by luck with probability (1-p)^n — 0.5^8 ≈ 0.4 % at p = 0.5, 0.8^8 ≈ 17 % at p = 0.2.
	DefaultProbeRequests = 8
	// PressureInterval is how often /metrics is read while the probe's requests are in flight.
	PressureInterval = 100 * time.Millisecond
	// MaxPollInterval bounds the wait between connection attempts, so a replica that starts to
	// listen is seen within it (plus one loopback connect).
	MaxPollInterval = 200 * time.Millisecond
)

// ProbeOptions say what "warm" means for one replica. Zero values take the defaults.
type ProbeOptions struct {
	Models          []string // expected served names; the first one is probed (default: the first base card listed)
	LoRAs           []string // expected LoRA adapters: listed with parent = a served name, and each answers one streamed request
	CompletionsOnly bool     // the model serves no chat: probe /v1/completions instead of /v1/chat/completions

	Timeout        time.Duration // total budget of the probe, listen wait and every exchange (default 10m)
	TTFTBudget     time.Duration // time to first content token (default 2s; negative: no budget)
	RequestTimeout time.Duration // deadline of each HTTP exchange, whole stream included (default 60s)
	StallTimeout   time.Duration // a stream silent this long fails (default 30s)
	MaxWaiting     int           // vllm:num_requests_waiting must be <= this before, while and after the probe's requests are in flight, its own not counted (zero value: an empty queue, right for a fresh replica; negative: no check)
	MaxKVUsage     float64       // vllm:kv_cache_usage_perc must be <= this (default 0.9; negative: no check)
	MaxTokens      int           // output tokens asked for (default 8)
	Requests       int           // streamed requests to the first served name, one after another (default DefaultProbeRequests); any failure is not WARM
	Prompt         string        // default "Reply with one word: ready?"

	// Auth names where the bearer token of a replica started with vLLM's --api-key comes from
	// (an environment variable or a file); it is read when the probe starts and sent on every
	// request to the replica, and appears in no result, log or error.
	Auth launch.APIKeySource

	Instance   launch.Instance // optional: the launched replica (its exit ends the wait with EXITED)
	HTTPClient *http.Client    // optional (no client-level timeout is needed: every exchange has its own)
	// Waiting, when set, is called every WaitingInterval while the probe waits for the port to
	// listen, with what it waits for and how long it has waited (progress on stderr, so that a
	// 10-minute --timeout is never silent).
	Waiting func(what string, elapsed time.Duration)
	// Log, when set, receives one debug line per HTTP request to the replica (method, host,
	// path, status) — for -v.
	Log      *slog.Logger
	LogLines int // log tail lines attached to EXITED (default 40)
}

func (o *ProbeOptions) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	if o.TTFTBudget == 0 {
		o.TTFTBudget = DefaultTTFTBudget
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultProbeStallTimeout
	}
	if o.MaxKVUsage == 0 {
		o.MaxKVUsage = DefaultMaxKVUsage
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 8
	}
	if o.Requests <= 0 {
		o.Requests = DefaultProbeRequests
	}
	if o.Prompt == "" {
		o.Prompt = "Reply with one word: ready?"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			ResponseHeaderTimeout: 0, // bounded by the per-request context
			DisableCompression:    true,
		}}
		if o.Log != nil {
			o.HTTPClient.Transport = providers.LoggingTransport(o.HTTPClient.Transport, o.Log)
		}
	}
	if o.HTTPClient.CheckRedirect == nil {
		c := *o.HTTPClient
		c.CheckRedirect = SameHostRedirects
		o.HTTPClient = &c
	}
	if o.LogLines <= 0 {
		o.LogLines = 40
	}
}

// SameHostRedirects follows a redirect only to the first request's own scheme, host and port: a
// replica (or whatever answers on its address) must not point the prober — or the failover's
// live signal reader — at a metadata service or any other host. At most 10, as net/http. It is
// an http.Client's CheckRedirect.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("redirect to %s://%s refused: not the same scheme, host and port as %s://%s", req.URL.Scheme, req.URL.Host, from.Scheme, from.Host)
	}
	return nil
}
