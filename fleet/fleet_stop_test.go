package fleet_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet"
)

func TestParseStopConditions(t *testing.T) {
	data, err := os.ReadFile("testdata/fleet/stop-conditions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse(data, "fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := f.Prometheus
	if p.URL != "http://prometheus.monitoring:9090" || p.Timeout != 5*time.Second || p.BearerTokenEnv != "PROMETHEUS_TOKEN" || p.Headers["X-Scope-Orgid"] != "dr" {
		t.Errorf("prometheus %+v", p)
	}
	if got := f.StopConditionNames(); !slices.Equal(got, []string{"eu-error-ratio", "receiver-waiting", "availability", "errors-if-any"}) {
		t.Fatalf("names %v", got)
	}
	c := f.StopCondition("eu-error-ratio")
	if *c.Max != 0.05 || c.Min != nil || c.OnEmpty != fleet.OnEmptyHold || c.ConsecutiveFailures != 1 || c.DryRun || c.PerRegion || c.Line != 14 {
		t.Errorf("defaults %+v", c)
	}
	w := f.StopCondition("receiver-waiting")
	q, err := w.ResolveQuery("eu-west-1")
	if err != nil || q != `max(vllm:num_requests_waiting{region="eu-west-1"})` || !w.PerRegion || w.ConsecutiveFailures != 3 || w.Interval != 15*time.Second {
		t.Errorf("templated %+v: %q %v", w, q, err)
	}
	if a := f.StopCondition("availability"); !a.DryRun || *a.Min != 0.9 || a.Threshold() != "min 0.9" || !slices.Equal(a.Classes, []string{"eu-only"}) {
		t.Errorf("availability %+v", a)
	}
	if f.StopCondition("errors-if-any").OnEmpty != fleet.OnEmptyPass {
		t.Error("on_empty: pass")
	}
}

func TestParseStopConditionErrors(t *testing.T) {
	const head = "model: {name: demo, manifest: m.json}\nregions: {eu-west-1: {replica: ./r}}\ntenants: {g: [eu-west-1]}\n"
	const prom = "prometheus: {url: 'http://127.0.0.1:9090'}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"no prometheus", head + "stop_conditions:\n  - {name: a, query: up, max: 1}\n", "fleet.yaml:5: prometheus: required with stop_conditions"},
		{"prometheus alone", head + prom, "stop_conditions: prometheus is set and no stop condition queries it"},
		{"no url", head + "prometheus: {timeout: 3s}\nstop_conditions: [{name: a, query: up, max: 1}]\n", "fleet.yaml:4: prometheus.url: required"},
		{"token in url", head + "prometheus: {url: 'http://u:p@127.0.0.1:9090'}\nstop_conditions: [{name: a, query: up, max: 1}]\n", "prometheus.url: credentials do not belong in the URL"},
		{"token itself", head + "prometheus: {url: 'http://127.0.0.1:9090', bearer_token_env: 'eyJhbGciOi.x-y'}\nstop_conditions: [{name: a, query: up, max: 1}]\n", "prometheus.bearer_token_env: want the name of an environment variable"},
		{"password", head + "prometheus: {url: 'http://127.0.0.1:9090', basic_auth: {username: u, password: p}}\nstop_conditions: [{name: a, query: up, max: 1}]\n", "prometheus.basic_auth.password: a password is a secret"},
		{"auth header", head + "prometheus: {url: 'http://127.0.0.1:9090', headers: {authorization: x}}\nstop_conditions: [{name: a, query: up, max: 1}]\n", "Authorization carries a secret"},
		{"no threshold", head + prom + "stop_conditions:\n  - {name: a, query: up}\n", "fleet.yaml:6: stop_conditions[0]: give max:"},
		{"no query", head + prom + "stop_conditions:\n  - {name: a, max: 1}\n", "fleet.yaml:6: stop_conditions[0].query: required"},
		{"no name", head + prom + "stop_conditions:\n  - {query: up, max: 1}\n", "stop_conditions[0].name: required"},
		{"twice", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1}\n  - {name: a, query: up, max: 2}\n", "fleet.yaml:7: stop_conditions[1].name: condition \"a\" is named twice (also on line 6)"},
		{"rule name", head + prom + "stop_conditions:\n  - {name: warm, query: up, max: 1}\n", "\"warm\" is a failover rule's name"},
		{"min above max", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, min: 2}\n", "min 2 is above max 1"},
		{"on_empty typo", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, on_empty: pas}\n", "(did you mean pass?)"},
		{"unknown key", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, maximum: 2}\n", "fleet.yaml:6: stop_conditions[0].maximum: unknown key"},
		{"bad template", head + prom + "stop_conditions:\n  - {name: a, query: 'up{r=\"{{.Zone}}\"}', max: 1}\n", "stop_conditions[0].query: a query template may use {{.Region}} only"},
		{"undefined region", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, regions: [eu-wset-1]}\n", "region \"eu-wset-1\" is not defined under regions (did you mean eu-west-1?)"},
		{"undefined class", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, classes: [h]}\n", "tenant class \"h\" is not defined"},
		{"max not number", head + prom + "stop_conditions:\n  - {name: a, query: up, max: high}\n", "stop_conditions[0].max: want a number"},
		{"interval alone", head + prom + "stop_conditions:\n  - {name: a, query: up, max: 1, interval: 5s}\n", "only used with consecutive_failures above 1"},
		{"not a list", head + prom + "stop_conditions: {a: 1}\n", "stop_conditions: want a list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := fleet.Parse([]byte(c.yaml), "fleet.yaml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q in\n%v", c.want, err)
			}
		})
	}
}
