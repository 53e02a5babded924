//go:build integration

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// cosignPath is cosign as `make cosign` installs it (bin/cosign, pinned in mk/signing.mk): the
// independent verifier of what Lifeboat signs. Missing, a test that needs it skips (fails under
// LIFEBOAT_REQUIRE_EMULATORS=1); with optional, "" is returned instead.
func cosignPath(t *testing.T, required bool) string {
	t.Helper()
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "cosign")
	if _, err := os.Stat(p); err != nil {
		if !required && os.Getenv(emulators.RequireEnv) != "1" {
			return ""
		}
		emulators.Unavailable(t, fmt.Errorf("cosign: %s (make cosign): %w", p, emulators.ErrNotInstalled))
	}
	return p
}

// cosignRun runs cosign offline: its home, TUF cache and Docker config are the test's own, and
// no network is reached (every command here is keyed, with no transparency log).
func cosignRun(t *testing.T, cosign string, env []string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(cosign, args...)
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + home, "TUF_ROOT=" + filepath.Join(home, "tuf"), "SIGSTORE_NO_CACHE=true"}, env...)...)
	cmd.Dir = home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("cosign %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}

// cosign verifies what Lifeboat signs, with cosign's own encrypted key (cosign generate-key-pair)
// read by Lifeboat; Lifeboat verifies what cosign signs; neither accepts a changed manifest.
func TestCosignInterop(t *testing.T) {
	cosign := cosignPath(t, true)
	dir := t.TempDir()
	pw := []string{"COSIGN_PASSWORD=correct horse"}
	if r := cosignRun(t, cosign, pw, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "cosign")); r.code != 0 {
		t.Fatalf("cosign generate-key-pair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	key, pub := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	_, m := fixture(t, sample.Options{})

	// Lifeboat signs with cosign's key; cosign verifies it offline
	if r := cli(t, []string{"COSIGN_PASSWORD=wrong"}, "manifest", "sign", m, "--key", key); r.code != 2 || !strings.Contains(r.stderr, "wrong password") {
		t.Fatalf("wrong password: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := cli(t, pw, "manifest", "sign", m, "--key", key)
	if r.code != 0 {
		t.Fatalf("sign with a cosign key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bundle := m + ".sigstore.json"
	if r := cosignRun(t, cosign, nil, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog", m); r.code != 0 {
		t.Fatalf("cosign verify-blob of Lifeboat's signature: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	changed := filepath.Join(dir, "changed.json")
	os.WriteFile(changed, append(mustRead(t, m), '\n'), 0o644)
	if r := cosignRun(t, cosign, nil, "verify-blob", "--key", pub, "--bundle", bundle, "--insecure-ignore-tlog", changed); r.code == 0 {
		t.Fatalf("cosign accepted a changed manifest:\n%s%s", r.stdout, r.stderr)
	}

	// cosign signs (offline: an empty signing config, no transparency log); Lifeboat verifies
	sc := filepath.Join(dir, "signing-config.json")
	os.WriteFile(sc, []byte(`{"mediaType":"application/vnd.dev.sigstore.signingconfig.v0.2+json"}`), 0o644)
	cb := filepath.Join(dir, "cosign.bundle")
	if r := cosignRun(t, cosign, pw, "sign-blob", "--key", key, "--bundle", cb, "--signing-config", sc, "--yes", m); r.code != 0 {
		t.Fatalf("cosign sign-blob: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, nil, "manifest", "verify-sig", m, "--key", pub, "--bundle", cb); r.code != 0 {
		t.Fatalf("verify-sig of cosign's bundle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(bundle) // only cosign's signature left
	if r := cli(t, nil, "manifest", "verify-sig", changed, "--key", pub, "--bundle", cb); r.code != 1 || !strings.Contains(r.stdout, "changed after signing") {
		t.Fatalf("verify-sig of a changed manifest with cosign's bundle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
