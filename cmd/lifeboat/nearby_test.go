//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// A prefix typo (nothing of the manifest, nothing at all under it) gets one finding that names
// the closest prefixes next to it, from one delimiter listing of the parent — on S3 (versitygw),
// GCS (fake-gcs-server), Azure (Azurite) and a local directory, through the binary.
func TestPrefixTypoSuggestsPrefixesNearby(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	ctx := context.Background()
	gw := emulators.SharedVersityGW(t)
	if err := gw.Bucket(ctx, "nearby"); err != nil {
		t.Fatal(err)
	}
	g := emulators.SharedFakeGCS(t)
	g.Bucket("nearby")
	az := emulators.SharedAzurite(t)
	if err := az.Container(ctx, "nearby"); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true",
		"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString(az.Key)}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		url  func(prefix string) string
		want string // the closest sibling, as output prints it
	}{
		{"s3", func(p string) string { return gw.URL("nearby", "team/"+p) }, "s3://nearby/team/llama-3.1-8b?endpoint="},
		{"gs", func(p string) string { return "gs://nearby/team/" + p }, "gs://nearby/team/llama-3.1-8b, "},
		{"az", func(p string) string { return az.URL("nearby", "team/"+p) }, "az://" + azAccount(az.URL("nearby", "")) + "/nearby/team/llama-3.1-8b, "},
		{"file", func(p string) string { return filepath.Join(dir, p) }, "file://" + filepath.Join(dir, "llama-3.1-8b") + ", "},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []string{"llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"} {
				if r := cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", c.url(p), "--quiet"); r.code != 0 {
					t.Fatalf("replicate to %s: exit %d\n%s", p, r.code, r.stderr)
				}
			}
			if c.name == "file" {
				os.Mkdir(c.url("llama-3.1-8bb"), 0o755) // empty: a missing directory is NOT_FOUND
			}
			r := cli(t, env, "verify", "--manifest", m, c.url("llama-3.1-8bb"))
			want := "prefixes nearby: " + c.want
			if r.code != 1 || !strings.Contains(r.stdout, "which is empty") || !strings.Contains(r.stdout, want) {
				t.Fatalf("exit %d; want the closest prefix first (%q):\n%s%s", r.code, want, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, "qwen3-32b") {
				t.Errorf("a prefix too far to be a typo was suggested:\n%s", r.stdout)
			}
			if strings.Count(r.stdout, "MISSING") > 2 {
				t.Errorf("one finding, not one per file:\n%s", r.stdout)
			}
		})
	}
}

// azAccount is the account of an az:// URL.
func azAccount(u string) string {
	rest := strings.TrimPrefix(u, "az://")
	acct, _, _ := strings.Cut(rest, "/")
	return acct
}
