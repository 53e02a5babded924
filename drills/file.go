package drills

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"lifeboat/fleet"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/providers/localfile"
)

// Step names, in the default order. Teardown always runs last, whatever the order says.
const (
	StepVerify   = "verify"   // quick-verify every replica, deep for the candidates'; repair what failed from a good one
	StepBoot     = "boot"     // restore and boot a candidate of every region with a launcher; prove it warm
	StepEvacuate = "evacuate" // move the lost region's traffic away with the failover executor (ramped, journaled)
	StepTraffic  = "traffic"  // synthetic requests per tenant class through the serving path
	StepHold     = "hold"     // stay failed over for drill.hold
	StepFailback = "failback" // give the lost region its traffic back (dwell, ramp)
	StepReverify = "reverify" // quick-verify every replica again
	StepTeardown = "teardown" // stop what the drill started, undo its faults, check nothing is left
)

// DefaultSteps is the order a drill runs in when its file names none.
var DefaultSteps = []string{StepVerify, StepBoot, StepEvacuate, StepTraffic, StepHold, StepFailback, StepReverify, StepTeardown}

// Fault kinds a game day can inject.
const (
	FaultMissingFile       = "missing-file"       // delete path from region's replica
	FaultCorruptFile       = "corrupt-file"       // rewrite path in region's replica with the same size, other bytes
	FaultBootFails         = "boot-fails"         // region's candidate exits at launch
	FaultSaturate          = "saturate"           // region's candidate is launched saturated (args appended to its command)
	FaultRouterUnreachable = "router-unreachable" // the router answers nothing for duration, after after_step ramp steps
	FaultKillMidRamp       = "kill-mid-ramp"      // the orchestrator dies after applying ramp step after_step (before journaling it), and is resumed
)

// DefaultSaturateArgs are appended to a saturated candidate's command: the engine simulator's
// saturation flag. For a real vLLM, name the arguments that make it saturate (or point the
// region at a loaded pool).
const DefaultSaturateArgs = "--sim-saturate"

// Fault is one injected game-day fault.
type Fault struct {
	Name      string        `json:"name"`
	Kind      string        `json:"kind"`
	Region    string        `json:"region,omitempty"`
	Path      string        `json:"path,omitempty"`
	Args      string        `json:"args,omitempty"`
	AfterStep int           `json:"after_step,omitempty"`
	Duration  time.Duration `json:"-"`
	Line      int           `json:"-"`
}

// Expectation kinds.
const (
	ExpectDetected  = "detected"  // the named fault was detected
	ExpectResidency = "residency" // the class never landed, nor was weighted, outside its eligible regions
	ExpectWarm      = "warm"      // the region's candidate was proven warm
	ExpectNotWarm   = "not_warm"  // the region's candidate was judged not warm
	ExpectSLA       = "within_sla"
	ExpectFailback  = "failed_back" // the lost region got its baseline traffic back
)

// Expectation is one stated outcome; a drill fails when any is not met.
type Expectation struct {
	Kind        string `json:"kind"`
	Target      string `json:"target,omitempty"` // fault name, class or region
	Description string `json:"description"`
	Line        int    `json:"-"`
	Implied     bool   `json:"implied,omitempty"` // added by the drill itself (every fault must be detected)
}

// Traffic tunes the synthetic requests.
type Traffic struct {
	Requests  int           `json:"requests"` // per class in the traffic step
	Interval  time.Duration `json:"-"`        // background sampling during the ramp; 0: none
	MaxTokens int           `json:"max_tokens"`
	Timeout   time.Duration `json:"-"` // one request, whole stream
	Prompt    string        `json:"prompt"`
}

// Drill is a parsed drill file. Paths are resolved against the drill file's directory.
type Drill struct {
	File     string        `json:"file"`
	Name     string        `json:"name"`
	Fleet    string        `json:"fleet"`
	Lose     string        `json:"lose"`
	RTO      time.Duration `json:"-"` // 0: the fleet's sla.rto
	Steps    []string      `json:"steps"`
	Skip     []string      `json:"skip,omitempty"`
	Approve  []string      `json:"approve,omitempty"`
	Hold     time.Duration `json:"-"`
	Failback time.Duration `json:"-"` // how long the failback may wait for the dwell and ramp
	LockTTL  time.Duration `json:"-"`
	Traffic  Traffic       `json:"traffic"`
	Faults   []Fault       `json:"faults"`
	Expect   []Expectation `json:"expect"`
	// Calendar is when the drill does not start (timezone, blocked_windows, blocked_dates,
	// blocking_conditions).
	Calendar  Calendar `json:"-"`
	StepLines map[string]int
	// KeyLines is the line of each top-level key (lose, fleet, sla, skip, ...), for the
	// problems found when the drill is checked against its fleet.
	KeyLines map[string]int `json:"-"`
	// Source is the digest of the bytes parsed (set by Read; the report's evidence).
	Source FileDigest `json:"-"`
}

// Defaults of a drill file.
const (
	DefaultHold            = 10 * time.Second
	DefaultFailbackTimeout = 5 * time.Minute
	DefaultLockTTL         = 10 * time.Second
	DefaultRequests        = 8
	DefaultTrafficInterval = 500 * time.Millisecond
	DefaultMaxTokens       = 4
	DefaultRequestTimeout  = 30 * time.Second
	MaxRequests            = 1000
	MaxDrillBytes          = 1 << 20
)

// ErrInvalidDrill is matched by every error Parse returns.
var ErrInvalidDrill = errors.New("invalid drill file")

// DrillError lists every problem found in a drill file, each as "file:line: field: message".
type DrillError struct {
	Problems []string
	// Partial is what did decode, for checking it against the fleet all the same (so that
	// every mistake is reported at once); nil when the file is not a YAML mapping.
	Partial *Drill `json:"-"`
}

func (e *DrillError) Error() string        { return strings.Join(e.Problems, "\n") }
func (e *DrillError) Is(target error) bool { return target == ErrInvalidDrill }

// Read reads and parses a drill file (a regular file of at most MaxDrillBytes).
func Read(name string) (*Drill, error) {
	data, err := localfile.ReadFile(name, MaxDrillBytes)
	if err != nil {
		return nil, fmt.Errorf("drill file: %w", err)
	}
	d, err := Parse(data, name)
	if err != nil {
		return nil, err
	}
	d.Source = DigestBytes(name, data)
	return d, nil
}

// Parse decodes and checks a drill file. Every problem is reported at once, naming the file,
// line and field. The fleet is not read here (see Runner); names of regions and classes are
// checked against it when the drill runs.
func Parse(data []byte, name string) (*Drill, error) {
	c := &yamlnode.Checker{Name: name}
	d := &Drill{File: name, Hold: DefaultHold, Failback: DefaultFailbackTimeout, LockTTL: DefaultLockTTL, StepLines: map[string]int{},
		Traffic: Traffic{Requests: DefaultRequests, Interval: DefaultTrafficInterval, MaxTokens: DefaultMaxTokens, Timeout: DefaultRequestTimeout, Prompt: "Say hello."}}
	if len(data) > MaxDrillBytes {
		c.Errf(0, "", "larger than %d bytes", MaxDrillBytes)
		return nil, &DrillError{Problems: c.Problems}
	}
	root := c.Root(data, "a drill file")
	if root == nil {
		return nil, &DrillError{Problems: c.Problems}
	}
	lines := map[string]int{}
	d.KeyLines = lines
	for i := 0; i+1 < len(root.Content) && root.Kind == yaml.MappingNode; i += 2 {
		lines[root.Content[i].Value] = root.Content[i].Line
	}
	fields := yamlnode.Fields{
		"name":  func(n *yaml.Node, at string) { d.Name = c.Str(n, at, true); lines[at] = n.Line },
		"fleet": func(n *yaml.Node, at string) { d.Fleet = c.Str(n, at, true); lines[at] = n.Line },
		"lose":  func(n *yaml.Node, at string) { d.Lose = c.Str(n, at, true); lines[at] = n.Line },
		"sla": func(n *yaml.Node, at string) {
			c.Mapping(n, at, false, yamlnode.Fields{"rto": func(n *yaml.Node, at string) { d.RTO = c.Duration(n, at) }})
		},
		"steps": func(n *yaml.Node, at string) {
			d.Steps = stepList(c, n, at, d.StepLines)
			lines[at] = n.Line
		},
		"skip":             func(n *yaml.Node, at string) { d.Skip = stepList(c, n, at, nil) },
		"approve":          func(n *yaml.Node, at string) { d.Approve = stepList(c, n, at, nil) },
		"hold":             func(n *yaml.Node, at string) { d.Hold = c.Duration(n, at) },
		"failback_timeout": func(n *yaml.Node, at string) { d.Failback = c.Duration(n, at) },
		"lock_ttl": func(n *yaml.Node, at string) {
			// bounded as the fleet's failover.lock_ttl: the lease is renewed every TTL/5
			if v := c.Duration(n, at); v != 0 && (v < fleet.MinLockTTL || v > fleet.MaxLockTTL) {
				c.Errf(n.Line, at, "%s is outside %s–%s, as the fleet's failover.lock_ttl (the lease is renewed every fifth of it)", n.Value, fleet.MinLockTTL, fleet.MaxLockTTL)
			} else if v != 0 {
				d.LockTTL = v
			}
		},
		"traffic": func(n *yaml.Node, at string) { trafficSection(c, n, at, &d.Traffic) },
		"faults": func(n *yaml.Node, at string) {
			if n.Kind != yaml.SequenceNode {
				c.Errf(n.Line, at, "want a list of faults, got %s", yamlnode.KindName(n))
				return
			}
			for i, fn := range n.Content {
				d.Faults = append(d.Faults, fault(c, fn, fmt.Sprintf("%s[%d]", at, i)))
			}
		},
		"expect": func(n *yaml.Node, at string) {
			if n.Kind != yaml.SequenceNode {
				c.Errf(n.Line, at, "want a list of expected outcomes, got %s", yamlnode.KindName(n))
				return
			}
			for i, en := range n.Content {
				d.Expect = append(d.Expect, expectation(c, en, fmt.Sprintf("%s[%d]", at, i)))
			}
		},
	}
	for k, fn := range calendarFields(c, &d.Calendar, lines) {
		fields[k] = fn
	}
	c.Mapping(root, "", true, fields)
	d.Calendar.resolve()
	for _, req := range []string{"name", "fleet", "lose"} {
		if _, ok := lines[req]; !ok && root.Kind == yaml.MappingNode {
			c.Errf(root.Line, req, "required")
		}
	}
	if d.Steps == nil {
		d.Steps = slices.Clone(DefaultSteps)
	}
	if !slices.Contains(d.Steps, StepTeardown) {
		d.Steps = append(d.Steps, StepTeardown) // always: nothing is left behind
	}
	if slices.Contains(d.Skip, StepTeardown) {
		c.Errf(lines["skip"], "skip", "teardown cannot be skipped: a drill leaves nothing behind")
	}
	checkFaults(c, d)
	if d.Fleet != "" && !filepath.IsAbs(d.Fleet) {
		d.Fleet = filepath.Join(filepath.Dir(name), d.Fleet)
	}
	if c.Failed() {
		return nil, &DrillError{Problems: c.Problems, Partial: d}
	}
	// Every fault must be detected: an undetected fault fails the drill.
	for _, f := range d.Faults {
		stated := false
		for _, e := range d.Expect {
			stated = stated || (e.Kind == ExpectDetected && e.Target == f.Name)
		}
		if !stated {
			d.Expect = append(d.Expect, Expectation{Kind: ExpectDetected, Target: f.Name, Description: fmt.Sprintf("the fault %q is detected", f.Name), Implied: true})
		}
	}
	return d, nil
}

// didYouMean is the one "(did you mean X?)" ending (yamlnode.DidYouMean).
func didYouMean(got string, names []string) string { return yamlnode.DidYouMean(got, names) }

func stepList(c *yamlnode.Checker, n *yaml.Node, at string, lines map[string]int) []string {
	if n.Kind != yaml.SequenceNode {
		c.Errf(n.Line, at, "want a list of steps, got %s", yamlnode.KindName(n))
		return nil
	}
	out := []string{}
	for i, s := range n.Content {
		field := fmt.Sprintf("%s[%d]", at, i)
		v := c.Str(s, field, true)
		switch {
		case v == "":
		case !slices.Contains(DefaultSteps, v):
			c.Errf(s.Line, field, "unknown step %q (want one of %s)%s", v, strings.Join(DefaultSteps, ", "), didYouMean(v, DefaultSteps))
		case slices.Contains(out, v):
			c.Errf(s.Line, field, "step %q listed twice", v)
		default:
			out = append(out, v)
			if lines != nil {
				lines[v] = s.Line
			}
		}
	}
	return out
}

func trafficSection(c *yamlnode.Checker, n *yaml.Node, at string, t *Traffic) {
	c.Mapping(n, at, false, yamlnode.Fields{
		"requests":   func(n *yaml.Node, at string) { t.Requests = c.IntIn(n, at, 1, MaxRequests) },
		"max_tokens": func(n *yaml.Node, at string) { t.MaxTokens = c.IntIn(n, at, 1, 4096) },
		"timeout":    func(n *yaml.Node, at string) { t.Timeout = c.Duration(n, at) },
		"prompt":     func(n *yaml.Node, at string) { t.Prompt = c.Str(n, at, true) },
		"interval": func(n *yaml.Node, at string) {
			if n.Kind == yaml.ScalarNode && (n.Value == "0" || n.Value == "0s") {
				t.Interval = 0
				return
			}
			t.Interval = c.Duration(n, at)
			if t.Interval > 0 && t.Interval < 50*time.Millisecond {
				c.Errf(n.Line, at, "at least 50ms (or 0 for no sampling during the ramp)")
			}
		},
	})
}

func fault(c *yamlnode.Checker, n *yaml.Node, at string) Fault {
	f := Fault{Line: n.Line, AfterStep: 1}
	c.Mapping(n, at, false, yamlnode.Fields{
		"name":       func(n *yaml.Node, at string) { f.Name = c.Str(n, at, true) },
		"kind":       func(n *yaml.Node, at string) { f.Kind = c.Str(n, at, true) },
		"region":     func(n *yaml.Node, at string) { f.Region = c.Str(n, at, true) },
		"path":       func(n *yaml.Node, at string) { f.Path = c.Str(n, at, true) },
		"args":       func(n *yaml.Node, at string) { f.Args = c.Str(n, at, true) },
		"after_step": func(n *yaml.Node, at string) { f.AfterStep = c.IntIn(n, at, 1, 10000) },
		"duration":   func(n *yaml.Node, at string) { f.Duration = c.Duration(n, at) },
	})
	if n.Kind != yaml.MappingNode {
		return f
	}
	kind, ok := kindOfFault(f.Kind)
	if !ok {
		if f.Kind != "" {
			c.Errf(n.Line, at+".kind", "unknown fault %q (want one of %s)%s", f.Kind, strings.Join(FaultKinds(), ", "), didYouMean(f.Kind, FaultKinds()))
		} else {
			c.Errf(n.Line, at+".kind", "required (one of %s)", strings.Join(FaultKinds(), ", "))
		}
		return f
	}
	set := map[string]bool{"region": f.Region != "", "path": f.Path != "", "duration": f.Duration > 0}
	for _, k := range kind.needs {
		if !set[k] {
			c.Errf(n.Line, at+"."+k, "required for a %s fault", f.Kind)
		}
	}
	if f.Path != "" && (strings.HasPrefix(f.Path, "/") || slices.Contains(strings.Split(f.Path, "/"), "..")) {
		c.Errf(n.Line, at+".path", "a bundle path such as model/tokenizer.json (relative, no ..)")
	}
	if kind.defaults != nil {
		kind.defaults(&f)
	}
	if f.Name == "" {
		f.Name = f.Kind
		if f.Region != "" {
			f.Name += " " + f.Region
		}
		if f.Path != "" {
			f.Name += " " + f.Path
		}
	}
	return f
}

func expectation(c *yamlnode.Checker, n *yaml.Node, at string) Expectation {
	e := Expectation{Line: n.Line}
	kinds := 0
	target := func(kind string) func(n *yaml.Node, at string) {
		return func(n *yaml.Node, at string) { e.Kind, e.Target = kind, c.Str(n, at, true); kinds++ }
	}
	flag := func(kind string) func(n *yaml.Node, at string) {
		return func(n *yaml.Node, at string) {
			if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Value != "true" {
				c.Errf(n.Line, at, "want true")
			}
			e.Kind = kind
			kinds++
		}
	}
	c.Mapping(n, at, false, yamlnode.Fields{
		ExpectDetected:  target(ExpectDetected),
		ExpectResidency: target(ExpectResidency),
		ExpectWarm:      target(ExpectWarm),
		ExpectNotWarm:   target(ExpectNotWarm),
		ExpectSLA:       flag(ExpectSLA),
		ExpectFailback:  flag(ExpectFailback),
		"description":   func(n *yaml.Node, at string) { e.Description = c.Str(n, at, true) },
	})
	if n.Kind == yaml.MappingNode && kinds != 1 {
		c.Errf(n.Line, at, "state exactly one outcome: %s, %s, %s, %s (a name), %s or %s (true)", ExpectDetected, ExpectResidency, ExpectWarm, ExpectNotWarm, ExpectSLA, ExpectFailback)
	}
	if e.Description == "" {
		switch e.Kind {
		case ExpectDetected:
			e.Description = fmt.Sprintf("the fault %q is detected", e.Target)
		case ExpectResidency:
			e.Description = fmt.Sprintf("the %s class never leaves its eligible regions", e.Target)
		case ExpectWarm:
			e.Description = fmt.Sprintf("the candidate in %s is proven warm", e.Target)
		case ExpectNotWarm:
			e.Description = fmt.Sprintf("the candidate in %s is judged not warm", e.Target)
		case ExpectSLA:
			e.Description = "recovery time is within the SLA"
		case ExpectFailback:
			e.Description = "the lost region gets its traffic back"
		}
	}
	return e
}

func checkFaults(c *yamlnode.Checker, d *Drill) {
	names := map[string]bool{}
	for i, f := range d.Faults {
		if f.Name == "" {
			continue
		}
		if names[f.Name] {
			c.Errf(f.Line, fmt.Sprintf("faults[%d].name", i), "%q used twice", f.Name)
		}
		names[f.Name] = true
	}
	for i, e := range d.Expect {
		if e.Kind == ExpectDetected && e.Target != "" && !names[e.Target] {
			c.Errf(e.Line, fmt.Sprintf("expect[%d].detected", i), "no fault named %q (faults: %s)", e.Target, strings.Join(sortedNames(names), ", "))
		}
	}
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Order is the steps the drill runs, in order, without the skipped ones (teardown last).
func (d *Drill) Order() []string {
	var out []string
	for _, s := range d.Steps {
		if s != StepTeardown && !slices.Contains(d.Skip, s) {
			out = append(out, s)
		}
	}
	return append(out, StepTeardown)
}
