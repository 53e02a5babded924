package warm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lifeboat/providers"
)

// Verdict is the prober's answer: WARM or one named reason it is not.
type Verdict string

const (
	Warm           Verdict = "WARM"
	Loading        Verdict = "LOADING"         // never listened before the timeout (or engine not initialised)
	Exited         Verdict = "EXITED"          // the launched process exited (log tail attached)
	EngineDead     Verdict = "ENGINE_DEAD"     // /health not 200 (503: engine died), or engine error frames
	ModelMissing   Verdict = "MODEL_MISSING"   // an expected served name is not in /v1/models
	AdapterMissing Verdict = "ADAPTER_MISSING" // an expected LoRA adapter is missing or has another parent
	ChatFailed     Verdict = "CHAT_FAILED"     // the streamed generation failed (no chat template, error frame, garbage, stall …)
	Slow           Verdict = "SLOW"            // TTFT over budget
	Saturated      Verdict = "SATURATED"       // healthy, but waiting queue or KV-cache usage over thresholds

	// What a launcher that schedules the replica (Kubernetes) can say before it ever listens.
	Unschedulable Verdict = "UNSCHEDULABLE" // no node fits the pod (insufficient nvidia.com/gpu, a taint …)
	ImagePull     Verdict = "IMAGE_PULL"    // the image cannot be pulled (ImagePullBackOff, ErrImagePull)
	CrashLoop     Verdict = "CRASH_LOOP"    // a container keeps exiting (CrashLoopBackOff; its last log lines attached)
	OOMKilled     Verdict = "OOM_KILLED"    // a container was killed for exceeding its memory limit
	NotReady      Verdict = "NOT_READY"     // running, but not Ready (its readiness probe fails, or it cannot be created)
)

// LaunchFailure is an Instance's ExitErr (with Exited closed) when its launcher knows why the
// replica cannot serve — a pod no node can take, an image that cannot be pulled, a crash loop:
// the probe reports Verdict and Reason instead of a bare EXITED or a timeout.
type LaunchFailure struct {
	Verdict Verdict
	Reason  string // what the launcher saw, sanitised
	LogTail string // the failed container's last log lines, redacted ("" when none)
}

func (f *LaunchFailure) Error() string { return string(f.Verdict) + ": " + f.Reason }

// Diagnoser is an Instance that can say why its replica is not serving yet, when the probe's
// time runs out before it listened (nil: nothing it can name).
type Diagnoser interface {
	Diagnose(ctx context.Context) *LaunchFailure
}

// verdictRank orders failures: the first failure in this order names the verdict.
var verdictRank = []Verdict{Unschedulable, ImagePull, OOMKilled, CrashLoop, NotReady, Exited, Loading, EngineDead, ModelMissing, AdapterMissing, ChatFailed, Saturated, Slow}

// Defaults for ProbeOptions zero values.
const (
	DefaultProbeTimeout      = 10 * time.Minute
	DefaultTTFTBudget        = 2 * time.Second
	DefaultRequestTimeout    = 60 * time.Second
	DefaultProbeStallTimeout = 30 * time.Second
	DefaultMaxWaiting        = 16 // the CLI's --max-waiting default (a replica already taking traffic)
	DefaultMaxKVUsage        = 0.9
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
	MaxWaiting     int           // vllm:num_requests_waiting must be <= this after the probe (zero value: an empty queue, right for a fresh replica; negative: no check)
	MaxKVUsage     float64       // vllm:kv_cache_usage_perc must be <= this (default 0.9; negative: no check)
	MaxTokens      int           // output tokens asked for (default 8)
	Prompt         string        // default "Reply with one word: ready?"

	Instance   Instance     // optional: the launched replica (its exit ends the wait with EXITED)
	HTTPClient *http.Client // optional (no client-level timeout is needed: every exchange has its own)
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

// ProbeResult is the evidence behind a verdict. JSON field names are stable.
type ProbeResult struct {
	URL     string       `json:"url"`
	Verdict Verdict      `json:"verdict"`
	Reason  string       `json:"reason"`
	Timings ProbeTimings `json:"timings"`
	Checks  []ProbeCheck `json:"checks"`
	LogTail string       `json:"log_tail,omitempty"`
}

// ProbeTimings are seconds since the probe started (tokens_per_s is a rate); null when not reached.
type ProbeTimings struct {
	ListenS    *float64 `json:"listen_s"`
	HealthyS   *float64 `json:"healthy_s"`
	TTFTS      *float64 `json:"ttft_s"` // of the probe request itself
	TokensPerS *float64 `json:"tokens_per_s"`
	WarmS      *float64 `json:"warm_s"`
}

// ProbeCheck is one check that ran and what it saw. Skipped checks (an optional series absent)
// are listed with skipped=true and ok=false: not checked is not OK.
type ProbeCheck struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`

	verdict Verdict // the verdict this failure implies
}

// ProbeInstance probes a launched instance (its exit is watched, its log tail reported).
func ProbeInstance(ctx context.Context, inst Instance, o ProbeOptions) ProbeResult {
	o.Instance = inst
	return Probe(ctx, inst.BaseURL(), o)
}

type prober struct {
	o     ProbeOptions
	base  string
	start time.Time
	res   *ProbeResult
}

func secs(d time.Duration) *float64 {
	v := d.Seconds()
	return &v
}

func (p *prober) since() *float64 { return secs(time.Since(p.start)) }

func (p *prober) check(name string, ok bool, v Verdict, format string, args ...any) bool {
	p.res.Checks = append(p.res.Checks, ProbeCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...), verdict: v})
	return ok
}

func (p *prober) skip(name, format string, args ...any) {
	p.res.Checks = append(p.res.Checks, ProbeCheck{Name: name, Skipped: true, Detail: fmt.Sprintf(format, args...)})
}

// exited reports whether the instance's process has exited.
func (p *prober) exited() bool {
	if p.o.Instance == nil || p.o.Instance.Exited() == nil {
		return false
	}
	select {
	case <-p.o.Instance.Exited():
		return true
	default:
		return false
	}
}

// awaitExit waits up to d for a launched process to exit (a refused or reset connection is often
// the process dying an instant before it is reaped).
func (p *prober) awaitExit(d time.Duration) bool {
	if p.o.Instance == nil || p.o.Instance.Exited() == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.o.Instance.Exited():
		return true
	case <-t.C:
		return false
	}
}

func (p *prober) exitCheck() {
	err := p.o.Instance.ExitErr()
	var lf *LaunchFailure
	if errors.As(err, &lf) {
		p.res.LogTail = lf.LogTail
		p.check("replica", false, lf.Verdict, "%s", lf.Reason)
		return
	}
	status := "exit status 0"
	if err != nil {
		status = err.Error()
	}
	p.res.LogTail = p.o.Instance.LogTail(p.o.LogLines)
	last := lastLines(p.res.LogTail, 1)
	p.check("process", false, Exited, "replica process exited (%s): %s", status, last)
}

// Probe decides whether the replica at baseURL is warm, following vLLM's readiness contract:
// listen → /health → /v1/models → a streamed generation (TTFT, tokens/s) → /metrics. It always
// returns (every wait has a deadline); ctx cancellation ends it with LOADING or the verdict
// reached so far.
//
// o.Timeout is the total budget: the wait to listen and every exchange after it. When it passes
// the check under way fails saying so (LOADING if the replica never listened).
func Probe(ctx context.Context, baseURL string, o ProbeOptions) ProbeResult {
	o.defaults()
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, &budgetError{o.Timeout})
	defer cancel()
	res := ProbeResult{URL: baseURL}
	p := &prober{o: o, base: strings.TrimRight(baseURL, "/"), start: time.Now(), res: &res}
	p.run(ctx)
	res.Verdict, res.Reason = Warm, "listening, healthy, models listed, streamed generation within budget, metrics in bounds"
	for _, v := range verdictRank {
		for _, c := range res.Checks {
			if !c.OK && !c.Skipped && c.verdict == v {
				res.Verdict, res.Reason = v, c.Name+": "+c.Detail
				goto done
			}
		}
	}
	res.Timings.WarmS = p.since()
done:
	if res.Checks == nil {
		res.Checks = []ProbeCheck{}
	}
	return res
}

func (p *prober) run(ctx context.Context) {
	if !p.waitListen(ctx) {
		return
	}
	if !p.health(ctx, "health") {
		return
	}
	p.res.Timings.HealthyS = p.since()

	before, _ := p.metrics(ctx) // errors are reported by the second scrape
	model, ok := p.models(ctx)
	if !ok {
		return
	}

	genOK := p.generate(ctx, "generate", model, true)
	for _, l := range p.o.LoRAs {
		if genOK {
			genOK = p.generate(ctx, "generate lora "+l, l, false)
		}
	}
	if !genOK {
		// Tell an engine death from a request failure.
		if p.exited() {
			p.exitCheck()
		} else {
			p.health(ctx, "health after failure")
		}
		return
	}

	after, err := p.metricsAfter(ctx, before)
	if err != nil {
		p.check("metrics", false, EngineDead, "%v", err)
	} else {
		p.checkMetrics(before, after)
	}
	if p.exited() {
		p.exitCheck()
		return
	}
	p.health(ctx, "health after probe")
}

// budgetError is the cause of a probe's context when ProbeOptions.Timeout passed.
type budgetError struct{ d time.Duration }

func (e *budgetError) Error() string {
	return fmt.Sprintf("the probe's total --timeout of %s passed", e.d)
}

// budgetSpent is the budget's error when the probe's total timeout ended ctx (or a child of it).
func budgetSpent(ctx context.Context) error {
	var be *budgetError
	if errors.As(context.Cause(ctx), &be) {
		return be
	}
	return nil
}

// WaitingInterval is how often ProbeOptions.Waiting is called while waiting.
const WaitingInterval = 5 * time.Second

// waitListen connects until the port accepts, the instance exits, or the timeout passes.
func (p *prober) waitListen(ctx context.Context) bool {
	u, err := url.Parse(p.base)
	if err != nil || u.Host == "" {
		p.check("listen", false, Loading, "bad URL %q", p.base)
		return false
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	var exited <-chan struct{}
	if p.o.Instance != nil {
		exited = p.o.Instance.Exited()
	}
	wait := 10 * time.Millisecond
	attempts := 0
	var lastErr error
	lastSaid := time.Now()
	for {
		if p.o.Waiting != nil && time.Since(lastSaid) >= WaitingInterval {
			lastSaid = time.Now()
			p.o.Waiting(fmt.Sprintf("listen: waiting for %s to accept a connection (timeout %s)", addr, p.o.Timeout), time.Since(p.start))
		}
		attempts++
		d := net.Dialer{Timeout: min(2*time.Second, MaxPollInterval*5)}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			p.res.Timings.ListenS = p.since()
			p.check("listen", true, "", "%s accepted a connection after %d attempt(s)", addr, attempts)
			return true
		}
		lastErr = err
		if p.exited() {
			p.exitCheck()
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-exited:
			t.Stop()
			p.exitCheck()
			return false
		case <-ctx.Done():
			t.Stop()
			why := "timed out"
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "interrupted"
			} else if d, ok := p.o.Instance.(Diagnoser); ok {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				lf := d.Diagnose(dctx)
				cancel()
				if lf != nil {
					p.res.LogTail = lf.LogTail
					p.check("replica", false, lf.Verdict, "%s (after %s)", lf.Reason, time.Since(p.start).Round(time.Millisecond))
					return false
				}
			}
			p.check("listen", false, Loading, "%s did not listen (%s after %s, %d attempts; last: %v)", addr, why, time.Since(p.start).Round(time.Millisecond), attempts, lastErr)
			return false
		}
		wait = min(wait*2, MaxPollInterval)
	}
}

func (p *prober) get(ctx context.Context, path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.o.HTTPClient.Do(req)
	if err != nil {
		if be := budgetSpent(ctx); be != nil {
			return 0, nil, be
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if be := budgetSpent(ctx); err != nil && be != nil {
		return resp.StatusCode, nil, be
	}
	if err == nil && len(body) > MaxBodyBytes {
		return resp.StatusCode, nil, fmt.Errorf("body %w of %d bytes (not judged)", errTooLarge, MaxBodyBytes)
	}
	return resp.StatusCode, body, err
}

// getSettled is get, asked up to three times when the request itself failed (no HTTP answer)
// while the engine's process lives: one refused or timed-out connection on a loaded machine is not
// an engine death, and a dead engine keeps failing all three. An HTTP answer, whatever its
// status, a spent budget and an exited process are final at once.
func (p *prober) getSettled(ctx context.Context, path string) (int, []byte, error) {
	var (
		code int
		body []byte
		err  error
	)
	for i, pause := range []time.Duration{0, 200 * time.Millisecond, 600 * time.Millisecond} {
		if i > 0 {
			select {
			case <-ctx.Done():
				return code, body, err
			case <-time.After(pause):
			}
		}
		code, body, err = p.get(ctx, path)
		if err == nil || code != 0 || budgetSpent(ctx) != nil || ctx.Err() != nil || p.exited() {
			return code, body, err
		}
	}
	return code, body, err
}

func (p *prober) health(ctx context.Context, name string) bool {
	code, _, err := p.getSettled(ctx, "/health")
	switch {
	case err != nil:
		if p.awaitExit(2 * time.Second) {
			p.exitCheck()
			return false
		}
		return p.check(name, false, EngineDead, "GET /health: %v", err)
	case code == http.StatusOK:
		return p.check(name, true, "", "GET /health: 200")
	case code == http.StatusServiceUnavailable:
		return p.check(name, false, EngineDead, "GET /health: 503 (engine dead)")
	default:
		return p.check(name, false, EngineDead, "GET /health: %d (want 200)", code)
	}
}

type modelCard struct {
	ID     string  `json:"id"`
	Parent *string `json:"parent"`
}

func (p *prober) models(ctx context.Context) (string, bool) {
	code, body, err := p.get(ctx, "/v1/models")
	if err != nil || code != http.StatusOK {
		if err == nil {
			err = fmt.Errorf("HTTP %d: %s", code, snippet(body))
		}
		p.check("models", false, ModelMissing, "GET /v1/models: %v", err)
		return "", false
	}
	var list struct {
		Data []modelCard `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		p.check("models", false, ModelMissing, "GET /v1/models: not a model list: %v", err)
		return "", false
	}
	cards := map[string]modelCard{}
	var bases, ids []string
	for _, c := range list.Data {
		cards[c.ID] = c
		ids = append(ids, c.ID)
		if c.Parent == nil {
			bases = append(bases, c.ID)
		}
	}
	want := p.o.Models
	if len(want) == 0 {
		if len(bases) == 0 {
			p.check("models", false, ModelMissing, "GET /v1/models lists no base model (saw %v)", ids)
			return "", false
		}
		want = bases[:1]
	}
	ok := true
	for _, m := range want {
		c, found := cards[m]
		switch {
		case !found:
			ok = p.check("model "+m, false, ModelMissing, "not in /v1/models (saw %v)", ids) && ok
		case c.Parent != nil:
			ok = p.check("model "+m, false, ModelMissing, "listed as an adapter of %q, not a served model", *c.Parent) && ok
		default:
			p.check("model "+m, true, "", "listed")
		}
	}
	for _, l := range p.o.LoRAs {
		c, found := cards[l]
		switch {
		case !found:
			ok = p.check("lora "+l, false, AdapterMissing, "not in /v1/models (saw %v)", ids) && ok
		case c.Parent == nil:
			ok = p.check("lora "+l, false, AdapterMissing, "listed as a base model, not an adapter") && ok
		case !slices.Contains(want, *c.Parent):
			ok = p.check("lora "+l, false, AdapterMissing, "parent %q, want one of %v", *c.Parent, want) && ok
		default:
			p.check("lora "+l, true, "", "listed with parent %q", *c.Parent)
		}
	}
	return want[0], ok
}

// snippet is a replica's text as one sanitised, bounded line (providers.Sanitize).
func snippet(b []byte) string {
	return providers.Sanitize(string(b), 300)
}

// apiErrorMessage extracts vLLM's {"error": {"message", "type"}} (or {"message"}) from a body,
// each sanitised (providers.Sanitize): it is a peer's text.
func apiErrorMessage(b []byte) (msg, typ string) {
	msg, typ = rawAPIErrorMessage(b)
	return providers.Sanitize(msg, 300), providers.Sanitize(typ, 64)
}

func rawAPIErrorMessage(b []byte) (msg, typ string) {
	var e struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(b, &e) != nil {
		return snippet(b), ""
	}
	var inner struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if len(e.Error) > 0 && json.Unmarshal(e.Error, &inner) == nil && inner.Message != "" {
		return inner.Message, inner.Type
	}
	var s string
	if len(e.Error) > 0 && json.Unmarshal(e.Error, &s) == nil {
		return s, ""
	}
	if e.Msg != "" {
		return e.Msg, ""
	}
	return snippet(b), ""
}

// Caps on what a replica can make the prober hold: a peer is not trusted to be small. A cap that
// is hit is a failed check naming it, never a skipped check or a WARM.
const (
	MaxBodyBytes    = 16 << 20 // /health, /v1/models, /metrics
	MaxSSELineBytes = 1 << 20  // one line of the event stream
	MaxStreamBytes  = 64 << 20 // a whole streamed answer (asked for MaxTokens tokens)
	maxErrorBody    = 64 << 10
)

// errTooLarge marks a body or line over its cap.
var errTooLarge = errors.New("over the prober's size cap")

// generate sends one streamed request and reads it to [DONE] under the request and stall
// deadlines. primary marks the request whose TTFT and rate are the result's timings.
func (p *prober) generate(ctx context.Context, name, model string, primary bool) bool {
	path, body := p.generateRequest(model)
	name += " " + path

	ctx, cancel := context.WithTimeout(ctx, p.o.RequestTimeout)
	defer cancel()
	st := &stream{o: p.o}
	st.watchdog = time.AfterFunc(p.o.StallTimeout, func() { st.stalled.Store(true); cancel() })
	defer st.watchdog.Stop()

	resp, v, msg := p.openStream(ctx, path, body, st)
	if resp == nil {
		return p.check(name, false, v, "%s", msg)
	}
	defer resp.Body.Close()
	if v, msg, ok := st.read(ctx, resp.Body, p.streamErr); !ok {
		return p.check(name, false, v, "%s", msg)
	}
	return p.judgeStream(name, model, primary, st)
}

// generateRequest is the path and JSON body of the probe's streamed request.
func (p *prober) generateRequest(model string) (string, []byte) {
	path := "/v1/chat/completions"
	req := map[string]any{"model": model, "max_tokens": p.o.MaxTokens, "stream": true,
		"temperature": 0, "stream_options": map[string]any{"include_usage": true}}
	if p.o.CompletionsOnly {
		path = "/v1/completions"
		req["prompt"] = p.o.Prompt
	} else {
		req["messages"] = []map[string]string{{"role": "user", "content": p.o.Prompt}}
	}
	body, _ := json.Marshal(req)
	return path, body
}

// openStream posts the request and checks that an event stream came back; on failure the
// response is nil and the verdict and message say why.
func (p *prober) openStream(ctx context.Context, path string, body []byte, st *stream) (*http.Response, Verdict, string) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, ChatFailed, err.Error()
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	st.sent = time.Now()
	resp, err := p.o.HTTPClient.Do(hreq)
	if err != nil {
		return nil, ChatFailed, p.streamErr(err, &st.stalled, ctx, "no response")
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		msg, typ := apiErrorMessage(b)
		return nil, errorVerdict(typ), fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, ChatFailed, fmt.Sprintf("HTTP 200 with Content-Type %q, not an event stream: %s", ct, snippet(b))
	}
	return resp, "", ""
}

func errorVerdict(typ string) Verdict {
	if typ == "EngineDeadError" {
		return EngineDead
	}
	return ChatFailed
}

// stream is what one streamed answer delivered.
type stream struct {
	o        ProbeOptions
	watchdog *time.Timer
	stalled  atomic.Bool

	sent, firstAt, lastAt time.Time
	ttft                  time.Duration
	tokens, chunks        int
	usageTokens           int
}

// read consumes server-sent events to [DONE]. The stall watchdog is reset by bytes arriving,
// not by lines completing, and no line or stream may outgrow its cap.
func (st *stream) read(ctx context.Context, body io.Reader, streamErr func(error, *atomic.Bool, context.Context, string) string) (Verdict, string, bool) {
	counted := &countingReader{r: io.LimitReader(body, MaxStreamBytes+1), touch: func() { st.watchdog.Reset(st.o.StallTimeout) }}
	r := bufio.NewReaderSize(counted, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, errTooLarge) {
			return ChatFailed, fmt.Sprintf("event stream line longer than %d bytes (%d chunks, %d tokens)", MaxSSELineBytes, st.chunks, st.tokens), false
		}
		if counted.n > MaxStreamBytes {
			return ChatFailed, fmt.Sprintf("event stream larger than %d bytes without [DONE] (%d chunks, %d tokens)", MaxStreamBytes, st.chunks, st.tokens), false
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return ChatFailed, fmt.Sprintf("stream ended before [DONE] (%d chunks, %d tokens)", st.chunks, st.tokens), false
			}
			return ChatFailed, fmt.Sprintf("%s (%d chunks, %d tokens)", streamErr(err, &st.stalled, ctx, "stream broke before [DONE]"), st.chunks, st.tokens), false
		}
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
			continue // event separator or comment
		case strings.HasPrefix(line, "event:") || strings.HasPrefix(line, "id:") || strings.HasPrefix(line, "retry:"):
			continue
		case !strings.HasPrefix(line, "data:"):
			return ChatFailed, fmt.Sprintf("not server-sent events: %q", snippet([]byte(line))), false
		}
		data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if data == "[DONE]" {
			return "", "", true
		}
		if v, msg, ok := st.chunk(data); !ok {
			return v, msg, false
		}
	}
}

// readLine returns the next line without its line ending; a line over MaxSSELineBytes is
// errTooLarge, and a last line without a newline is the read error (io.EOF for a clean end).
func readLine(r *bufio.Reader) (string, error) {
	var buf []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(buf)+len(frag) > MaxSSELineBytes {
			return "", errTooLarge
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			return strings.TrimRight(string(buf), "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return "", err
		}
	}
}

// chunk takes one data: payload: an error frame fails, content counts as tokens.
func (st *stream) chunk(data string) (Verdict, string, bool) {
	st.chunks++
	var chunk struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Text  *string `json:"text"`
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(data), &chunk); err != nil {
		return ChatFailed, fmt.Sprintf("garbage in the event stream (chunk %d): %q", st.chunks, snippet([]byte(data))), false
	}
	if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
		msg, typ := apiErrorMessage([]byte(data))
		return errorVerdict(typ), fmt.Sprintf("error frame after %d tokens: %s", st.tokens, msg), false
	}
	if chunk.Usage != nil {
		st.usageTokens = chunk.Usage.CompletionTokens
	}
	for _, c := range chunk.Choices {
		s := c.Delta.Content
		if c.Text != nil {
			s = c.Text
		}
		if s != nil && *s != "" {
			now := time.Now()
			if st.tokens == 0 {
				st.firstAt, st.ttft = now, now.Sub(st.sent)
			}
			st.lastAt = now
			st.tokens++
		}
	}
	return "", "", true
}

// judgeStream records a complete stream: tokens, rate, and the TTFT budget.
func (p *prober) judgeStream(name, model string, primary bool, st *stream) bool {
	if st.tokens == 0 {
		return p.check(name, false, ChatFailed, "[DONE] without any content (%d chunks)", st.chunks)
	}
	n := st.tokens
	if st.usageTokens > 0 {
		n = st.usageTokens
	}
	var rate float64
	if span := st.lastAt.Sub(st.firstAt); n > 1 && span > 0 {
		rate = float64(n-1) / span.Seconds()
	} else {
		rate = float64(n) / st.lastAt.Sub(st.sent).Seconds()
	}
	p.check(name, true, "", "%d tokens, [DONE], ttft %s, %.1f tokens/s", n, st.ttft.Round(time.Millisecond), rate)
	if primary {
		p.res.Timings.TTFTS = secs(st.ttft)
		p.res.Timings.TokensPerS = &rate
	}
	if p.o.TTFTBudget > 0 {
		p.check("ttft "+model, st.ttft <= p.o.TTFTBudget, Slow, "%s (budget %s)", st.ttft.Round(time.Millisecond), p.o.TTFTBudget)
	}
	return true
}

// countingReader counts the bytes read through it and calls touch whenever some arrive.
type countingReader struct {
	r     io.Reader
	n     int64
	touch func()
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		c.touch()
	}
	return n, err
}

func (p *prober) streamErr(err error, stalled *atomic.Bool, ctx context.Context, what string) string {
	switch {
	case stalled.Load():
		return fmt.Sprintf("%s: stalled, nothing for %s", what, p.o.StallTimeout)
	case budgetSpent(ctx) != nil:
		return fmt.Sprintf("%s: %v", what, budgetSpent(ctx))
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("%s: no [DONE] within %s", what, p.o.RequestTimeout)
	default:
		return fmt.Sprintf("%s: %v", what, err)
	}
}

// ---------------------------------------------------------------------------------------------
// metrics

type scrape map[string]*dto.MetricFamily

func (p *prober) metrics(ctx context.Context) (scrape, error) {
	code, body, err := p.getSettled(ctx, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: %v", err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("GET /metrics: not Prometheus text format: %v", err)
	}
	return fams, nil
}

// metricsAfter scrapes until vllm:request_success_total rose above before (vLLM logs stats
// asynchronously), for up to 5 s.
func (p *prober) metricsAfter(ctx context.Context, before scrape) (scrape, error) {
	deadline := time.Now().Add(5 * time.Second)
	b, hasB := before.sum("vllm:request_success_total")
	for {
		after, err := p.metrics(ctx)
		if err != nil {
			return nil, err
		}
		a, hasA := after.sum("vllm:request_success_total")
		if !hasB || !hasA || a > b || time.Now().After(deadline) || ctx.Err() != nil {
			return after, nil
		}
		select {
		case <-ctx.Done():
			return after, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// sum adds every series of a counter or gauge (all engines, models, finished reasons).
func (s scrape) sum(name string) (float64, bool) {
	f := s[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	var t float64
	for _, m := range f.GetMetric() {
		t += value(m)
	}
	return t, true
}

// maxOf is the largest series of a gauge (the worst engine).
func (s scrape) maxOf(name string) (float64, bool) {
	f := s[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	v := value(f.GetMetric()[0])
	for _, m := range f.GetMetric()[1:] {
		v = max(v, value(m))
	}
	return v, true
}

func label(m *dto.Metric, name string) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue(), true
		}
	}
	return "", false
}

func (p *prober) checkMetrics(before, after scrape) {
	// Engine initialised: every cache_config_info series carries num_gpu_blocks > 0.
	if f := after["vllm:cache_config_info"]; f == nil || len(f.GetMetric()) == 0 {
		p.skip("engine initialised", "vllm:cache_config_info not exported")
	} else {
		var blocks []string
		ok, seen := true, false
		for _, m := range f.GetMetric() {
			v, has := label(m, "num_gpu_blocks")
			if !has || v == "" || v == "None" {
				continue
			}
			seen = true
			blocks = append(blocks, v)
			if n, err := strconv.ParseFloat(v, 64); err != nil || n <= 0 {
				ok = false
			}
		}
		if !seen {
			p.skip("engine initialised", "vllm:cache_config_info has no num_gpu_blocks label")
		} else {
			p.check("engine initialised", ok, Loading, "vllm:cache_config_info num_gpu_blocks=%s", strings.Join(blocks, ","))
		}
	}
	// The probe was counted.
	b, hasB := before.sum("vllm:request_success_total")
	a, hasA := after.sum("vllm:request_success_total")
	switch {
	case before == nil:
		p.skip("probe counted", "no /metrics scrape before the probe")
	case !hasA:
		p.skip("probe counted", "vllm:request_success_total not exported")
	default:
		if !hasB {
			b = 0 // vLLM exports no series before the first finished request
		}
		p.check("probe counted", a > b, ChatFailed, "vllm:request_success_total %g → %g", b, a)
	}
	// Waiting queue.
	if p.o.MaxWaiting >= 0 {
		if w, ok := after.maxOf("vllm:num_requests_waiting"); ok {
			p.check("waiting queue", w <= float64(p.o.MaxWaiting), Saturated, "vllm:num_requests_waiting %g (max %d)", w, p.o.MaxWaiting)
		} else {
			p.skip("waiting queue", "vllm:num_requests_waiting not exported")
		}
	}
	// KV-cache usage (newer name first).
	if p.o.MaxKVUsage >= 0 {
		name := "vllm:kv_cache_usage_perc"
		kv, ok := after.maxOf(name)
		if !ok {
			name = "vllm:gpu_cache_usage_perc"
			kv, ok = after.maxOf(name)
		}
		if ok {
			p.check("kv cache usage", kv <= p.o.MaxKVUsage, Saturated, "%s %.3g (max %.3g)", name, kv, p.o.MaxKVUsage)
		} else {
			p.skip("kv cache usage", "neither vllm:kv_cache_usage_perc nor vllm:gpu_cache_usage_perc exported")
		}
	}
}
