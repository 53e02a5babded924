//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

func TestReplicateUsageErrors(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{}`), 0o644)
	to := filepath.Join(t.TempDir(), "replica")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"replicate"}, "needs --manifest"},
		{[]string{"replicate", "--manifest", m, "--from", l.Root}, "needs --manifest"},
		{[]string{"replicate", "--manifest", m, "--from", "ftp://host/x", "--to", to}, "unknown scheme"},
		{[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", "s3://Bad_Bucket/x"}, "bucket name"},
		{[]string{"replicate", "--manifest", m, "--from", "gs://user:pw@bucket/x", "--to", to}, "credentials do not belong in the URL"},
		{[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", "file://" + l.Root}, "same replica"},
		{[]string{"replicate", "--manifest", bad, "--from", l.Root, "--to", to}, "bad.json"},
		{[]string{"replicate", "--manifest", m, "--from", absent(t) + "/nonexistent", "--to", to}, "not a directory"},
		{[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", to, "-o", "junit"}, "-o junit"},
		{[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", to, "-j", "-1"}, "-j"},
	} {
		r := lifeboat(t, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("lifeboat %v: exit %d stderr %q; want exit 2 mentioning %q", c.args, r.code, r.stderr, c.msg)
		}
	}
	if _, err := os.Stat(to); err == nil {
		t.Errorf("a refused command created %s", to)
	}
}

// The whole cycle on local directories: seed, no-op, break, plan, repair; a corrupt source exits 1.
func TestReplicateLocalCycle(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	to := filepath.Join(t.TempDir(), "replica") // created by the first run
	args := []string{"replicate", "--manifest", m, "--from", l.Root, "--to", to}

	r := lifeboat(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "OK: 15 copied") {
		t.Fatalf("seed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = lifeboat(t, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to do") || !strings.Contains(r.stdout, "15 re-read intact") {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	os.Remove(filepath.Join(to, "model", "tokenizer.json"))
	shard := filepath.Join(to, "model", l.Shards[0])
	data, _ := os.ReadFile(shard)
	data[len(data)/2] ^= 1
	os.WriteFile(shard, data, 0o644)
	os.WriteFile(filepath.Join(to, "model", "notes.txt"), []byte("x"), 0o644)
	before, _ := os.ReadFile(shard)

	r = lifeboat(t, append(args, "--dry-run")...)
	if r.code != 0 || !strings.Contains(r.stdout, "model/tokenizer.json") || !strings.Contains(r.stdout, "CORRUPT") ||
		!strings.Contains(r.stdout, "would copy") || !strings.Contains(r.stdout, "extra (not in the manifest, left alone): model/notes.txt") {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadFile(shard); string(after) != string(before) {
		t.Fatal("--dry-run changed the replica")
	}
	if _, err := os.Stat(filepath.Join(to, "model", "tokenizer.json")); err == nil {
		t.Fatal("--dry-run changed the replica")
	}

	r = lifeboat(t, append(args, "-o", "json", "-j", "2")...)
	var rep struct {
		Manifest string `json:"manifest"`
		Status   string `json:"status"`
		Copied   int    `json:"copied"`
		Extra    []string
		Files    []struct{ Path, Reason, Outcome string }
		Target   struct{ Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("repair: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if rep.Status != "OK" || rep.Copied != 2 || rep.Manifest != m || len(rep.Extra) != 1 || rep.Target.Status != "UNVERIFIED" {
		t.Fatalf("repair report: %+v", rep)
	}

	// A source whose shard is corrupt: that file fails, exit 1, and nothing is written under it.
	os.Remove(shard)
	badSrc := filepath.Join(t.TempDir(), "src")
	if err := os.CopyFS(badSrc, os.DirFS(l.Root)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(badSrc, "model", l.Shards[0]), data, 0o644)
	r = lifeboat(t, "replicate", "--manifest", m, "--from", badSrc, "--to", to)
	if r.code != 1 || !strings.Contains(r.stdout, "source-corrupt") || !strings.Contains(r.stdout, "is corrupt") {
		t.Fatalf("corrupt source: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(shard); err == nil {
		t.Fatal("a corrupt source file was written to the replica")
	}
}

// A store that cannot be reached exits 4, whatever side it is on.
func TestReplicateUnreachableStore(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	port, err := emulators.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "lifeboattest")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
	dead := fmt.Sprintf("s3://bucket/llama?region=us-east-1&endpoint=%s", url.QueryEscape(fmt.Sprintf("http://127.0.0.1:%d", port)))
	r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", dead)
	if r.code != 4 || !strings.Contains(r.stderr, "unreachable") {
		t.Fatalf("unreachable target: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, "not-a-secret") {
		t.Fatal("a credential reached the output")
	}
}

// Cloud URLs through the CLI: build and lint from a model repository in S3 give what the local
// directory gives; replicate seeds S3 from a directory, then GCS and Azure from S3, repairs a
// broken replica, and lint --bundle reads a replica.
func TestCloudURLsThroughCLI(t *testing.T) {
	gw, err := emulators.StartVersityGW(t.TempDir())
	if err != nil {
		emulators.Unavailable(t, err)
	}
	t.Cleanup(gw.Stop)
	az, err := emulators.StartAzurite(t.TempDir())
	if err != nil {
		emulators.Unavailable(t, err)
	}
	t.Cleanup(az.Stop)
	g := emulators.SharedFakeGCS(t) // sets STORAGE_EMULATOR_HOST
	ctx := context.Background()
	if err := gw.Bucket(ctx, "models"); err != nil {
		t.Fatal(err)
	}
	g.Bucket("dr-gcs")
	if err := az.Container(ctx, "dr-azure"); err != nil {
		t.Fatal(err)
	}
	s3c := gw.Client()
	azc, err := azblob.NewClientFromConnectionString(az.ConnectionString(az.Key), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", gw.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", gw.SecretKey)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", az.ConnectionString(az.Key))
	s3URL := func(prefix string) string { return gw.URL("models", prefix) }

	l, m := fixture(t, sample.Options{})
	// The model repository in S3, put there by replicating the local one (a "bundle" whose
	// manifest paths are model-relative is not needed: a plain upload of the directory will do).
	repo := s3URL("hf-mirror/llama")
	for _, f := range l.Files {
		rel, ok := strings.CutPrefix(f, "model/")
		if !ok {
			continue
		}
		body, _ := os.ReadFile(l.Path(f))
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("models"), Key: aws.String("hf-mirror/llama/" + rel), Body: strings.NewReader(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	fromS3 := filepath.Join(t.TempDir(), "m.json")
	r := lifeboat(t, "manifest", "build", "--model", repo, "--engine", l.EngineFile, "--deploy", l.DeployDir, "--out", fromS3)
	want, _ := os.ReadFile(m)
	got, _ := os.ReadFile(fromS3)
	if r.code != 0 || string(got) != string(want) {
		t.Fatalf("build --model %s: exit %d, same bytes as local: %v\n%s", repo, r.code, string(got) == string(want), r.stderr)
	}
	if r = lifeboat(t, "manifest", "lint", m, "--model", repo); r.code != 0 || !strings.Contains(r.stdout, "PASS") {
		t.Fatalf("lint --model %s: exit %d\n%s%s", repo, r.code, r.stdout, r.stderr)
	}

	// Seed S3, then GCS and Azure from S3.
	replicas := []string{s3URL("dr/llama"), "gs://dr-gcs/llama", "az://" + emulators.AzuriteAccount + "/dr-azure/llama"}
	from := l.Root
	for _, to := range replicas {
		if r = lifeboat(t, "replicate", "--manifest", m, "--from", from, "--to", to); r.code != 0 || !strings.Contains(r.stdout, "target after replicate: OK (15 OK)") {
			t.Fatalf("replicate %s → %s: exit %d\n%s%s", from, to, r.code, r.stdout, r.stderr)
		}
		from = replicas[0]
	}
	if r = lifeboat(t, "manifest", "lint", m, "--bundle", replicas[1]); r.code != 0 || !strings.Contains(r.stdout, "PASS") {
		t.Fatalf("lint --bundle %s: exit %d\n%s%s", replicas[1], r.code, r.stdout, r.stderr)
	}
	if r = lifeboat(t, "manifest", "lint", m, "--model", replicas[1]); r.code != 2 || !strings.Contains(r.stderr, "--bundle") {
		t.Fatalf("lint --model of a replica should point at --bundle: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Break the Azure replica and repair it from GCS.
	cc := azc.ServiceClient().NewContainerClient("dr-azure")
	if _, err := cc.NewBlobClient("llama/model/tokenizer.json").Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := azc.UploadBuffer(ctx, "dr-azure", "llama/model/"+l.Shards[1], []byte("not the shard"), nil); err != nil {
		t.Fatal(err)
	}
	r = lifeboat(t, "replicate", "--manifest", m, "--from", replicas[1], "--to", replicas[2])
	if r.code != 0 || !strings.Contains(r.stdout, "OK: 2 copied") || !strings.Contains(r.stdout, "13 already OK") ||
		!strings.Contains(r.stdout, "target after replicate: OK (15 OK)") {
		t.Fatalf("repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, gw.SecretKey) || strings.Contains(r.stdout+r.stderr, az.Key) {
		t.Fatal("a credential reached the output")
	}
}
