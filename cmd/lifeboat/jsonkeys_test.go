//go:build integration

package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// dataKeyed are the fields whose objects are keyed by data rather than field names: status names
// (counts: OK, MISSING…), and the fleet's tenant classes and regions (failover weights and states
// per class and region, predicted waits and the journal's baseline per region).
var dataKeyed = map[string]bool{"counts": true, "weights": true, "states": true, "predicted_queue_wait_ms": true, "baseline": true}

// badKeys returns every object key below v that is not snake_case, skipping dataKeyed objects.
func badKeys(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if !snakeKey.MatchString(k) {
				*out = append(*out, path+"."+k)
			}
			if !dataKeyed[k] {
				badKeys(c, path+"."+k, out)
			}
		}
	case []any:
		for _, c := range x {
			badKeys(c, path+"[]", out)
		}
	}
}

// Every command's JSON uses snake_case field names.
func TestEveryJSONKeyIsSnakeCase(t *testing.T) {
	l, m := fixture(t, sample.Options{Quant: "awq"})
	m2 := filepath.Join(t.TempDir(), "m2.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--out", m2, "-o", "json"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	for _, args := range [][]string{
		{"manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--out", filepath.Join(t.TempDir(), "m.json")},
		{"manifest", "show", m, "--files"},
		{"manifest", "diff", m, m2},
		{"manifest", "lint", m, "--model", l.ModelDir},
		{"manifest", "lint", "--list-rules"},
		{"verify", "--manifest", m, l.Root},
		{"replicate", "--manifest", m, "--from", l.Root, "--to", filepath.Join(t.TempDir(), "r"), "--dry-run"},
		{"restore", "--manifest", m, "--from", l.Root, "--to", restored},
		{"probe", "http://127.0.0.1:1", "--served-model-name", "x", "--timeout", "100ms"},
		{"demo", "init", filepath.Join(t.TempDir(), "demo")},
		{"version"},
	} {
		r := cli(t, nil, append(args, "-o", "json")...)
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%v: not JSON (%v): %s", args, err, r.stdout)
			continue
		}
		var bad []string
		badKeys(v, "", &bad)
		if len(bad) > 0 {
			t.Errorf("%v: keys not snake_case: %v", args, bad)
		}
	}
}

// failover, drill and check speak JSON too: the same rule, except for maps keyed by the fleet's
// own names (regions, tenant classes), which are data.
func TestFailoverDrillCheckJSONKeysAreSnakeCase(t *testing.T) {
	testbed.LifeboatBinary(t) // built before failoverDir changes the working directory
	drill := drillFleet(t, "1m")
	fleet := filepath.Join(filepath.Dir(drill), "fleet.yaml")
	failoverDir(t) // a second fleet with a file router and signals, in the working directory
	for _, args := range [][]string{
		{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json"},
		{"failover", "plan", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "cold.json"},
		{"failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes"},
		{"failover", "status", "--fleet", "fleet.yaml"},
		{"failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json"},
		{"failover", "abort", "--fleet", "fleet.yaml", "--yes"},
		{"failover", "unlock", "--fleet", "fleet.yaml", "--id", "nope"},
		{"drill", "run", drill, "--dry-run"},
		{"drill", "history", "--fleet", fleet},
		{"check", "--fleet", fleet},
	} {
		r := cli(t, nil, append(args, "-o", "json")...)
		var v any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Errorf("%v: exit %d, not JSON (%v): %s%s", args, r.code, err, r.stdout, r.stderr)
			continue
		}
		var bad []string
		badKeys(v, "", &bad)
		if len(bad) > 0 {
			t.Errorf("%v: keys not snake_case: %v\n%s", args, bad, r.stdout)
		}
	}
}
