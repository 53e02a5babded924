package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A registry cannot hold the failover lock or the journal: state on oci:// is refused before any
// store is contacted (exit 2), from a fleet file and from --state, naming both missing
// capabilities — and the registry, without the credential its URL tried to carry.
func TestStateOnRegistryRefused(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(fleet, []byte("model: {name: demo, manifest: m.json}\nregions: {a: {replica: ./r}}\nstate: oci://127.0.0.1:1/lifeboat/state:v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"failover", "status", "--fleet", fleet},
		{"drill", "history", "--fleet", fleet},
		{"drill", "history", "--state", "oci://127.0.0.1:1/lifeboat/state:v1"},
	} {
		r := cli(t, nil, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, r.code, r.stderr)
			continue
		}
		for _, says := range []string{"cannot be a state store", "no compare-and-swap", "no listing by prefix"} {
			if !strings.Contains(r.stderr, says) {
				t.Errorf("%v: stderr does not say %q:\n%s", args, says, r.stderr)
			}
		}
	}
	r := cli(t, nil, "drill", "history", "--state", "oci://robot:Passw0rdInState@127.0.0.1:1/lifeboat/state")
	if r.code != 2 || strings.Contains(r.stdout+r.stderr, "Passw0rdInState") {
		t.Fatalf("credential in a state URL: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
