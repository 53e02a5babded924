//go:build integration

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/sample"
)

func TestRestoreCLI(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	to := filepath.Join(t.TempDir(), "restored")
	args := []string{"restore", "--manifest", m, "--from", l.Root, "--to", to}

	r := lifeboat(t, append(args, "-o", "json", "-j", "2")...)
	var rep struct {
		Status string `json:"status"`
		Copied int    `json:"copied"`
		Dir    string `json:"dir"`
		Layout struct {
			ModelDir     string `json:"model_dir"`
			EngineConfig string `json:"engine_config"`
		} `json:"layout"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("restore: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if rep.Status != "OK" || rep.Copied != len(l.Files) || rep.Layout.ModelDir != filepath.Join(to, "model") || rep.Layout.EngineConfig != filepath.Join(to, "engine", "engine.yaml") {
		t.Fatalf("report %+v (want %d files)", rep, len(l.Files))
	}
	for _, f := range l.Files {
		want, _ := os.ReadFile(l.Path(f))
		got, err := os.ReadFile(filepath.Join(to, filepath.FromSlash(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s not restored (%v)", f, err)
		}
	}

	// Tamper and remove: resumed, only those fetched again.
	tok := filepath.Join(to, "model", "tokenizer.json")
	os.WriteFile(tok, bytes.Repeat([]byte("x"), int(fileSize(t, tok))), 0o644)
	os.Remove(filepath.Join(to, "model", l.Shards[0]))
	r = lifeboat(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "OK: 2 copied") || !strings.Contains(r.stdout, "restored bundle: model "+filepath.Join(to, "model")) {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want, _ := os.ReadFile(l.Path("model/tokenizer.json"))
	if got, _ := os.ReadFile(tok); !bytes.Equal(got, want) {
		t.Fatal("tampered tokenizer.json not fetched again")
	}

	// A corrupt source file: exit 1, not written.
	bad := filepath.Join(t.TempDir(), "src")
	if err := os.CopyFS(bad, os.DirFS(l.Root)); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(bad, "model", l.Shards[1])
	data, _ := os.ReadFile(shard)
	data[100] ^= 1
	os.WriteFile(shard, data, 0o644)
	to2 := filepath.Join(t.TempDir(), "r2")
	r = lifeboat(t, "restore", "--manifest", m, "--from", bad, "--to", to2)
	if r.code != 1 || !strings.Contains(r.stdout, "source-corrupt") {
		t.Fatalf("corrupt source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(to2, "model", l.Shards[1])); err == nil {
		t.Fatal("corrupt shard written")
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestRestoreCLIUsage(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	file := filepath.Join(t.TempDir(), "afile")
	os.WriteFile(file, []byte("x"), 0o644)
	to := filepath.Join(t.TempDir(), "restored")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"restore"}, "needs --manifest"},
		{[]string{"restore", "--manifest", m, "--from", l.Root, "--to", "s3://bucket/x"}, "local directory"},
		{[]string{"restore", "--manifest", m, "--from", l.Root, "--to", file}, "not a directory"},
		{[]string{"restore", "--manifest", m, "--from", absent(t) + "/nonexistent", "--to", to}, "not a directory"},
		{[]string{"restore", "--manifest", m, "--from", l.Root, "--to", l.Root}, "same directory"},
		{[]string{"restore", "--manifest", m, "--from", "ftp://x/y", "--to", to}, "unknown scheme"},
		{[]string{"restore", "--manifest", m, "--from", l.Root, "--to", to, "-o", "junit"}, "-o junit"},
		{[]string{"restore", "--manifest", m, "--from", l.Root, "--to", to, "-j", "-2"}, "-j"},
	} {
		r := lifeboat(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("lifeboat %v: exit %d stderr %q; want 2 mentioning %q", c.args, r.code, r.stderr, c.msg)
		}
	}
	if _, err := os.Stat(to); err == nil {
		t.Error("a refused restore created --to")
	}
}

// A store that does not answer: exit 4, for restore and for boot.
func TestRestoreAndBootUnreachable(t *testing.T) {
	_, m := fixture(t, sample.Options{})
	t.Setenv("AWS_ACCESS_KEY_ID", "lifeboattest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	dead := "s3://nobody/llama?region=us-east-1&endpoint=" + url.QueryEscape("http://127.0.0.1:1")
	r := lifeboat(t, "restore", "--manifest", m, "--from", dead, "--to", filepath.Join(t.TempDir(), "r"))
	if r.code != 4 {
		t.Fatalf("restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = lifeboat(t, "boot", "--fleet", bootFleet(t, m, dead), "--region", "local", "--workdir", t.TempDir())
	if r.code != 4 {
		t.Fatalf("boot: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// --manifest-digest pins the manifest's bytes (the Kubernetes launcher's init container gets the
// digest of the manifest its boot verified): the same bytes restore, different ones are refused
// (exit 3) before anything is written, and a malformed digest is bad input. Through the binary.
func TestRestorePinnedDigest(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	data, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	pin := "sha256:" + hex.EncodeToString(sum[:])

	// Swapped: a manifest that differs from the verified one (what a tampered ConfigMap would
	// hold), still one restore would otherwise act on.
	swapped := bytes.Replace(data, []byte(`"size":`), []byte(`"size": `), 1)
	if bytes.Equal(swapped, data) {
		t.Fatal("the manifest has no size to change")
	}
	bad := filepath.Join(t.TempDir(), "manifest.json")
	os.WriteFile(bad, swapped, 0o644)
	to := filepath.Join(t.TempDir(), "restored")
	r := cli(t, nil, "restore", "--manifest", bad, "--manifest-digest", pin, "--from", l.Root, "--to", to)
	if r.code != 3 || !strings.Contains(r.stderr, "pinned to (--manifest-digest)") || !strings.Contains(r.stderr, pin) {
		t.Fatalf("swapped manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if ents, _ := os.ReadDir(to); len(ents) != 0 {
		t.Fatalf("a refused restore wrote %d entries into %s", len(ents), to)
	}

	r = cli(t, nil, "restore", "--manifest", m, "--manifest-digest", pin, "--from", l.Root, "--to", to)
	if r.code != 0 {
		t.Fatalf("pinned manifest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, d := range []string{"sha256:abc", strings.ToUpper(pin), "md5:" + strings.Repeat("0", 64)} {
		if r := cli(t, nil, "restore", "--manifest", m, "--manifest-digest", d, "--from", l.Root, "--to", to); r.code != 2 || !strings.Contains(r.stderr, "--manifest-digest") {
			t.Errorf("--manifest-digest %s: exit %d\n%s", d, r.code, r.stderr)
		}
	}
}
