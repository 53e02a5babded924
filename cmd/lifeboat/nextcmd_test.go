package main

import (
	"strings"
	"testing"
)

// A typo'd region, rule or action is a usage error (exit 2) that suggests the name meant,
// through the fleet's one UnknownRegion and the one did-you-mean ranking (editdistance).
func TestTypoedNamesSayDidYouMean(t *testing.T) {
	faultDir(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"boot region", []string{"boot", "--fleet", "fleet.yaml", "--region", "eu-wst-1"},
			"region eu-wst-1: not in fleet.yaml (regions: eu-central-1, eu-west-1, us-east-1); did you mean eu-west-1?"},
		{"restore region", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-wst-1", "--action", "restore", "--signals", "warm.json"},
			"did you mean eu-west-1?"},
		{"override rule", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--override", "max_transitons"},
			`--override: unknown rule "max_transitons"`},
		{"override rule", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--override", "max_transitons"},
			"did you mean max_transitions?"},
		{"action", []string{"failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--action", "evacaute"},
			`--action "evacaute": want evacuate, restore or spill; did you mean evacuate?`},
	} {
		r := cli(t, nil, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, want 2 and %q\n%s", c.name, r.code, c.want, r.stderr)
		}
	}
	// nothing close: no guess
	r := cli(t, nil, "failover", "plan", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--action", "zzz")
	if r.code != 2 || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("--action zzz: exit %d, want 2 and no suggestion\n%s", r.code, r.stderr)
	}
}
