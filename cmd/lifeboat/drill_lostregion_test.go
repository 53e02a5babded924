//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/clitest"
)

// Issue 32 §2: a drill that loses a region never uses it as a source. When every replica
// outside the lost region is broken, there is nothing to repair from: the drill fails saying so
// (exit 1), copies nothing from the lost region and boots no stand-in from it.
func TestDrillNeverCopiesFromTheLostRegion(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	setup := exampleBlocks(t, readDoc(t, "README.md"), "quickstart")[0] // demo init, manifest, three replicas
	runBlocks(t, "README.md quickstart set-up", dir, []string{setup})
	drill := `name: lose-the-only-good-one
fleet: fleet.yaml
lose: eu-west-1
hold: 1s
faults:
  - {kind: missing-file, region: eu-central-1, path: model/tokenizer.json}
  - {kind: missing-file, region: us-east-1, path: model/tokenizer.json}
`
	if err := os.WriteFile(filepath.Join(dir, "dr", "only.yaml"), []byte(drill), 0o644); err != nil {
		t.Fatal(err)
	}
	r := res(clitest.Run(t, clitest.Options{Dir: dir}, "drill", "run", "dr/only.yaml", "--approve-all", "--report", "dr/only-report"))
	const why = "no replica outside the lost region eu-west-1 passed, so there is nothing to repair them from"
	if r.code != 1 || !strings.Contains(r.stdout, why) {
		t.Fatalf("drill with no good replica outside the lost region: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dr", "only-report", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Repairs []struct{ Region, From string }
		Boots   []struct{ Region, Role, From string }
		Steps   []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Repairs) != 0 {
		t.Errorf("repairs with no good source outside the lost region: %+v", rep.Repairs)
	}
	for _, bt := range rep.Boots {
		if bt.Region == "eu-west-1" || bt.From == "eu-west-1" {
			t.Errorf("booted %+v: nothing is booted in or restored from the lost region", bt)
		}
	}
	for _, s := range rep.Steps {
		if s.Name == "boot" && (s.Status != "failed" || !strings.Contains(s.Detail, "nothing to restore its stand-in from")) {
			t.Errorf("boot step: %s %s", s.Status, s.Detail)
		}
	}
}
