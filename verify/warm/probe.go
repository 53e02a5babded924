// The prober's core: the verdicts and what a launcher can say, the result and its checks, and
// Probe, which runs vLLM's readiness contract in order (listen, /health, /v1/models, a streamed
// generation, /metrics: probe_*.go) and names the first failure by rank.

package warm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"lifeboat/fleet/launch"
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
	Saturated      Verdict = "SATURATED"       // healthy, but waiting queue or KV-cache usage over thresholds (before or while the probe's requests are in flight)
	Unreachable    Verdict = "UNREACHABLE"     // a URL nothing Lifeboat started never accepted a connection (refused, no route, no such host)
	TLSFailed      Verdict = "TLS_FAILED"      // the TLS handshake failed: certificate not trusted, not for this host name, expired, or not TLS
	AuthFailed     Verdict = "AUTH_FAILED"     // 401/403: the replica wants a bearer token (vLLM --api-key) and none, or another, was sent
	Sleeping       Verdict = "SLEEPING"        // vLLM's sleep mode: /is_sleeping true or vllm:engine_sleep_state awake=0 (the prober never wakes it)

	// What a launcher that schedules the replica (Kubernetes) can say before it ever listens.
	Unschedulable Verdict = "UNSCHEDULABLE" // no node fits the pod (insufficient nvidia.com/gpu, a taint …)
	ImagePull     Verdict = "IMAGE_PULL"    // the image cannot be pulled (ImagePullBackOff, ErrImagePull)
	CrashLoop     Verdict = "CRASH_LOOP"    // a container keeps exiting (CrashLoopBackOff; its last log lines attached)
	OOMKilled     Verdict = "OOM_KILLED"    // a container was killed for exceeding its memory limit
	NotReady      Verdict = "NOT_READY"     // running, but not Ready (its readiness probe fails, or it cannot be created)
	PortForward   Verdict = "PORT_FORWARD"  // Ready, but the port-forward to it through the API server cannot open
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
var verdictRank = []Verdict{Unschedulable, ImagePull, OOMKilled, CrashLoop, NotReady, PortForward, Exited, Unreachable, Loading, TLSFailed, EngineDead, AuthFailed, Sleeping, ModelMissing, AdapterMissing, ChatFailed, Saturated, Slow}

// ProbeResult is the evidence behind a verdict. JSON field names are stable.
type ProbeResult struct {
	URL     string       `json:"url"`
	Verdict Verdict      `json:"verdict"`
	Reason  string       `json:"reason"`
	Timings ProbeTimings `json:"timings"`
	Checks  []ProbeCheck `json:"checks"`
	LogTail string       `json:"log_tail,omitempty"`
	// Requests counts the streamed requests sent to the first served name and how many failed.
	Requests ProbeRequests `json:"requests"`
	// Auth names where the bearer token came from ("" when none was configured); never the token.
	Auth string `json:"auth,omitempty"`
}

// ProbeRequests is the failure count of the probe's streamed requests; failure_rate is null
// when none was sent.
type ProbeRequests struct {
	Sent        int      `json:"sent"`
	Failed      int      `json:"failed"`
	FailureRate *float64 `json:"failure_rate"`
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
func ProbeInstance(ctx context.Context, inst launch.Instance, o ProbeOptions) ProbeResult {
	o.Instance = inst
	return Probe(ctx, inst.BaseURL(), o)
}

type prober struct {
	o     ProbeOptions
	base  string
	start time.Time
	res   *ProbeResult
	token string   // the bearer token, "" when none; never in res
	press pressure // the worst queue and KV usage seen before and while requests are in flight
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
	last := launch.LastLines(p.res.LogTail, 1)
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
	if !o.Auth.IsZero() {
		res.Auth = o.Auth.String()
		tok, err := o.Auth.Token()
		if err != nil {
			p.check("auth", false, AuthFailed, "%v", err)
		} else {
			p.token = tok
			p.run(ctx)
		}
	} else {
		p.run(ctx)
	}
	// A replica's text is a peer's: it must not carry the token out, whatever it echoes.
	res.Reason = redact(res.Reason, p.token)
	res.LogTail = redact(res.LogTail, p.token)
	for i := range res.Checks {
		res.Checks[i].Detail = redact(res.Checks[i].Detail, p.token)
	}
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
	res.Reason = redact(res.Reason, p.token)
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

	before, _ := p.metrics(ctx) // errors are reported by the scrape after
	p.press.observe(before, 0, "before the probe's requests")
	if !p.awake(ctx, before) {
		return
	}
	model, ok := p.models(ctx)
	if !ok {
		return
	}

	// Queue and KV pressure are read while the requests are in flight: a queue that the
	// probe's own request waited behind has often drained by the time it is done.
	stop := p.watchPressure(ctx)
	genOK := p.generateN(ctx, model)
	for _, l := range p.o.LoRAs {
		if genOK {
			genOK = p.generateOne(ctx, "generate lora "+l, l)
		}
	}
	stop()
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
		p.press.observe(after, 0, "after the probe's requests")
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
