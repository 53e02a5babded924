//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/base/shell"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// bootFleet writes a fleet file whose region "local" restores from replica and boots engine-sim
// through the exec launcher (the built lifeboat binary as the engine).
func bootFleet(t *testing.T, manifestPath, replica string) string {
	t.Helper()
	exe := testbed.LifeboatBinary(t)
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, manifestPath) // model.manifest resolves against the fleet file's directory
	if err != nil {
		t.Fatal(err)
	}
	fleet := fmt.Sprintf(`model:
  name: llama-demo
  manifest: %s
regions:
  local:
    geo: eu
    replica: %s
    capacity: {replicas: 1, prefill_tokens_per_s: 4000}
    launcher:
      kind: exec
      command: %s engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}} --sim-itl 1ms
tenants:
  eu-only: [local]
`, rel, replica, shell.Quote(exe))
	p := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(p, []byte(fleet), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type bootJSON struct {
	Verdict        string `json:"verdict"`
	Reason         string `json:"reason"`
	OK             bool   `json:"ok"`
	Region         string `json:"region"`
	RestoreSkipped string `json:"restore_skipped"`
	Restore        *struct {
		Status string `json:"status"`
		Copied int    `json:"copied"`
		Failed int    `json:"failed"`
	} `json:"restore"`
	Models  []string `json:"models"`
	LoRAs   []string `json:"loras"`
	Timings struct {
		RestoreS *float64 `json:"restore_s"`
		ListenS  *float64 `json:"listen_s"`
		TTFTS    *float64 `json:"ttft_s"`
		WarmS    *float64 `json:"warm_s"`
	} `json:"timings"`
	Probe struct {
		LogTail string `json:"log_tail"`
		Checks  []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	} `json:"probe"`
}

func bootRun(t *testing.T, args ...string) (result, bootJSON) {
	t.Helper()
	r := lifeboat(t, args...)
	var b bootJSON
	if err := json.Unmarshal([]byte(r.stdout), &b); err != nil {
		t.Fatalf("boot %v: exit %d, not JSON (%v)\n%s%s", args, r.code, err, r.stdout, r.stderr)
	}
	return r, b
}

func TestBootWarmThenSkipsRestore(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	fleet := bootFleet(t, m, l.Root)
	work := t.TempDir()
	args := []string{"boot", "--fleet", fleet, "--region", "local", "--workdir", work, "--timeout", "60s", "--ttft-budget", "5s", "-o", "json"}

	r, b := bootRun(t, args...)
	if r.code != 0 || b.Verdict != "WARM" || !b.OK || b.Restore == nil || b.Restore.Status != "OK" || b.Restore.Copied != len(l.Files) {
		t.Fatalf("first boot: exit %d %+v\n%s%s", r.code, b, r.stdout, r.stderr)
	}
	if b.Timings.RestoreS == nil || b.Timings.ListenS == nil || b.Timings.TTFTS == nil || b.Timings.WarmS == nil {
		t.Fatalf("timings missing: %+v", b.Timings)
	}
	if strings.Join(b.Models, ",") != sample.DefaultServedName || strings.Join(b.LoRAs, ",") != sample.LoRAName {
		t.Fatalf("expected models %v loras %v", b.Models, b.LoRAs)
	}

	// Second boot: the restore is skipped, still WARM. Text output names verdict and timings.
	r = lifeboat(t, args[:len(args)-2]...)
	if r.code != 0 || !strings.Contains(r.stdout, "restore: skipped") || !strings.Contains(r.stdout, "WARM:") || !strings.Contains(r.stdout, "timings: ") {
		t.Fatalf("second boot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("second boot:\n%s", r.stdout)

	// A file changed since: restored again (only that file), WARM.
	os.WriteFile(filepath.Join(work, "bundle", "model", "README.md"), []byte("changed"), 0o644)
	r, b = bootRun(t, args...)
	if r.code != 0 || b.Verdict != "WARM" || b.Restore == nil || b.Restore.Copied != 1 {
		t.Fatalf("third boot: exit %d %+v\n%s", r.code, b, r.stderr)
	}
}

// A replica that lost its tokenizer: the restore cannot complete it, and the engine the
// launcher starts over what was restored exits naming the tokenizer.
func TestBootMissingTokenizerExited(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	replica := filepath.Join(t.TempDir(), "replica")
	if err := os.CopyFS(replica, os.DirFS(l.Root)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(replica, "model", "tokenizer.json"))
	fleet := bootFleet(t, m, replica)
	r, b := bootRun(t, "boot", "--fleet", fleet, "--region", "local", "--workdir", t.TempDir(), "--timeout", "60s", "-o", "json")
	if r.code != 1 || b.Verdict != "EXITED" || b.OK || !strings.Contains(b.Reason, "tokenizer") || !strings.Contains(b.Probe.LogTail, "tokenizer") {
		t.Fatalf("exit %d %+v\n%s%s", r.code, b, r.stdout, r.stderr)
	}
	if b.Restore == nil || b.Restore.Status != "FAILED" || b.Restore.Failed != 1 {
		t.Fatalf("restore %+v", b.Restore)
	}
}

func TestBootUsage(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	fleet := bootFleet(t, m, l.Root)
	dir := t.TempDir()
	badKind := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badKind, []byte("model: {name: x, manifest: m.json}\nregions:\n  a:\n    replica: ./r\n    launcher:\n      kind: docker\n"), 0o644)
	noLauncher := filepath.Join(dir, "nl.yaml")
	os.WriteFile(noLauncher, []byte("model: {name: x, manifest: m.json}\nregions:\n  a: {replica: ./r}\n"), 0o644)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"boot"}, "needs --fleet"},
		{[]string{"boot", "--fleet", fleet}, "needs --fleet"},
		{[]string{"boot", "--fleet", absent(t) + "/nonexistent.yaml", "--region", "a"}, "nonexistent.yaml"},
		{[]string{"boot", "--fleet", fleet, "--region", "mars"}, "region mars: not in " + fleet + " (regions: local)"},
		{[]string{"boot", "--fleet", badKind, "--region", "a"}, "bad.yaml:6: regions.a.launcher.kind: want one of exec, endpoint"},
		{[]string{"boot", "--fleet", noLauncher, "--region", "a"}, "has no launcher"},
		{[]string{"boot", "--fleet", fleet, "--region", "local", "-o", "junit"}, "-o junit"},
	} {
		r := lifeboat(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("lifeboat %v: exit %d stderr %q; want 2 mentioning %q", c.args, r.code, r.stderr, c.msg)
		}
	}
}

func TestSelfCommand(t *testing.T) {
	exe, _ := os.Executable()
	if got := selfCommand("lifeboat engine-sim {{.ModelDir}}"); got != shell.Quote(exe)+" engine-sim {{.ModelDir}}" {
		t.Errorf("selfCommand = %q", got)
	}
	for _, c := range []string{"vllm serve {{.ModelDir}}", "lifeboat2 x", "/usr/bin/lifeboat x"} {
		if got := selfCommand(c); got != c {
			t.Errorf("selfCommand(%q) = %q", c, got)
		}
	}
}

// Restore and boot from an emulator-backed replica (fake-gcs-server): restore through the CLI,
// then boot the region whose replica is the gs:// URL.
func TestRestoreAndBootFromGCS(t *testing.T) {
	g := emulators.SharedFakeGCS(t) // sets STORAGE_EMULATOR_HOST
	g.Bucket("dr-boot")
	l, m := fixture(t, sample.Options{})
	replica := "gs://dr-boot/llama"
	if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", replica); r.code != 0 {
		t.Fatalf("seed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	to := filepath.Join(t.TempDir(), "restored")
	r := lifeboat(t, "restore", "--manifest", m, "--from", replica, "--to", to)
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("OK: %d copied", len(l.Files))) {
		t.Fatalf("restore from gs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r, b := bootRun(t, "boot", "--fleet", bootFleet(t, m, replica), "--region", "local", "--workdir", t.TempDir(), "--timeout", "60s", "-o", "json")
	if r.code != 0 || b.Verdict != "WARM" || b.Restore == nil || b.Restore.Copied != len(l.Files) || b.Timings.RestoreS == nil {
		t.Fatalf("boot from gs: exit %d %+v\n%s", r.code, b, r.stderr)
	}
}
