package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"lifeboat/internal/sample"
)

var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// badKeys returns every object key below v that is not snake_case. Keys of "counts" objects are
// status names (OK, MISSING…), data rather than field names.
func badKeys(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if !snakeKey.MatchString(k) {
				*out = append(*out, path+"."+k)
			}
			if k != "counts" {
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
		{"probe", "http://127.0.0.1:1", "--model", "x", "--timeout", "100ms"},
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
