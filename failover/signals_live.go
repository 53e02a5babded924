package failover

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/verify/warm"
)

// SignalSource gives the planner fresh signals. preflight asks for the warm prober's verdict
// (a real generation on every region); otherwise health and metrics only, keeping the last
// warm verdict.
type SignalSource interface {
	Signals(ctx context.Context, preflight bool) (map[string]RegionSignal, error)
}

// LiveSignals reads each region's endpoint: GET /health, GET /metrics, and the warm prober.
type LiveSignals struct {
	Fleet  *fleet.Fleet
	Client *http.Client      // nil: a client with per-request deadlines
	Probe  warm.ProbeOptions // the warm prober's options (Models defaults to the fleet's model)
	// RequestTimeout bounds each health or metrics exchange; 0 means 5s.
	RequestTimeout time.Duration

	clientOnce sync.Once
	httpClient *http.Client

	mu        sync.Mutex
	warm      map[string]warm.ProbeResult
	prev      map[string]promptSample
	calmSince map[string]time.Time
}

type promptSample struct {
	at     time.Time
	tokens float64
}

// Metric names the queue-wait estimate reads.
const (
	MetricWaiting      = "vllm:num_requests_waiting"
	MetricRunning      = "vllm:num_requests_running"
	MetricPromptTokens = "vllm:request_prompt_tokens" // histogram: _sum / _count = mean prompt
	MetricPromptTotal  = "vllm:prompt_tokens_total"
	MetricSuccess      = "vllm:request_success_total"
)

const maxMetricsBytes = 8 << 20

// client is the HTTP client of health and metrics reads. It follows a redirect only to the same
// scheme, host and port (a region's endpoint must not send the reader to another host — a
// metadata service, another region); a given Client without its own CheckRedirect gets that rule.
func (l *LiveSignals) client() *http.Client {
	l.clientOnce.Do(func() {
		c := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
		if l.Client != nil {
			cc := *l.Client
			c = &cc
		}
		if c.CheckRedirect == nil {
			c.CheckRedirect = warm.SameHostRedirects
		}
		l.httpClient = c
	})
	return l.httpClient
}

func (l *LiveSignals) timeout() time.Duration {
	if l.RequestTimeout > 0 {
		return l.RequestTimeout
	}
	return 5 * time.Second
}

// Signals reads every region at once (at most 16 in flight).
func (l *LiveSignals) Signals(ctx context.Context, preflight bool) (map[string]RegionSignal, error) {
	l.mu.Lock()
	if l.warm == nil {
		l.warm, l.prev, l.calmSince = map[string]warm.ProbeResult{}, map[string]promptSample{}, map[string]time.Time{}
	}
	l.mu.Unlock()
	out := map[string]RegionSignal{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, name := range l.Fleet.RegionNames() {
		r := l.Fleet.Regions[name]
		if r.Endpoint == "" && r.MetricsURL() == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			sig := l.region(ctx, r, preflight)
			mu.Lock()
			out[name] = sig
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

func (l *LiveSignals) region(ctx context.Context, r *fleet.Region, preflight bool) RegionSignal {
	var sig RegionSignal
	now := time.Now()
	if r.Endpoint != "" {
		code, _, err := l.get(ctx, r.Endpoint+"/health")
		sig.Healthy = err == nil && code == http.StatusOK
		if !sig.Healthy {
			sig.Why = fmt.Sprintf("GET /health: %s", describe(code, err))
		}
	}
	if preflight && r.Endpoint != "" && sig.Healthy {
		o := l.Probe
		if len(o.Models) == 0 && l.Fleet.Model.Name != "" {
			o.Models = []string{l.Fleet.Model.Name}
		}
		if o.Timeout <= 0 {
			o.Timeout = 10 * time.Second
		}
		if o.Auth.IsZero() {
			o.Auth = l.Fleet.ProbeAuth(r.Name) // the region's probe section, else the fleet's
		}
		if o.MaxWaiting == 0 {
			o.MaxWaiting = -1 // a serving region has a queue; saturation is the queue-wait estimate's job
		}
		res := warm.Probe(ctx, r.Endpoint, o)
		l.mu.Lock()
		l.warm[r.Name] = res
		l.mu.Unlock()
	}
	l.mu.Lock()
	res, probed := l.warm[r.Name]
	l.mu.Unlock()
	switch {
	case !probed:
		sig.Why = joinWhy(sig.Why, "not probed")
	case res.Verdict == warm.Warm:
		sig.Warm = sig.Healthy
	default:
		sig.Why = joinWhy(sig.Why, fmt.Sprintf("%s: %s", res.Verdict, res.Reason))
	}
	if u := r.MetricsURL(); u != "" {
		l.metrics(ctx, r, u, now, &sig)
	}
	l.mu.Lock()
	calm := sig.Warm && sig.QueueWaitMS != nil && *sig.QueueWaitMS < float64(l.Fleet.Failover.SpillStopMS)
	if !calm {
		delete(l.calmSince, r.Name)
	} else {
		since, ok := l.calmSince[r.Name]
		if !ok {
			since = now
			l.calmSince[r.Name] = now
		}
		c := now.Sub(since).Seconds()
		sig.CalmSeconds = &c
	}
	l.mu.Unlock()
	return sig
}

func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func describe(code int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("HTTP %d", code)
}

func (l *LiveSignals) get(ctx context.Context, url string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := l.client().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := router.ReadBoundedN(resp.Body, maxMetricsBytes)
	return resp.StatusCode, b, err
}

// metrics fills the queue-wait estimate: waiting requests × mean prompt tokens ÷ the region's
// prefill rate (replicas × prefill_tokens_per_s). The mean prompt comes from the
// vllm:request_prompt_tokens histogram, else vllm:prompt_tokens_total ÷ vllm:request_success_total,
// else signals.mean_prompt_tokens; with none of them (and a non-empty queue) the wait is unknown.
func (l *LiveSignals) metrics(ctx context.Context, r *fleet.Region, url string, now time.Time, sig *RegionSignal) {
	code, body, err := l.get(ctx, url)
	if err != nil || code != http.StatusOK {
		sig.Why = joinWhy(sig.Why, "GET metrics: "+describe(code, err))
		return
	}
	parser := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		sig.Why = joinWhy(sig.Why, "metrics: not Prometheus text: "+err.Error())
		return
	}
	waiting, okW := sumMetric(fams[MetricWaiting])
	running, okR := sumMetric(fams[MetricRunning])
	if okR {
		n := int(running)
		sig.Running = &n
	}
	if total, ok := sumMetric(fams[MetricPromptTotal]); ok {
		l.mu.Lock()
		if p, had := l.prev[r.Name]; had && now.Sub(p.at) > 50*time.Millisecond && total >= p.tokens {
			rate := (total - p.tokens) / now.Sub(p.at).Seconds()
			sig.PrefillTokensPerS = &rate
		}
		l.prev[r.Name] = promptSample{now, total}
		l.mu.Unlock()
	}
	if !okW {
		sig.Why = joinWhy(sig.Why, MetricWaiting+" missing")
		return
	}
	capacity := r.PrefillCapacity()
	if capacity <= 0 {
		sig.Why = joinWhy(sig.Why, "capacity unknown")
		return
	}
	if waiting == 0 {
		z := 0.0
		sig.QueueWaitMS = &z
		return
	}
	mean := meanPrompt(fams)
	if mean <= 0 {
		mean = r.Signals.MeanPromptTokens
	}
	if mean <= 0 {
		sig.Why = joinWhy(sig.Why, "mean prompt length unknown (no vllm:request_prompt_tokens, no prompt-token counter, no signals.mean_prompt_tokens)")
		return
	}
	q := waiting * mean / capacity * 1000
	sig.QueueWaitMS = &q
}

func meanPrompt(fams map[string]*dto.MetricFamily) float64 {
	if f := fams[MetricPromptTokens]; f != nil {
		var s float64
		var n uint64
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				s += h.GetSampleSum()
				n += h.GetSampleCount()
			}
		}
		if n > 0 {
			return s / float64(n)
		}
	}
	tokens, ok1 := sumMetric(fams[MetricPromptTotal])
	reqs, ok2 := sumMetric(fams[MetricSuccess])
	if ok1 && ok2 && reqs > 0 {
		return tokens / reqs
	}
	return 0
}

func sumMetric(f *dto.MetricFamily) (float64, bool) {
	if f == nil || len(f.GetMetric()) == 0 {
		return 0, false
	}
	var t float64
	for _, m := range f.GetMetric() {
		switch {
		case m.GetCounter() != nil:
			t += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			t += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			t += m.GetUntyped().GetValue()
		}
	}
	return t, true
}
