// The /metrics scrapes before and after the streamed request: engine initialised, the probe
// counted, waiting queue and KV-cache usage within bounds.

package warm

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"lifeboat/internal/base/wait"
)

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
		if wait.Sleep(ctx, 100*time.Millisecond) != nil {
			return after, nil
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
	// Waiting queue and KV-cache usage: the worst seen before, while and after the requests.
	pr := p.press.snapshot()
	if p.o.MaxWaiting >= 0 {
		if pr.hasWaiting {
			p.check("waiting queue", pr.waiting <= float64(p.o.MaxWaiting), Saturated, "vllm:num_requests_waiting %g %s (max %d; the probe's own request not counted; %d scrapes)", pr.waiting, pr.waitingWhen, p.o.MaxWaiting, pr.scrapes)
		} else {
			p.skip("waiting queue", "vllm:num_requests_waiting not exported")
		}
	}
	if p.o.MaxKVUsage >= 0 {
		if pr.hasKV {
			p.check("kv cache usage", pr.kv <= p.o.MaxKVUsage, Saturated, "%s %.3g %s (max %.3g; %d scrapes)", pr.kvName, pr.kv, pr.kvWhen, p.o.MaxKVUsage, pr.scrapes)
		} else {
			p.skip("kv cache usage", "neither vllm:kv_cache_usage_perc nor vllm:gpu_cache_usage_perc exported")
		}
	}
}

// pressure is the worst waiting queue and KV-cache usage seen, and when.
type pressure struct {
	mu                  sync.Mutex
	scrapes             int
	waiting, kv         float64
	hasWaiting, hasKV   bool
	waitingWhen, kvWhen string
	kvName              string
}

// observe takes one scrape (nil: none); own is how many of the probe's requests were in flight,
// not counted against the queue (they may be waiting themselves).
func (pr *pressure) observe(s scrape, own int, when string) {
	if s == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.scrapes++
	if w, ok := s.maxOf("vllm:num_requests_waiting"); ok {
		w = max(w-float64(own), 0)
		if !pr.hasWaiting || w > pr.waiting {
			pr.waiting, pr.waitingWhen = w, when
		}
		pr.hasWaiting = true
	}
	name := "vllm:kv_cache_usage_perc"
	kv, ok := s.maxOf(name)
	if !ok {
		name = "vllm:gpu_cache_usage_perc"
		kv, ok = s.maxOf(name)
	}
	if ok {
		if !pr.hasKV || kv > pr.kv {
			pr.kv, pr.kvWhen, pr.kvName = kv, when, name
		}
		pr.hasKV = true
	}
}

type pressureSnapshot struct {
	scrapes             int
	waiting, kv         float64
	hasWaiting, hasKV   bool
	waitingWhen, kvWhen string
	kvName              string
}

func (pr *pressure) snapshot() pressureSnapshot {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pressureSnapshot{pr.scrapes, pr.waiting, pr.kv, pr.hasWaiting, pr.hasKV, pr.waitingWhen, pr.kvWhen, pr.kvName}
}

// watchPressure reads /metrics every PressureInterval in one goroutine until the returned stop
// is called (stop waits for it). A failed read is skipped: the scrape after the requests
// reports an unusable /metrics.
func (p *prober) watchPressure(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if wait.Sleep(ctx, PressureInterval) != nil {
				return
			}
			code, body, err := p.get(ctx, "/metrics")
			if err != nil || code != http.StatusOK {
				continue
			}
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				continue
			}
			p.press.observe(fams, 1, "while the probe's requests were in flight")
		}
	}()
	return func() { cancel(); <-done }
}
