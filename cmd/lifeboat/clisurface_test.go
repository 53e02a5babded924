//go:build integration

package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"lifeboat/internal/sample"
)

// writeFile writes a test file and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// surfaceFleet is a valid fleet with three regions and two classes.
const surfaceFleet = `model: {name: demo, manifest: ./manifest.json}
regions:
  us-east-1: {replica: ./r1}
  eu-west-1: {replica: ./r2}
  eu-central-1: {replica: ./r3}
tenants:
  eu-only: [eu-west-1, eu-central-1]
  global: [us-east-1, eu-west-1, eu-central-1]
router: {driver: file, path: ./weights.json}
state: ./state
`

// A typo'd subcommand is an unknown command with the closest one suggested, exit 2, also when
// the flags of the subcommand meant follow it (they are not the group's); a group given flags
// but no subcommand says so. Every suggestion comes from the one ranking.
func TestTypoedSubcommandSaysUnknownCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"failover", "rnu", "--fleet", "f.yaml", "--evacuate", "x"}, []string{`unknown command "rnu" for "lifeboat failover"`, `did you mean "run"?`}},
		{[]string{"failover", "stauts", "--fleet=f.yaml"}, []string{`unknown command "stauts" for "lifeboat failover"`, `did you mean "status"?`}},
		{[]string{"drill", "histroy", "--fleet", "f.yaml"}, []string{`unknown command "histroy" for "lifeboat drill"`, `did you mean "history"?`}},
		{[]string{"chekc", "--fleet", "f.yaml"}, []string{`unknown command "chekc" for "lifeboat"`, `did you mean "check"?`}},
		{[]string{"failover", "--fleet", "f.yaml"}, []string{`unknown flag --fleet for "lifeboat failover": name a subcommand first`}},
		{[]string{"failover", "plan", "--fleet", "f.yaml", "--evacuat", "x"}, []string{"did you mean --evacuate?"}},
	} {
		r := cli(t, nil, c.args...)
		for _, w := range c.want {
			if r.code != 2 || !strings.Contains(r.stderr, w) {
				t.Errorf("lifeboat %v: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, w)
			}
		}
		if strings.Contains(r.stderr, "unknown flag: --fleet") {
			t.Errorf("lifeboat %v: the subcommand's flag was blamed: %s", c.args, r.stderr)
		}
	}
	if r := cli(t, nil, "failover", "-o", "yaml", "rnu"); r.code != 2 || !strings.Contains(r.stdout, "exit_code: 2") {
		t.Errorf("failover rnu -o yaml: exit %d, stdout %q", r.code, r.stdout)
	}
}

// A fleet file with several mistakes — a key typo, a value of the wrong type, a region name
// typo in tenants, a router kind typo — reports them all at once, each with file:line and a
// suggestion where one is close; so does a drill file, including its names checked against
// the fleet.
func TestFleetAndDrillMistakesAllAtOnce(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.yaml", `model: {name: demo, manifest: ./manifest.json}
regions:
  us-east-1: {replcia: ./r1}
  eu-west-1: {replica: ./r2, capacity: {replicas: many}}
tenants:
  eu-only: [eu-wst-1]
router: {driver: haproxi}
state: ./state
`)
	r := cli(t, nil, "failover", "plan", "--fleet", bad, "--evacuate", "us-east-1")
	for _, w := range []string{
		bad + `:3: regions.us-east-1.replcia: unknown key (want one of capacity, endpoint, geo, launcher, probe, replica, signals) (did you mean replica?)`,
		bad + `:4: regions.eu-west-1.capacity.replicas: want a whole number`,
		bad + `:6: tenants.eu-only: region "eu-wst-1" is not defined under regions (did you mean eu-west-1?)`,
		bad + `:7: router.driver: want one of file, haproxy`,
		`(did you mean haproxy?)`,
	} {
		if r.code != 2 || !strings.Contains(r.stderr, w) {
			t.Errorf("exit %d; stderr lacks %q:\n%s", r.code, w, r.stderr)
		}
	}
	writeFile(t, dir, "fleet.yaml", surfaceFleet)
	drill := writeFile(t, dir, "drill.yaml", `name: three
fleet: fleet.yaml
lose: eu-wst-1
steps: [verify, evacuat]
hold: soon
expect:
  - {residency: globl}
`)
	r = cli(t, nil, "drill", "run", drill, "--dry-run")
	for _, w := range []string{
		drill + `:3: lose: region "eu-wst-1" is not in the fleet`,
		`(did you mean eu-west-1?)`,
		drill + `:4: steps[1]: unknown step "evacuat"`,
		`(did you mean evacuate?)`,
		drill + `:5: hold: want a positive duration`,
		drill + `:7: expect[0].residency: no tenant class "globl" in the fleet (did you mean global?)`,
	} {
		if r.code != 2 || !strings.Contains(r.stderr, w) {
			t.Errorf("drill: exit %d; stderr lacks %q:\n%s", r.code, w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, ":0:") {
		t.Errorf("a problem without its line:\n%s", r.stderr)
	}
}

// LIFEBOAT_FLEET is the fleet of every command that takes --fleet when the flag is not given
// (and says so on stderr); the flag wins, and that is said too.
func TestLifeboatFleetEnv(t *testing.T) {
	dir := t.TempDir()
	staging := writeFile(t, dir, "staging.yaml", surfaceFleet)
	prod := writeFile(t, dir, "prod.yaml", strings.Replace(surfaceFleet, "us-east-1", "us-west-2", -1))
	env := []string{"LIFEBOAT_FLEET=" + staging}
	r := cli(t, env, "failover", "plan", "--evacuate", "us-east-1", "--signals", filepath.Join(dir, "absent.json"))
	if !strings.Contains(r.stderr, "fleet "+staging+" (from LIFEBOAT_FLEET)") || strings.Contains(r.stderr, "--fleet FILE is required") {
		t.Errorf("LIFEBOAT_FLEET not used: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, env, "failover", "plan", "--fleet", prod, "--evacuate", "us-east-1")
	if !strings.Contains(r.stderr, "fleet "+prod+" (from --fleet; LIFEBOAT_FLEET="+staging+" is not used)") ||
		!strings.Contains(r.stderr, `us-east-1`) || r.code != 2 {
		t.Errorf("the flag did not win, or was not said: exit %d\n%s", r.code, r.stderr)
	}
	// Every command with --fleet takes it from the environment.
	for _, args := range [][]string{{"check"}, {"boot", "--region", "us-east-1"}, {"failover", "status"}, {"drill", "history"}} {
		r := cli(t, []string{"LIFEBOAT_FLEET=" + filepath.Join(dir, "absent.yaml")}, args...)
		if !strings.Contains(r.stderr, "(from LIFEBOAT_FLEET)") || !strings.Contains(r.stderr, "absent.yaml") {
			t.Errorf("%v: LIFEBOAT_FLEET not used: exit %d\n%s", args, r.code, r.stderr)
		}
	}
}

// Shell completion through the binary's __complete: region names from the fleet (given with
// --fleet or LIFEBOAT_FLEET), the rules --override takes, -o's formats; and the scripts.
func TestCompletionOfFleetNames(t *testing.T) {
	dir := t.TempDir()
	fleet := writeFile(t, dir, "fleet.yaml", surfaceFleet)
	complete := func(env []string, args ...string) []string {
		t.Helper()
		r := cli(t, env, append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("__complete %v: exit %d\n%s", args, r.code, r.stderr)
		}
		var out []string
		sc := bufio.NewScanner(strings.NewReader(r.stdout))
		for sc.Scan() {
			if l := sc.Text(); l != "" && !strings.HasPrefix(l, ":") {
				name, _, _ := strings.Cut(l, "\t")
				out = append(out, name)
			}
		}
		return out
	}
	for _, c := range []struct {
		env  []string
		args []string
		want []string
	}{
		{nil, []string{"failover", "plan", "--fleet", fleet, "--evacuate", "eu"}, []string{"eu-central-1", "eu-west-1"}},
		{[]string{"LIFEBOAT_FLEET=" + fleet}, []string{"failover", "restore", "--region", ""}, []string{"eu-central-1", "eu-west-1", "us-east-1"}},
		{nil, []string{"failover", "plan", "--fleet", fleet, "--restore", "us"}, []string{"us-east-1"}},
		{nil, []string{"boot", "--fleet", fleet, "--region", "eu-c"}, []string{"eu-central-1"}},
		{nil, []string{"failover", "run", "--override", "max"}, []string{"max_transitions"}},
		{nil, []string{"failover", "plan", "--fleet", fleet, "--class", "eu"}, []string{"eu-only"}},
		{nil, []string{"version", "-o", ""}, []string{"text", "json", "yaml", "junit"}},
		{nil, []string{"failover", "plan", "--fleet", filepath.Join(dir, "absent.yaml"), "--evacuate", ""}, nil},
	} {
		if got := complete(c.env, c.args...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("__complete %v = %q, want %q", c.args, got, c.want)
		}
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := cli(t, nil, "completion", sh); r.code != 0 || !strings.Contains(r.stdout, "__complete") {
			t.Errorf("completion %s: exit %d\n%.200s", sh, r.code, r.stdout)
		}
	}
}

// --log-format json: every log line on stderr is one JSON object (level, msg); text stays the
// default.
func TestLogFormatJSON(t *testing.T) {
	dead := "http://" + absentAddr(t)
	probe := []string{"probe", dead, "--served-model-name", "x", "--timeout", "300ms", "-v"}
	r := cli(t, nil, append(probe, "--log-format", "json")...)
	if r.code != 4 {
		t.Fatalf("probe: exit %d\n%s", r.code, r.stderr)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // progress and the summary are not log records
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil || rec["time"] == nil {
			t.Errorf("not a JSON log record: %v: %s", err, line)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no JSON log line with -v --log-format json:\n%s", r.stderr)
	}
	if r := cli(t, nil, probe...); strings.Contains(r.stderr, `{"time"`) || !strings.Contains(r.stderr, "level=") {
		t.Errorf("text is not the default:\n%s", r.stderr)
	}
	if r := cli(t, nil, "version", "--log-format", "xml"); r.code != 2 || !strings.Contains(r.stderr, "want text or json") {
		t.Errorf("--log-format xml: exit %d\n%s", r.code, r.stderr)
	}

	// failover run: its progress and the notification warnings are log records too. The plan
	// table is not a log line; anything with level= is a text record that ignored the flag.
	dir := faultDir(t)
	writeFile(t, dir, "fleet.yaml", cliFleet+"notify:\n  - {name: oncall, url_env: LB_TEST_UNSET_HOOK, format: json}\n")
	r = cli(t, []string{"LB_TEST_UNSET_HOOK="}, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t", "--log-format", "json")
	if r.code != 0 {
		t.Fatalf("failover run --log-format json: exit %d\n%s", r.code, r.stderr)
	}
	msgs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.Contains(line, "level=") || strings.Contains(line, "msg=") {
			t.Errorf("a text log record with --log-format json: %s", line)
		}
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil || rec["time"] == nil {
			t.Errorf("not a JSON log record: %v: %s", err, line)
			continue
		}
		msg, _ := rec["msg"].(string)
		msgs[msg]++
		if w, ok := rec["weights"]; ok {
			if s, ok := w.(string); !ok || strings.Contains(s, "map[") {
				t.Errorf("weights are not plain text: %#v in %s", w, line)
			}
		}
	}
	if msgs["applying"] != 3 || msgs["notification webhook skipped"] != 1 {
		t.Errorf("want 3 applying and 1 notification warning as JSON records, got %v:\n%s", msgs, r.stderr)
	}
}

// Every command that writes -o json writes -o yaml: the same document (equal once decoded),
// exit_code and error included. The sweep walks the command tree, so that a command added
// later is swept too: each runs on input that fails (an absent fleet, file or directory), in
// both formats; and a few succeed.
func TestEveryCommandWritesYAML(t *testing.T) {
	dir := t.TempDir()
	absent := filepath.Join(writeFile(t, dir, "not-a-dir", "x"), "absent")
	var leaves []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && c.Name() != "completion" && (c.Parent() == nil || c.Parent().Name() != "completion") {
			leaves = append(leaves, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk((&app{}).rootCmd())
	if len(leaves) < 20 {
		t.Fatalf("only %d commands found", len(leaves))
	}
	swept := 0
	for _, c := range leaves {
		path := strings.Fields(c.CommandPath())[1:]
		if len(path) == 0 || c.HasSubCommands() {
			continue
		}
		args := append([]string{}, path...)
		if c.Flags().Lookup("fleet") != nil {
			args = append(args, "--fleet", absent+".yaml")
		} else if c.Args == nil || c.Args(c, []string{absent}) == nil {
			args = append(args, absent)
		}
		y := cli(t, nil, append(args, "-o", "yaml")...)
		j := cli(t, nil, append(args, "-o", "json")...)
		if strings.Contains(j.stderr, "-o json is not supported") {
			if !strings.Contains(y.stderr, "-o yaml is not supported") {
				t.Errorf("%v: no -o json, yet -o yaml: %s", args, y.stderr)
			}
			continue
		}
		swept++
		var yv, jv map[string]any
		if err := yaml.Unmarshal([]byte(y.stdout), &yv); err != nil || yv == nil {
			t.Errorf("%v -o yaml: not a YAML mapping: %v\n%s", args, err, y.stdout)
			continue
		}
		if err := json.Unmarshal([]byte(j.stdout), &jv); err != nil {
			t.Errorf("%v -o json: %v\n%s", args, err, j.stdout)
			continue
		}
		if y.code != j.code || yv["exit_code"] != y.code || !reflect.DeepEqual(normalize(yv), normalize(jv)) {
			t.Errorf("%v: -o yaml (exit %d) and -o json (exit %d) differ:\n%s\n%s", args, y.code, j.code, y.stdout, j.stdout)
		}
		if strings.HasPrefix(strings.TrimSpace(y.stdout), "{") {
			t.Errorf("%v -o yaml printed JSON:\n%s", args, y.stdout)
		}
	}
	if swept < 15 {
		t.Errorf("only %d commands swept", swept)
	}
	// Documents that succeed, with strings YAML would read as something else kept strings.
	l, m := fixture(t, sample.Options{})
	for _, args := range [][]string{{"version"}, {"manifest", "show", m}, {"manifest", "lint", "--list-rules"}, {"manifest", "diff", m, m}, {"manifest", "lint", m, "--model", l.ModelDir}} {
		y, j := cli(t, nil, append(args, "-o", "yaml")...), cli(t, nil, append(args, "-o", "json")...)
		var yv, jv any
		if y.code != 0 || yaml.Unmarshal([]byte(y.stdout), &yv) != nil || json.Unmarshal([]byte(j.stdout), &jv) != nil || !reflect.DeepEqual(normalize(yv), normalize(jv)) {
			t.Errorf("%v: -o yaml (exit %d) is not -o json's document:\n%s\n%s", args, y.code, y.stdout, j.stdout)
		}
	}
}

// absentAddr is a loopback address nothing listens on.
func absentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// normalize makes a YAML-decoded and a JSON-decoded document comparable: numbers as float64.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return v
}
