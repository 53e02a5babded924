package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/spf13/cobra"

	"lifeboat/failover"
	"lifeboat/fleet"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
	"lifeboat/verify"
	"lifeboat/verify/warm"
)

// watchFlags are `lifeboat watch`'s flags.
type watchFlags struct {
	fleet, signals, listen string
	interval, probeTimeout time.Duration
	verifyInterval         time.Duration
	verifyTimeout          time.Duration
	once                   bool
}

const watchLong = `Watch answers, all the time, "could we evacuate a region now?". Every --interval it makes,
for each region R, the plan 'lifeboat failover plan --region R' would make now — the same
planner, the same live input (the router, the journal, /health, /metrics and the warm prober on
every region) — and, for each tenant class of R, the plan of that class alone (--class C). It
serves the outcomes on /metrics in the Prometheus text format, with each region's health, warm
verdict and queue wait, the replica verification of each region (a quick verify, as check does,
every --verify-interval), the failover lock and router drift.

Watch is read-only: it never takes the lock, never writes the journal or the router.

Every probe is bounded: a region whose /health, /metrics or warm probe has not answered within
--probe-timeout counts as not healthy and not warm for that evaluation, and the regions are
probed concurrently, so one slow region never stalls the others. A scrape is served from the
last completed evaluation and never waits for one in progress.

With --signals FILE the weights and signals come from the recorded file, read again at every
evaluation (what-if dashboards, tests). --once evaluates once, prints the metrics text to stdout
and exits. docs/watch.md names every metric and label and shows example alerting rules.

Exit codes: 0 stopped (SIGINT, SIGTERM) or --once done; 2 bad input; 4 --listen could not be
served.`

func (a *app) watchCmd() *cobra.Command {
	var wf watchFlags
	c := &cobra.Command{
		Use:   "watch --fleet FILE [--listen ADDR] [--interval D] [--probe-timeout D] [--signals FILE] [--once]",
		Short: "Serve, as Prometheus metrics, what evacuating each region would do now (read-only)",
		Long:  watchLong,
		Example: `  lifeboat watch --fleet fleet.yaml --listen 0.0.0.0:9464
  lifeboat watch --fleet fleet.yaml --once`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runWatch(cmd.Context(), wf) },
	}
	f := c.Flags()
	f.StringVar(&wf.fleet, "fleet", "", "fleet file (required)")
	f.StringVar(&wf.listen, "listen", "127.0.0.1:9464", "address to serve /metrics on")
	f.DurationVar(&wf.interval, "interval", 30*time.Second, "how often to evaluate every region")
	f.DurationVar(&wf.probeTimeout, "probe-timeout", 10*time.Second, "bound on each region's probes (/health, /metrics, the warm prober) in one evaluation; under --interval")
	f.StringVar(&wf.signals, "signals", "", "recorded signals (JSON) instead of reading the router and probing the regions; read again at every evaluation")
	f.DurationVar(&wf.verifyInterval, "verify-interval", 15*time.Minute, "how often to quick-verify every region's replica (0: never)")
	f.DurationVar(&wf.verifyTimeout, "verify-timeout", 5*time.Minute, "bound on one replica's quick verification")
	f.BoolVar(&wf.once, "once", false, "evaluate once, print the metrics text to stdout and exit")
	return c
}

// watcher evaluates the fleet and keeps the last snapshot for the scrapes.
type watcher struct {
	a    *app
	f    *fleet.Fleet
	wf   watchFlags
	exec *failover.Executor
	snap atomic.Pointer[watchSnapshot]
	errs *prometheus.CounterVec

	mu       sync.Mutex
	verified map[string]replicaCheck
}

// replicaCheck is the last finished quick verification of a region's replica.
type replicaCheck struct {
	at     time.Time
	status verify.ReplicaStatus
}

// watchSnapshot is one completed evaluation.
type watchSnapshot struct {
	at      time.Time
	regions []regionWatch
	// lockKnown: the lock was read (lockHolder "" when it is free); drift: nil when the
	// router or the journal could not be read this time
	lockKnown  bool
	lockHolder string
	drift      *bool
}

// regionWatch is one region as one evaluation saw it, and what evacuating it would do.
type regionWatch struct {
	name          string
	healthy, warm bool
	queueWaitMS   *float64
	plan          outcome
	classes       map[string]outcome
	shed          map[string]float64
	checked       bool
}

// outcome is what a plan would reach: complete, held, shed or refused, and the rule.
type outcome struct {
	kind string
	rule string
}

var watchOutcomes = []string{"complete", "held", "shed", "refused"}

func planOutcome(p *failover.Plan, class string) outcome {
	switch {
	case p.Refused:
		return outcome{"refused", string(p.Rule)}
	case class != "" && p.Shed[class] > 0, class == "" && len(p.Shed) > 0:
		return outcome{"shed", string(p.Rule)}
	case !p.Complete:
		return outcome{"held", string(p.Rule)}
	}
	return outcome{kind: "complete"}
}

func (a *app) runWatch(ctx context.Context, wf watchFlags) error {
	if err := a.checkOutput("text"); err != nil {
		return err
	}
	f, err := a.loadFleet(wf.fleet)
	if err != nil {
		return err
	}
	if wf.interval <= 0 || wf.probeTimeout <= 0 || wf.verifyTimeout <= 0 || wf.verifyInterval < 0 {
		return usageErr("--interval, --probe-timeout and --verify-timeout must be positive, --verify-interval not negative")
	}
	if !wf.once && wf.probeTimeout >= wf.interval {
		return usageErr("--probe-timeout %s must be under --interval %s: an evaluation must end before the next one", wf.probeTimeout, wf.interval)
	}
	if f.State == "" {
		return usageErr("%s: state: required (watch reads the failover lock and journal there)", f.File)
	}
	if wf.signals != "" {
		if _, err := a.loadSignals(wf.signals, f); err != nil {
			return err
		}
	}
	rtr, err := fleet.OpenRouter(f)
	if err != nil {
		return usageErr("%v", err)
	}
	store, err := a.openStateStore(ctx, f.State)
	if err != nil {
		return err
	}
	defer store.Close()
	live := &failover.LiveSignals{Fleet: f, RequestTimeout: wf.probeTimeout, Probe: warm.ProbeOptions{Timeout: wf.probeTimeout}}
	w := &watcher{a: a, f: f, wf: wf, verified: map[string]replicaCheck{},
		exec: &failover.Executor{Fleet: f, Store: store, Router: rtr, Signals: &boundedSignals{inner: live, fleet: f, budget: wf.probeTimeout}, Log: slog.New(slog.DiscardHandler)},
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lifeboat_watch_evaluation_errors_total",
			Help: "Evaluations (or replica verifications) that failed, by stage: input (the router, the journal or the signals file), status (the lock and the journal's drift), verify (the manifest or a replica's store)."}, []string{"stage"}),
	}
	for _, s := range []string{"input", "status", "verify"} {
		w.errs.WithLabelValues(s)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.errs, &watchCollector{w: w})

	if wf.once {
		var wg sync.WaitGroup
		if wf.verifyInterval > 0 {
			wg.Go(func() { w.verifyReplicas(ctx) })
		}
		w.evaluate(ctx)
		wg.Wait()
		fams, err := reg.Gather()
		if err != nil {
			return err
		}
		enc := expfmt.NewEncoder(a.stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range fams {
			if err := enc.Encode(mf); err != nil {
				return err
			}
		}
		return nil
	}

	ln, err := net.Listen("tcp", wf.listen)
	if err != nil {
		return withCode(exitUnreachable, fmt.Errorf("--listen %s: %w", wf.listen, err))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: 10 * time.Second}))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.progressLog().Info("watch: serving /metrics", "listen", ln.Addr().String(), "interval", wf.interval.String(), "fleet", wf.fleet)

	var wg sync.WaitGroup
	if wf.verifyInterval > 0 {
		wg.Go(func() {
			for {
				w.verifyReplicas(ctx)
				if wait.Sleep(ctx, wf.verifyInterval) != nil {
					return
				}
			}
		})
	}
	for {
		next := time.Now().Add(wf.interval)
		w.evaluate(ctx)
		select {
		case <-ctx.Done():
		case err := <-served:
			return withCode(exitUnreachable, fmt.Errorf("--listen %s: %w", wf.listen, err))
		case <-time.After(time.Until(next)):
			continue
		}
		break
	}
	shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	wg.Wait()
	return nil // a watch ends when it is told to: SIGINT or SIGTERM is its normal end
}

// evaluate makes one snapshot: the live input once, then the plans for every region and class.
// It is bounded: the probes by --probe-timeout, everything by --interval.
func (w *watcher) evaluate(parent context.Context) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(parent, max(w.wf.interval, 3*w.wf.probeTimeout))
	defer cancel()
	snap := &watchSnapshot{at: start}
	// the lock and drift get --probe-timeout of their own: a slow state store or router read
	// here leaves the plans their time
	sctx, scancel := context.WithTimeout(ctx, w.wf.probeTimeout)
	st, err := w.exec.Status(sctx)
	scancel()
	if st == nil {
		w.errs.WithLabelValues("status").Inc()
	} else {
		snap.lockKnown = true
		if st.Lock != nil {
			snap.lockHolder = providers.Sanitize(st.Lock.Holder, 200)
		}
		if err == nil {
			d := len(st.Drift) > 0
			snap.drift = &d
		} else {
			w.errs.WithLabelValues("status").Inc() // the router: drift unknown this time
		}
	}
	in, err := w.input(ctx)
	if err != nil {
		w.errs.WithLabelValues("input").Inc()
		// the last completed snapshot stays served; its timestamp says how old it is
		w.a.progressLog().Warn("watch: no plan input this time: the last evaluation's metrics stay served", "error", err.Error())
		return
	}
	for _, r := range w.f.RegionNames() {
		sig, seen := in.Signals[r]
		rw := regionWatch{name: r, healthy: sig.Healthy, warm: sig.Warm, queueWaitMS: sig.QueueWaitMS, checked: seen,
			classes: map[string]outcome{}, shed: map[string]float64{}}
		one := in
		one.Event = failover.Event{Kind: failover.Evacuate, Region: r}
		rw.plan = planOutcome(failover.MakePlan(one), "")
		for _, c := range sortedClassNames(w.f) {
			if !slices.Contains(w.f.Tenants[c], r) {
				continue
			}
			alone := one
			alone.Only = []string{c}
			p := failover.MakePlan(alone)
			rw.classes[c] = planOutcome(p, c)
			rw.shed[c] = p.Shed[c] / 100
		}
		snap.regions = append(snap.regions, rw)
	}
	if parent.Err() == nil {
		w.snap.Store(snap)
	}
}

// input is what `failover plan` plans from: the signals file, or the live router, journal and
// probes. Hint is off: the per-class plans say what it would.
func (w *watcher) input(ctx context.Context) (failover.PlanInput, error) {
	if w.wf.signals == "" {
		in, err := w.exec.LiveInput(ctx, failover.RunOptions{Event: failover.Event{Kind: failover.Evacuate}})
		in.Hint = false
		return in, err
	}
	s, err := failover.ReadSignals(w.wf.signals, w.f)
	if err != nil {
		return failover.PlanInput{}, err
	}
	in := failover.InputFromFleet(w.f)
	in.Weights, in.States, in.Signals, in.Baseline, in.Transitions = s.Weights, s.States, s.Regions, s.Baseline, s.Transitions
	in.MaxWeight = w.exec.Router.MaxWeight()
	return in, nil
}

// verifyReplicas quick-verifies every region's replica, as check does, each bounded by
// --verify-timeout and concurrently: one slow store never holds back the others' results.
func (w *watcher) verifyReplicas(ctx context.Context) {
	mctx, cancel := context.WithTimeout(ctx, w.wf.verifyTimeout)
	m, err := w.a.readManifest(mctx, w.f.Model.Manifest)
	cancel()
	if err != nil {
		w.errs.WithLabelValues("verify").Inc()
		w.a.progressLog().Warn("watch: cannot read the manifest to verify the replicas", "error", err.Error())
		return
	}
	var wg sync.WaitGroup
	for _, name := range w.f.RegionNames() {
		r := w.f.Regions[name]
		if r.Replica == "" {
			continue
		}
		wg.Go(func() {
			vctx, cancel := context.WithTimeout(ctx, w.wf.verifyTimeout)
			defer cancel()
			st, err := w.a.openStore(vctx, r.Replica)
			if err != nil {
				w.errs.WithLabelValues("verify").Inc()
				w.setVerified(name, verify.ReplicaMisconfigured)
				return
			}
			defer st.Close()
			rep := verify.Replicas(vctx, m, []providers.Store{st}, verify.ModeQuick, verify.Options{})
			if ctx.Err() != nil || len(rep.Replicas) != 1 {
				return
			}
			w.setVerified(name, rep.Replicas[0].Status)
		})
	}
	wg.Wait()
}

func (w *watcher) setVerified(region string, s verify.ReplicaStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.verified[region] = replicaCheck{at: time.Now(), status: s}
}

// boundedSignals gives each evaluation's probes a deadline: a region that has not answered by
// then is not healthy and not warm this time, and the others' signals are used all the same.
type boundedSignals struct {
	inner  failover.SignalSource
	fleet  *fleet.Fleet
	budget time.Duration
}

func (b *boundedSignals) Signals(ctx context.Context, preflight bool) (map[string]failover.RegionSignal, error) {
	cctx, cancel := context.WithTimeout(ctx, b.budget)
	defer cancel()
	sig, err := b.inner.Signals(cctx, preflight)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	if sig == nil {
		sig = map[string]failover.RegionSignal{}
	}
	for _, r := range b.fleet.RegionNames() {
		if _, ok := sig[r]; !ok && b.fleet.Regions[r].Endpoint != "" {
			sig[r] = failover.RegionSignal{Why: fmt.Sprintf("no answer within --probe-timeout %s", b.budget)}
		}
	}
	return sig, err
}
