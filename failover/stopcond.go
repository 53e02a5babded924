package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// MaxPrometheusAnswer bounds the body of one Prometheus query answer read.
const MaxPrometheusAnswer = 4 << 20

// StopResult is one evaluation of a stop condition: the query as sent, what came back and
// whether it passes. A condition that does not pass holds the run unless it is a dry run or
// overridden.
type StopResult struct {
	Name string `json:"name"`
	// Region is the region {{.Region}} was resolved to ("" for a query without it).
	Region string `json:"region,omitempty"`
	Query  string `json:"query"` // the resolved query, as sent
	// Value is the worst series' value (nil: no value: empty, NaN, an error).
	Value     *float64 `json:"value,omitempty"`
	Series    string   `json:"series,omitempty"` // the worst series' labels, when there are several
	Threshold string   `json:"threshold"`
	Pass      bool     `json:"pass"`
	// Why says how it was judged: "0.083 > max 0.05", "empty result (on_empty: hold)", "Prometheus: …".
	Why        string    `json:"why"`
	DryRun     bool      `json:"dry_run,omitempty"`
	Overridden bool      `json:"overridden,omitempty"`
	Attempts   int       `json:"attempts,omitempty"` // evaluations in this check (consecutive_failures)
	Time       time.Time `json:"time"`
	// Step is the plan step (0-based) the check was made before; nil for a plan's look.
	Step *int `json:"step,omitempty"`
}

// Holds reports whether the result holds a run.
func (r StopResult) Holds() bool { return !r.Pass && !r.DryRun && !r.Overridden }

// String is the result as a verdict line says it:
// "stop condition eu-error-ratio: 0.083 > max 0.05 (query: sum(rate(…)))".
func (r StopResult) String() string {
	name := r.Name
	if r.Region != "" {
		name += " (" + r.Region + ")"
	}
	s := fmt.Sprintf("stop condition %s: %s", name, r.Why)
	if r.Series != "" {
		s += " on " + r.Series
	}
	return s + " (query: " + r.Query + ")"
}

// Violation is the result as a hold record's violation: the rule is the condition's name.
func (r StopResult) Violation() Violation {
	return Violation{Rule: Rule(r.Name), Region: r.Region, Detail: r.Why, Query: r.Query, Value: r.Value, Threshold: r.Threshold, Series: r.Series}
}

// StopSample is one series of a query's answer.
type StopSample struct {
	Labels map[string]string
	Value  float64
}

// ErrPrometheus: Prometheus did not answer, or answered an error or something that is not a
// query result. It always holds.
var ErrPrometheus = errors.New("prometheus")

// ParseQueryAnswer reads the body of GET/POST /api/v1/query: an instant vector (any number of
// series) or a scalar. An error answer, a matrix or string result, or anything else is an
// error wrapping ErrPrometheus naming what came back.
func ParseQueryAnswer(code int, body []byte) ([]StopSample, error) {
	var a struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("%w: HTTP %d, not a query answer: %s", ErrPrometheus, code, providers.Sanitize(string(body), 200))
	}
	if a.Status != "success" {
		if a.Error == "" {
			a.Error = "status " + strconv.Quote(a.Status)
		}
		return nil, fmt.Errorf("%w: HTTP %d: %s: %s", ErrPrometheus, code, providers.Sanitize(a.ErrorType, 64), providers.Sanitize(a.Error, 300))
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%w: HTTP %d", ErrPrometheus, code)
	}
	var d struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(a.Data, &d); err != nil {
		return nil, fmt.Errorf("%w: the answer's data is not a query result: %v", ErrPrometheus, err)
	}
	switch d.ResultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  json.RawMessage   `json:"value"`
		}
		if err := json.Unmarshal(d.Result, &series); err != nil {
			return nil, fmt.Errorf("%w: a vector result that does not decode: %v", ErrPrometheus, err)
		}
		out := make([]StopSample, 0, len(series))
		for _, s := range series {
			v, err := sampleValue(s.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, StopSample{Labels: s.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		v, err := sampleValue(d.Result)
		if err != nil {
			return nil, err
		}
		return []StopSample{{Value: v}}, nil
	}
	return nil, fmt.Errorf("%w: result type %q: a stop condition wants an instant vector or a scalar", ErrPrometheus, providers.Sanitize(d.ResultType, 32))
}

// sampleValue decodes [time, "value"]; "NaN", "+Inf" and "-Inf" decode as such.
func sampleValue(raw json.RawMessage) (float64, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return 0, fmt.Errorf("%w: a sample is not [time, \"value\"]", ErrPrometheus)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return 0, fmt.Errorf("%w: a sample's value is not a string", ErrPrometheus)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: a sample's value %q is not a number", ErrPrometheus, providers.Sanitize(s, 40))
	}
	return v, nil
}

// Judge decides a condition from its query's samples (err: the query failed). An error, an
// empty result under on_empty: hold, and a NaN or infinite value never pass; of several series
// the one furthest past (or nearest to) the threshold is the one reported.
func Judge(c *fleet.StopCondition, samples []StopSample, err error) StopResult {
	r := StopResult{Name: c.Name, Threshold: c.Threshold(), DryRun: c.DryRun}
	switch {
	case err != nil:
		r.Why = "no value: " + err.Error()
		return r
	case len(samples) == 0 && c.OnEmpty == fleet.OnEmptyPass:
		r.Pass, r.Why = true, "empty result (on_empty: pass)"
		return r
	case len(samples) == 0:
		r.Why = "empty result: the query returned no series (on_empty: hold)"
		return r
	}
	worst, score := -1, math.Inf(-1)
	for i, s := range samples {
		if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
			r.Why = fmt.Sprintf("the value is %s, not a number to judge", FormatStopValue(s.Value))
			if len(samples) > 1 {
				r.Series = seriesName(s.Labels)
			}
			return r
		}
		// how far past the threshold (positive: broken); the largest is the worst
		sc := math.Inf(-1)
		if c.Max != nil {
			sc = s.Value - *c.Max
		}
		if c.Min != nil {
			sc = math.Max(sc, *c.Min-s.Value)
		}
		if worst < 0 || sc > score {
			worst, score = i, sc
		}
	}
	s := samples[worst]
	v := s.Value
	r.Value = &v
	if len(samples) > 1 {
		r.Series = seriesName(s.Labels)
	}
	switch {
	case c.Max != nil && v > *c.Max:
		r.Why = fmt.Sprintf("%s > max %s", FormatStopValue(v), fleet.FormatValue(*c.Max))
	case c.Min != nil && v < *c.Min:
		r.Why = fmt.Sprintf("%s < min %s", FormatStopValue(v), fleet.FormatValue(*c.Min))
	default:
		r.Pass, r.Why = true, fmt.Sprintf("%s within %s", FormatStopValue(v), r.Threshold)
	}
	return r
}

// FormatStopValue prints a value with at most 4 significant digits.
func FormatStopValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func seriesName(labels map[string]string) string {
	if len(labels) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return providers.Sanitize("{"+strings.Join(parts, ", ")+"}", 300)
}

// StopChecker evaluates a fleet's stop conditions against its Prometheus.
type StopChecker struct {
	Fleet *fleet.Fleet
	// Client sends the queries; nil: a client that follows no redirect to another host.
	Client *http.Client
	// Getenv reads the credentials' variables; nil: os.Getenv.
	Getenv func(string) string
	Now    func() time.Time

	init   sync.Once
	client *http.Client
}

func (c *StopChecker) httpClient() *http.Client {
	c.init.Do(func() {
		c.client = c.Client
		if c.client == nil {
			c.client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) > 0 && req.URL.Host != via[0].URL.Host {
					return errors.New("a redirect to another host is not followed")
				}
				return nil
			}}
		}
	})
	return c.client
}

func (c *StopChecker) now() time.Time {
	if c.Now != nil {
		return c.Now().UTC()
	}
	return time.Now().UTC()
}

// Query sends one instant query (POST /api/v1/query) bounded by prometheus.timeout and reads at
// most MaxPrometheusAnswer bytes of the answer. Errors never carry a credential.
func (c *StopChecker) Query(ctx context.Context, q string) ([]StopSample, error) {
	p := c.Fleet.Prometheus
	if p == nil {
		return nil, fmt.Errorf("%w: the fleet has no prometheus section", ErrPrometheus)
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/api/v1/query", strings.NewReader(url.Values{"query": {q}}.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPrometheus, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	switch {
	case p.BearerTokenEnv != "":
		tok := getenv(p.BearerTokenEnv)
		if tok == "" {
			return nil, fmt.Errorf("%w: prometheus.bearer_token_env: %s is not set", ErrPrometheus, p.BearerTokenEnv)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	case p.BasicAuth != nil:
		pw := getenv(p.BasicAuth.PasswordEnv)
		if pw == "" {
			return nil, fmt.Errorf("%w: prometheus.basic_auth.password_env: %s is not set", ErrPrometheus, p.BasicAuth.PasswordEnv)
		}
		req.SetBasicAuth(p.BasicAuth.Username, pw)
	}
	where := providers.Redact(p.URL) // the fleet file's URL; a token in its query is not repeated
	resp, err := c.httpClient().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the fleet file; the error alone says what happened
		}
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w at %s did not answer within prometheus.timeout %s", ErrPrometheus, where, p.Timeout)
		}
		return nil, fmt.Errorf("%w at %s did not answer: %v", ErrPrometheus, where, err)
	}
	defer resp.Body.Close()
	body, err := router.ReadBoundedN(resp.Body, MaxPrometheusAnswer)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: reading the answer: %v", ErrPrometheus, where, err)
	}
	samples, err := ParseQueryAnswer(resp.StatusCode, body)
	if err != nil {
		return nil, fmt.Errorf("%w (at %s)", err, where)
	}
	return samples, nil
}

// StopScope is what a write changes: the classes and regions whose weight or state it moves.
// A condition scoped to regions or classes is evaluated only when the write touches one.
type StopScope struct {
	Classes []string
	Regions []string
}

// stepScope is what step st changes from the router state cur.
func stepScope(cur router.RouterState, st *Step) StopScope {
	classes, regions := map[string]bool{}, map[string]bool{}
	for c, w := range st.Weights {
		for r, x := range w {
			if cur.Weights[c][r] != x {
				classes[c], regions[r] = true, true
			}
		}
		for r := range cur.Weights[c] {
			if _, ok := w[r]; !ok && cur.Weights[c][r] != 0 {
				classes[c], regions[r] = true, true
			}
		}
	}
	for c, sts := range st.States {
		for r, s := range sts {
			if cur.States.Get(c, r) != s {
				classes[c], regions[r] = true, true
			}
		}
	}
	for _, r := range append(slices.Clone(st.Drain), st.Withdraw...) {
		regions[r] = true
	}
	return StopScope{Classes: slices.Sorted(maps.Keys(classes)), Regions: slices.Sorted(maps.Keys(regions))}
}

// planScope is what the whole plan changes.
func planScope(p *Plan) StopScope {
	var sc StopScope
	for k := range p.Steps {
		s := stepScope(p.After(k-1), p.Steps[k])
		sc.Classes = append(sc.Classes, s.Classes...)
		sc.Regions = append(sc.Regions, s.Regions...)
	}
	slices.Sort(sc.Classes)
	slices.Sort(sc.Regions)
	return StopScope{Classes: slices.Compact(sc.Classes), Regions: slices.Compact(sc.Regions)}
}

// regionsFor are the regions a condition is evaluated for within scope: nil (and false) when
// out of scope; [""] for a query without {{.Region}}.
func regionsFor(c *fleet.StopCondition, sc StopScope) ([]string, bool) {
	if len(c.Classes) > 0 && !slices.ContainsFunc(c.Classes, func(x string) bool { return slices.Contains(sc.Classes, x) }) {
		return nil, false
	}
	in := sc.Regions
	if len(c.Regions) > 0 {
		in = slices.DeleteFunc(slices.Clone(c.Regions), func(r string) bool { return !slices.Contains(sc.Regions, r) })
		if len(in) == 0 {
			return nil, false
		}
	}
	if !c.PerRegion {
		return []string{""}, true
	}
	if len(in) == 0 {
		return nil, false
	}
	return in, true
}

// once evaluates a condition for one region, once.
func (c *StopChecker) once(ctx context.Context, cond *fleet.StopCondition, region string) StopResult {
	q, err := cond.ResolveQuery(region)
	var samples []StopSample
	if err == nil {
		samples, err = c.Query(ctx, q)
	}
	r := Judge(cond, samples, err)
	r.Region, r.Query, r.Time, r.Attempts = region, q, c.now(), 1
	return r
}

// Check evaluates every condition in scope before a write. A failing condition with
// consecutive_failures N is evaluated again, interval apart, and holds only when N evaluations
// in a row failed; an overridden one is not queried. The results come back in file order.
func (c *StopChecker) Check(ctx context.Context, sc StopScope, overrides []Rule) ([]StopResult, error) {
	var out []StopResult
	for i := range c.Fleet.StopConditions {
		cond := &c.Fleet.StopConditions[i]
		regions, ok := regionsFor(cond, sc)
		if !ok {
			continue
		}
		for _, region := range regions {
			if slices.Contains(overrides, Rule(cond.Name)) {
				q, _ := cond.ResolveQuery(region)
				out = append(out, StopResult{Name: cond.Name, Region: region, Query: q, Threshold: cond.Threshold(), Pass: true, Overridden: true,
					Why: "not evaluated: overridden (--override " + cond.Name + ")", Time: c.now()})
				continue
			}
			r := c.once(ctx, cond, region)
			for n := 1; !r.Pass && n < cond.ConsecutiveFailures; n++ {
				if err := wait.Sleep(ctx, cond.Interval); err != nil {
					return out, err
				}
				r = c.once(ctx, cond, region)
				r.Attempts = n + 1
			}
			if !r.Pass && cond.ConsecutiveFailures > 1 {
				r.Why += fmt.Sprintf(" (%d evaluations in a row, %s apart)", cond.ConsecutiveFailures, cond.Interval)
			}
			if err := ctx.Err(); err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Look evaluates every condition once for a plan (no re-evaluation, overrides shown as such):
// `failover plan` prints what each reads now. A condition the plan does not touch is still
// evaluated when its query needs no region.
func (c *StopChecker) Look(ctx context.Context, p *Plan, overrides []Rule) []StopResult {
	sc := planScope(p)
	var out []StopResult
	for i := range c.Fleet.StopConditions {
		cond := &c.Fleet.StopConditions[i]
		regions, ok := regionsFor(cond, sc)
		if !ok {
			regions = cond.Regions
			if !cond.PerRegion || len(regions) == 0 {
				regions = []string{""}
			}
		}
		for _, region := range regions {
			if cond.PerRegion && region == "" {
				out = append(out, StopResult{Name: cond.Name, Query: cond.Query, Threshold: cond.Threshold(), Pass: true, DryRun: cond.DryRun,
					Why: "not evaluated: the plan touches no region to resolve {{.Region}} for", Time: c.now()})
				continue
			}
			r := c.once(ctx, cond, region)
			if !ok {
				r.Why += " (outside this plan's scope: not checked by it)"
			}
			if slices.Contains(overrides, Rule(cond.Name)) {
				r.Overridden = true
				r.Why += " (overridden: --override " + cond.Name + ")"
			}
			out = append(out, r)
		}
	}
	return out
}

// ParseOverride checks a --override argument against the rules and the fleet's stop
// conditions (whose names are rule names too). stopOnly accepts stop conditions only (resume:
// the rules a run was planned under stay as journaled).
func ParseOverride(f *fleet.Fleet, s string, stopOnly bool) (Rule, error) {
	if f.StopCondition(s) != nil {
		return Rule(s), nil
	}
	names := f.StopConditionNames()
	if stopOnly {
		if len(names) == 0 {
			return "", fmt.Errorf("%q: resume overrides stop conditions only, and the fleet has none (the rules a run was planned under stay as journaled)", s)
		}
		return "", fmt.Errorf("%q: resume overrides stop conditions only (the fleet's: %s)%s", s, strings.Join(names, ", "), fleet.DidYouMean(s, names))
	}
	r, err := ParseRule(s)
	if err == nil || len(names) == 0 || slices.Contains(Rules, Rule(s)) {
		return r, err
	}
	all := names
	for _, x := range Rules {
		if x.Overridable() {
			all = append(all, string(x))
		}
	}
	return "", fmt.Errorf("unknown rule %q (overridable: %s; the fleet's stop conditions: %s)%s", s, strings.Join(all[len(names):], ", "), strings.Join(names, ", "), fleet.DidYouMean(s, all))
}
