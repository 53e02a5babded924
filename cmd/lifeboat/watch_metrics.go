package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"lifeboat/verify"
)

// The metrics `lifeboat watch` serves; docs/watch.md says what each means.
var (
	descPlanOutcome = prometheus.NewDesc("lifeboat_evacuation_plan_outcome",
		"1 for the outcome 'lifeboat failover plan --region REGION' would have now (complete, held, shed, refused), 0 for the others; rule is the rule that holds, sheds or refuses it.",
		[]string{"region", "outcome", "rule"}, nil)
	descOutcome = prometheus.NewDesc("lifeboat_evacuation_outcome",
		"1 for the outcome evacuating REGION would have now for CLASS alone ('failover plan --region REGION --class CLASS'), 0 for the others; rule is the rule that holds, sheds or refuses it.",
		[]string{"region", "class", "outcome", "rule"}, nil)
	descShed = prometheus.NewDesc("lifeboat_evacuation_shed_ratio",
		"The share (0..1) of CLASS's traffic that evacuating REGION would leave unplaced now.",
		[]string{"region", "class"}, nil)
	descHealthy = prometheus.NewDesc("lifeboat_region_healthy",
		"1 when the region's /health answered 200 within --probe-timeout at the last evaluation.",
		[]string{"region"}, nil)
	descWarm = prometheus.NewDesc("lifeboat_region_warm",
		"1 when the warm prober's last verdict on the region is warm (a real generation answered) and it is healthy.",
		[]string{"region"}, nil)
	descWarmChecked = prometheus.NewDesc("lifeboat_region_warm_checked_timestamp_seconds",
		"When the region's warm verdict was last taken (Unix seconds).",
		[]string{"region"}, nil)
	descQueue = prometheus.NewDesc("lifeboat_region_queue_wait_seconds",
		"The region's estimated queue wait (waiting prefill tokens over its prefill capacity); absent when unknown.",
		[]string{"region"}, nil)
	descVerified = prometheus.NewDesc("lifeboat_replica_verified_timestamp_seconds",
		"When the region's replica was last quick-verified, whatever the result (Unix seconds).",
		[]string{"region"}, nil)
	descVerifyOK = prometheus.NewDesc("lifeboat_replica_verify_ok",
		"1 when the region's last quick verification found no gap (OK, or UNVERIFIED: nothing failed, some files not provable), as 'lifeboat check' passes; status is the replica's verdict.",
		[]string{"region", "status"}, nil)
	descDrift = prometheus.NewDesc("lifeboat_router_drift",
		"1 when the router routes differently from what the latest failover run's journal says it left; absent when the router or the journal could not be read.",
		nil, nil)
	descLock = prometheus.NewDesc("lifeboat_failover_lock_held",
		"1 while a failover holds the lock (holder names it), 0 when the lock is free.",
		[]string{"holder"}, nil)
	descLast = prometheus.NewDesc("lifeboat_watch_last_evaluation_timestamp_seconds",
		"When the last evaluation whose metrics are served started (Unix seconds).",
		nil, nil)
)

// watchCollector serves the watcher's last completed snapshot: a scrape never waits for an
// evaluation in progress.
type watchCollector struct{ w *watcher }

func (c *watchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPlanOutcome, descOutcome, descShed, descHealthy, descWarm, descWarmChecked, descQueue,
		descVerified, descVerifyOK, descDrift, descLock, descLast} {
		ch <- d
	}
}

func (c *watchCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	c.w.mu.Lock()
	for _, r := range c.w.f.RegionNames() {
		if v, ok := c.w.verified[r]; ok {
			gauge(descVerified, float64(v.at.UnixMilli())/1000, r)
			gauge(descVerifyOK, bool01(v.status == verify.ReplicaOK || v.status == verify.ReplicaUnverified), r, string(v.status))
		}
	}
	c.w.mu.Unlock()
	s := c.w.snap.Load()
	if s == nil {
		return
	}
	gauge(descLast, float64(s.at.UnixMilli())/1000)
	if s.drift != nil {
		gauge(descDrift, bool01(*s.drift))
	}
	if s.lockKnown {
		gauge(descLock, bool01(s.lockHolder != ""), s.lockHolder)
	}
	states := func(d *prometheus.Desc, o outcome, labels ...string) {
		for _, k := range watchOutcomes {
			rule := ""
			if k == o.kind {
				rule = o.rule
			}
			gauge(d, bool01(k == o.kind), append(labels, k, rule)...)
		}
	}
	for _, r := range s.regions {
		gauge(descHealthy, bool01(r.healthy), r.name)
		gauge(descWarm, bool01(r.warm), r.name)
		if r.checked {
			gauge(descWarmChecked, float64(s.at.UnixMilli())/1000, r.name)
		}
		if r.queueWaitMS != nil {
			gauge(descQueue, *r.queueWaitMS/1000, r.name)
		}
		states(descPlanOutcome, r.plan, r.name)
		for _, cl := range sortedClassNames(c.w.f) {
			o, ok := r.classes[cl]
			if !ok {
				continue
			}
			states(descOutcome, o, r.name, cl)
			gauge(descShed, r.shed[cl], r.name, cl)
		}
	}
}
