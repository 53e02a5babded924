//go:build integration

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/testbed"
)

// Issue 18 §5: a file:// state store and a --report directory get boot's workdir protections.
// Another local user forged a journal that root's resume applied and redirected root's report
// writes: a state or report directory reached through a symbolic link, or writable by group or
// others, is refused by the real binary, naming the path and what is wrong; what the state store
// creates is 0700/0600.
func TestStateAndReportDirsArePrivate(t *testing.T) {
	testbed.LifeboatBinary(t) // built before failoverDir changes the working directory
	drill := drillFleet(t, "1m")
	dir := failoverDir(t)
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--evacuate", "eu-west-1", "--signals", "warm.json", "--yes"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	filepath.Walk(filepath.Join(dir, "state", "failover"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %04o, want nothing for group or others", p, fi.Mode().Perm())
		}
		return nil
	})
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "linked.yaml"), []byte(strings.Replace(cliFleet, "file://./state", "file://./link", 1)), 0o644)
	r := cli(t, nil, "failover", "status", "--fleet", "linked.yaml")
	if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") || !strings.Contains(r.stderr, filepath.Join(dir, "link")) {
		t.Errorf("status with a symlinked state dir: exit %d\n%s", r.code, r.stderr)
	}
	os.Chmod(filepath.Join(dir, "state"), 0o777)
	r = cli(t, nil, "failover", "resume", "--fleet", "fleet.yaml", "--signals", "warm.json")
	if r.code == 0 || !strings.Contains(r.stderr, "writable by group or others") || !strings.Contains(r.stderr, filepath.Join(dir, "state")) {
		t.Errorf("resume with a world-writable state dir: exit %d\n%s", r.code, r.stderr)
	}
	os.Chmod(filepath.Join(dir, "state"), 0o755)
	// A report directory that is a link to somewhere else: refused before the drill starts.
	r = cli(t, nil, "drill", "run", drill, "--dry-run", "--report", filepath.Join(dir, "link"))
	if r.code != 2 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("drill --report through a link: exit %d\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("something was written through the link: %v", entries)
	}
}
