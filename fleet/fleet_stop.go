package fleet

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

// Prometheus is the `prometheus:` section: the server whose instant queries stop conditions
// ask. Its credentials are named, never written: a bearer token or a basic-auth password is read
// from Lifeboat's own environment when a query is sent, and never printed, journaled or logged.
type Prometheus struct {
	URL     string        `json:"url"`
	Timeout time.Duration `json:"timeout"`
	// BearerTokenEnv names the variable that holds a bearer token (Authorization: Bearer).
	BearerTokenEnv string `json:"bearer_token_env,omitempty"`
	// BasicAuth: a user name and the variable that holds the password.
	BasicAuth *BasicAuth `json:"basic_auth,omitempty"`
	// Headers are sent with every query (a tenant header such as X-Scope-OrgID); they are not
	// secret, and may not set Authorization.
	Headers map[string]string `json:"headers,omitempty"`
}

// BasicAuth is prometheus.basic_auth: {username, password_env}.
type BasicAuth struct {
	Username    string `json:"username"`
	PasswordEnv string `json:"password_env"`
}

// DefaultPrometheusTimeout bounds one query when prometheus.timeout is unset.
const DefaultPrometheusTimeout = 10 * time.Second

// MaxPrometheusTimeout bounds prometheus.timeout: a query never holds a step up for long.
const MaxPrometheusTimeout = 5 * time.Minute

// The values of a stop condition's on_empty.
const (
	OnEmptyHold = "hold" // the default: an empty or NaN result never passes
	OnEmptyPass = "pass" // an empty result passes (a query that is legitimately empty); NaN still holds
)

// DefaultStopInterval is how far apart the evaluations of one check are when a condition with
// consecutive_failures above 1 fails.
const DefaultStopInterval = 10 * time.Second

// StopCondition is one item of `stop_conditions:`: a PromQL instant query and the range its
// value must stay in. It is evaluated before every router write of a failover and of a drill;
// a failing one holds the run. Its name is a rule name: `--override NAME` bypasses it.
type StopCondition struct {
	Name string `json:"name"`
	Line int    `json:"-"` // where it is defined in the fleet file
	// Query is the PromQL; with {{.Region}} it is a template resolved for each region in scope.
	Query string   `json:"query"`
	Max   *float64 `json:"max,omitempty"` // fails above
	Min   *float64 `json:"min,omitempty"` // fails below
	// OnEmpty is what an empty result means: OnEmptyHold (the default) or OnEmptyPass.
	OnEmpty string `json:"on_empty"`
	// ConsecutiveFailures: a check holds only after this many failing evaluations in a row,
	// Interval apart (default 1: the first failure holds).
	ConsecutiveFailures int           `json:"consecutive_failures"`
	Interval            time.Duration `json:"interval"`
	// DryRun: evaluated and reported, never holds.
	DryRun bool `json:"dry_run,omitempty"`
	// Regions and Classes scope it: evaluated only before a write that changes one of these
	// regions (or classes). Empty: every write.
	Regions []string `json:"regions,omitempty"`
	Classes []string `json:"classes,omitempty"`
	// PerRegion: the query uses {{.Region}}.
	PerRegion bool `json:"per_region,omitempty"`
}

// Threshold is the range the condition's value must stay in: "max 0.05", "min 0.9" or both.
func (c *StopCondition) Threshold() string {
	var parts []string
	if c.Max != nil {
		parts = append(parts, "max "+FormatValue(*c.Max))
	}
	if c.Min != nil {
		parts = append(parts, "min "+FormatValue(*c.Min))
	}
	return strings.Join(parts, ", ")
}

// FormatValue is a value as the stop conditions print it: the shortest form that reads back.
func FormatValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ResolveQuery is the query as sent for region ("" when the query does not use {{.Region}}).
func (c *StopCondition) ResolveQuery(region string) (string, error) {
	if !c.PerRegion {
		return c.Query, nil
	}
	t, err := queryTemplate(c.Query)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, struct{ Region string }{region}); err != nil {
		return "", err
	}
	return b.String(), nil
}

func queryTemplate(q string) (*template.Template, error) {
	return template.New("query").Option("missingkey=error").Parse(q)
}

var headerNameRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// reservedStopNames are the failover's own rule names (failover.Rules): a stop condition's
// name is a rule name too, so it may not be one of them.
var reservedStopNames = []string{"residency", "nonzero", "totals", "step_percent", "headroom", "spill_cap", "warm", "drain_before_withdraw", "max_transitions", "failback_dwell"}

// ReservedStopNames returns the names a stop condition may not take.
func ReservedStopNames() []string { return slices.Clone(reservedStopNames) }

// StopCondition returns the condition named name; nil when the fleet has none by that name.
func (f *Fleet) StopCondition(name string) *StopCondition {
	for i := range f.StopConditions {
		if f.StopConditions[i].Name == name {
			return &f.StopConditions[i]
		}
	}
	return nil
}

// StopConditionNames are the fleet's stop conditions' names, in file order.
func (f *Fleet) StopConditionNames() []string {
	out := make([]string, 0, len(f.StopConditions))
	for _, c := range f.StopConditions {
		out = append(out, c.Name)
	}
	return out
}

// number decodes any finite number.
func (p *fleetParser) number(n *yaml.Node, at string) *float64 {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errf(n.Line, at, "want a number, got %s", kindName(n))
		return nil
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		p.errf(n.Line, at, "want a finite number, got %s", n.Value)
		return nil
	}
	return &v
}

// envName decodes the name of an environment variable (never its value).
func (p *fleetParser) envName(n *yaml.Node, at, example string) string {
	v := p.str(n, at, true)
	if v != "" && !envNameRE.MatchString(v) {
		p.errf(n.Line, at, "want the name of an environment variable (such as %s) that holds the secret, not the secret itself", example)
		return ""
	}
	return v
}

// prometheus decodes `prometheus: {url, timeout, bearer_token_env | basic_auth, headers}`.
func (p *fleetParser) prometheus(n *yaml.Node, at string) *Prometheus {
	pr := &Prometheus{Timeout: DefaultPrometheusTimeout}
	p.lines.field[at] = n.Line
	p.lines.prometheus = n.Line
	var urlSeen bool
	p.mapping(n, at, false, map[string]func(*yaml.Node, string){
		"url": func(n *yaml.Node, at string) { urlSeen = true; pr.URL = p.httpURL(n, at) },
		"timeout": func(n *yaml.Node, at string) {
			if pr.Timeout = p.Duration(n, at); pr.Timeout > MaxPrometheusTimeout {
				p.errf(n.Line, at, "at most %s: a query never holds a step up for long", MaxPrometheusTimeout)
			}
		},
		"bearer_token_env": func(n *yaml.Node, at string) { pr.BearerTokenEnv = p.envName(n, at, "PROMETHEUS_TOKEN") },
		"basic_auth": func(n *yaml.Node, at string) {
			b := &BasicAuth{}
			var pwSeen bool
			p.mapping(n, at, false, map[string]func(*yaml.Node, string){
				"username":     func(n *yaml.Node, at string) { b.Username = p.str(n, at, true) },
				"password_env": func(n *yaml.Node, at string) { pwSeen = true; b.PasswordEnv = p.envName(n, at, "PROMETHEUS_PASSWORD") },
				"password": func(n *yaml.Node, at string) {
					pwSeen = true
					p.errf(n.Line, at, "a password is a secret and does not belong in the fleet file: give password_env: VAR (the variable holding it)")
				},
			})
			if n.Kind == yaml.MappingNode && b.Username == "" {
				p.errf(n.Line, at+".username", "required")
			}
			if n.Kind == yaml.MappingNode && !pwSeen {
				p.errf(n.Line, at+".password_env", "required: the variable holding the password")
			}
			pr.BasicAuth = b
		},
		"headers": func(n *yaml.Node, at string) {
			pr.Headers = map[string]string{}
			p.eachKey(n, at, func(k, v *yaml.Node, at string) {
				name := http.CanonicalHeaderKey(k.Value)
				switch {
				case !headerNameRE.MatchString(k.Value):
					p.errf(k.Line, at, "not an HTTP header name")
				case name == "Authorization" || name == "Proxy-Authorization" || name == "Cookie":
					p.errf(k.Line, at, "%s carries a secret: give bearer_token_env or basic_auth instead", name)
				default:
					if s := p.str(v, at, true); s != "" {
						pr.Headers[name] = s
					}
				}
			})
		},
	})
	if n.Kind == yaml.MappingNode && !urlSeen {
		p.errf(n.Line, at+".url", "required: the Prometheus server's base URL (http://prometheus.monitoring:9090)")
	}
	if pr.BearerTokenEnv != "" && pr.BasicAuth != nil {
		p.errf(n.Line, at, "bearer_token_env and basic_auth both set: name one")
	}
	return pr
}

// stopConditions decodes the `stop_conditions:` list.
func (p *fleetParser) stopConditions(f *Fleet, n *yaml.Node, at string) {
	p.lines.stop = n.Line
	if n.Kind != yaml.SequenceNode {
		p.errf(n.Line, at, "want a list of conditions ({name: NAME, query: PROMQL, max: N}), got %s", kindName(n))
		return
	}
	names := map[string]int{}
	for i, item := range n.Content {
		at := fmt.Sprintf("%s[%d]", at, i)
		c := StopCondition{Line: item.Line, OnEmpty: OnEmptyHold, ConsecutiveFailures: 1, Interval: DefaultStopInterval}
		var intervalSeen bool
		p.mapping(item, at, false, map[string]func(*yaml.Node, string){
			"name": func(n *yaml.Node, at string) {
				c.Name = p.str(n, at, true)
				switch {
				case c.Name == "":
				case !validStopName(c.Name):
					p.errf(n.Line, at, "%q: want a name of letters, digits, '.', '_' and '-' (it is what --override names)", c.Name)
				case slices.Contains(reservedStopNames, c.Name):
					p.errf(n.Line, at, "%q is a failover rule's name: name the condition otherwise (--override names either)", c.Name)
				case names[c.Name] > 0:
					p.errf(n.Line, at, "condition %q is named twice (also on line %d)", c.Name, names[c.Name])
				default:
					names[c.Name] = n.Line
				}
			},
			"query": func(n *yaml.Node, at string) {
				c.Query = p.str(n, at, true)
				if c.Query == "" || !strings.Contains(c.Query, "{{") {
					return
				}
				t, err := queryTemplate(c.Query)
				if err == nil {
					err = t.Execute(new(strings.Builder), struct{ Region string }{"r"})
				}
				if err != nil {
					p.errf(n.Line, at, "a query template may use {{.Region}} only: %v", err)
					return
				}
				c.PerRegion = true
			},
			"max": func(n *yaml.Node, at string) { c.Max = p.number(n, at) },
			"min": func(n *yaml.Node, at string) { c.Min = p.number(n, at) },
			"on_empty": func(n *yaml.Node, at string) {
				c.OnEmpty = p.str(n, at, true)
				if c.OnEmpty != "" && c.OnEmpty != OnEmptyHold && c.OnEmpty != OnEmptyPass {
					p.errf(n.Line, at, "want hold (the default: an empty result never passes) or pass (for a query that is legitimately empty), got %q%s",
						c.OnEmpty, DidYouMean(c.OnEmpty, []string{OnEmptyHold, OnEmptyPass}))
				}
			},
			"consecutive_failures": func(n *yaml.Node, at string) { c.ConsecutiveFailures = p.IntIn(n, at, 1, 100) },
			"interval":             func(n *yaml.Node, at string) { intervalSeen = true; c.Interval = p.Duration(n, at) },
			"dry_run":              func(n *yaml.Node, at string) { c.DryRun = p.boolean(n, at) },
			"regions": func(n *yaml.Node, at string) {
				c.Regions = p.StrList(n, at, "region names")
				p.lines.field[at] = n.Line
			},
			"classes": func(n *yaml.Node, at string) {
				c.Classes = p.StrList(n, at, "tenant class names")
				p.lines.field[at] = n.Line
			},
		})
		if item.Kind != yaml.MappingNode {
			continue
		}
		if c.Name == "" && !hasKey(item, "name") {
			p.errf(item.Line, at+".name", "required (a rule name: --override NAME bypasses it)")
		}
		if c.Query == "" && !hasKey(item, "query") {
			p.errf(item.Line, at+".query", "required: a PromQL instant query")
		}
		if c.Max == nil && c.Min == nil && !hasKey(item, "max") && !hasKey(item, "min") {
			p.errf(item.Line, at, "give max: (fails above it), min: (fails below it) or both")
		}
		if c.Max != nil && c.Min != nil && *c.Min > *c.Max {
			p.errf(item.Line, at, "min %s is above max %s: no value could pass", FormatValue(*c.Min), FormatValue(*c.Max))
		}
		if intervalSeen && c.ConsecutiveFailures == 1 && !hasKey(item, "consecutive_failures") {
			p.errf(item.Line, at+".interval", "only used with consecutive_failures above 1 (the time between the evaluations of one check)")
		}
		f.StopConditions = append(f.StopConditions, c)
	}
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func validStopName(s string) bool {
	if len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// checkStop: conditions need a prometheus section; their scopes name defined regions and classes.
func (p *fleetParser) checkStop(f *Fleet) {
	if len(f.StopConditions) > 0 && f.Prometheus == nil {
		p.errf(p.lines.stop, "prometheus", "required with stop_conditions: the server they query (prometheus: {url: http://prometheus.monitoring:9090})")
	}
	if f.Prometheus != nil && len(f.StopConditions) == 0 {
		p.errf(p.lines.prometheus, "stop_conditions", "prometheus is set and no stop condition queries it: add stop_conditions or remove prometheus")
	}
	classes := slices.Sorted(maps.Keys(f.Tenants))
	for i, c := range f.StopConditions {
		at := fmt.Sprintf("stop_conditions[%d]", i)
		for _, r := range c.Regions {
			if f.Regions[r] == nil {
				p.errf(c.Line, at+".regions", "region %q is not defined under regions%s", r, DidYouMean(r, f.RegionNames()))
			}
		}
		for _, cl := range c.Classes {
			if _, ok := f.Tenants[cl]; !ok {
				p.errf(c.Line, at+".classes", "tenant class %q is not defined under tenants%s", cl, DidYouMean(cl, classes))
			}
		}
	}
}
