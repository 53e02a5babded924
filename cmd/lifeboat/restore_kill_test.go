//go:build integration

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/clitest"
	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"
)

// kill -9 of `lifeboat restore` at any point — mid-copy, between the last byte and the commit,
// mid-commit — never leaves a partial file under a file's name (a restore writes every file to a
// temporary name and renames it into place after the fsync), and a second restore finishes the
// job and sweeps the temporary files of the killed one. Separate processes of the real binary,
// killed at random moments; trials that ended before the kill still check the invariant.
func TestRestoreKilledAtAnyPointLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	l, err := sample.Generate(context.Background(), filepath.Join(dir, "bundle"), sample.Options{TargetBytes: 48 << 20})
	if err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, "manifest.json")
	if r := cli(t, nil, "manifest", "build", "--model", l.ModelDir, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", man); r.code != 0 {
		t.Fatalf("manifest build: %d %s", r.code, r.stderr)
	}
	m, err := manifest.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range m.Files {
		want[f.Path] = f.Sums.SHA256
	}
	// check walks out: every file under a final name is a manifest file with its bytes; it
	// returns the temporary files it saw and how many files are in place.
	check := func(t *testing.T, out string) (temps, placed int) {
		t.Helper()
		filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".lifeboat-") {
				temps++
				return nil
			}
			rel, _ := filepath.Rel(out, p)
			rel = filepath.ToSlash(rel)
			sum, ok := want[rel]
			if !ok {
				return nil // the restore's own files (the layout beside the bundle)
			}
			data, err := os.ReadFile(p)
			got := sha256.Sum256(data)
			if err != nil || hex.EncodeToString(got[:]) != sum {
				t.Errorf("%s is under its name with %d bytes that are not the manifest's (%v)", rel, len(data), err)
			}
			placed++
			return nil
		})
		return temps, placed
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 32))
	const trials = 12
	midway := 0
	for i := range trials {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		p := clitest.Start(t, clitest.Options{}, "restore", "--manifest", man, "--from", l.Root, "--to", out, "-q")
		// kill it at a random moment after its first temporary file appears (or at once)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if m, _ := filepath.Glob(filepath.Join(out, "*", ".lifeboat-*")); len(m) > 0 {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		late := 60 // half the trials within the copy, the other half also at the commit or after the end
		if i%2 == 1 {
			late = 400
		}
		time.Sleep(time.Duration(rng.IntN(late)) * time.Millisecond)
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		r := p.Wait()
		temps, placed := check(t, out)
		if r.Code == 128+int(syscall.SIGKILL) && (temps > 0 || placed < len(want)) {
			midway++
		}
		// a second restore completes it, and leaves no temporary file
		if r2 := cli(t, nil, "restore", "--manifest", man, "--from", l.Root, "--to", out, "-q"); r2.code != 0 {
			t.Fatalf("trial %d: restore after kill -9: exit %d\n%s", i, r2.code, r2.stderr)
		}
		if temps, placed := check(t, out); temps != 0 || placed != len(want) {
			t.Fatalf("trial %d: after the second restore %d temporary file(s), %d of %d files in place", i, temps, placed, len(want))
		}
	}
	if midway < trials/4 {
		t.Fatalf("only %d of %d restores were killed before they finished: the test did not test", midway, trials)
	}
	t.Logf("%d of %d restores killed mid-way", midway, trials)
}

// kill -9 of `lifeboat manifest push` at a random moment (blobs streaming, the manifest not yet
// pushed, or done) never leaves a replica that verifies: the manifest goes up last, only when
// every blob is there, so a killed push's tag resolves to nothing (quick verify exits non-zero)
// or, if the kill came after it, to every blob intact. A second push completes it and a deep
// verification proves every byte. Separate processes of the real binary, a real registry.
func TestPushKilledAtAnyPointNeverVerifiesHalfDone(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	env := []string{"DOCKER_CONFIG=" + emulators.DockerConfig(t, reg)}
	l, man := fixture(t, sample.Options{TargetBytes: 48 << 20})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 64))
	const trials = 8
	early := 0
	for i := range trials {
		target := "oci://" + reg.Host + "/lifeboat/killed-push-" + strings.ToLower(t.Name()) + "-" + string(rune('a'+i)) + ":v1"
		p := clitest.Start(t, clitest.Options{Env: env}, "manifest", "push", man, "--from", l.Root, target, "-q")
		time.Sleep(time.Duration(rng.IntN([]int{150, 1500}[i%2])) * time.Millisecond) // mid-upload, or also later
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		r := p.Wait()
		v := cli(t, env, "verify", "--manifest", man, target, "-q")
		switch {
		case r.Code == 0 && v.code != 0:
			t.Fatalf("trial %d: the push finished, yet quick verify exits %d\n%s", i, v.code, v.stderr)
		case r.Code != 0 && v.code == 0:
			t.Fatalf("trial %d: a push killed (exit %d) verifies OK", i, r.Code)
		case r.Code != 0:
			early++
		}
		if r := cli(t, env, "manifest", "push", man, "--from", l.Root, target, "-q"); r.code != 0 {
			t.Fatalf("trial %d: push after kill -9: exit %d\n%s", i, r.code, r.stderr)
		}
		if v := cli(t, env, "verify", "--deep", "--manifest", man, target, "-q"); v.code != 0 {
			t.Fatalf("trial %d: deep verify after the second push: exit %d\n%s", i, v.code, v.stderr)
		}
	}
	if early < trials/4 {
		t.Fatalf("only %d of %d pushes were killed before they finished: the test did not test", early, trials)
	}
	t.Logf("%d of %d pushes killed before they finished", early, trials)
}
