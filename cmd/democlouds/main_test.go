package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The demo on a machine without the emulators: a checkout with no ./bin/versitygw and no
// ./.tools, so local directories stand in for S3 and Azure. One line says so and what it means
// for verify; the env file gives the demo file:// replicas and five distinct free ports for the
// drill; and democlouds exits once the process it watches has gone.
func TestStandInClouds(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module lifeboat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root) // emulators.RepoRoot: a lifeboat checkout without the emulators installed
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := filepath.Join(root, "clouds.env")
	if err := run(filepath.Join(root, "clouds"), env, gone.Process.Pid, &out); err != nil {
		t.Fatal(err)
	}
	var notice []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "not installed") {
			notice = append(notice, l)
		}
	}
	if len(notice) != 1 || !strings.Contains(notice[0], "versitygw (S3), Azurite (Azure)") || !strings.Contains(notice[0], "UNVERIFIED") {
		t.Fatalf("want one line saying which emulators are missing and what verify says:\n%s", out.String())
	}
	b, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	// Read as make demo reads it, through a shell, so the test holds whatever quoting is used.
	sh, err := exec.Command("sh", "-c", `. "$1" && printf '%s\n' "$CLOUD_S3" "$CLOUD_AZURE" "$CLOUD_GCS" "$BROKEN_DIR" "$DEMO_PORTS"`, "sh", env).Output()
	if err != nil {
		t.Fatalf("sh could not read clouds.env: %v\n%s", err, b)
	}
	vals := strings.Split(strings.TrimSuffix(string(sh), "\n"), "\n")
	if len(vals) != 5 {
		t.Fatalf("clouds.env as read by sh: %q\n%s", vals, b)
	}
	for i, want := range []string{"file://" + root + "/", "file://" + root + "/", "gs://", root + "/"} {
		if !strings.HasPrefix(vals[i], want) {
			t.Errorf("clouds.env value %d is %q, want it to start %q:\n%s", i, vals[i], want, b)
		}
	}
	m := regexp.MustCompile(`^(\d+) (\d+) (\d+) (\d+) (\d+)$`).FindStringSubmatch(vals[4])
	if m == nil {
		t.Fatalf("DEMO_PORTS is %q, want five ports:\n%s", vals[4], b)
	}
	seen := map[string]bool{}
	for _, p := range m[1:] {
		seen[p] = true
	}
	if len(seen) != 5 {
		t.Fatalf("DEMO_PORTS: want five distinct ports:\n%s", b)
	}
}
