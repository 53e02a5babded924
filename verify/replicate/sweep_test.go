//go:build integration

package replicate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"lifeboat/internal/testbed"
	"lifeboat/providers"
	"lifeboat/verify/replicate"
)

// TestRestoreSweepsStaleTempFiles: issue 9 item 11. After a SIGKILL mid-restore, hundreds of MB
// of .lifeboat-tmp-* files stayed in the target for good; the next run removes a dead process's.
func TestRestoreSweepsStaleTempFiles(t *testing.T) {
	f := testbed.Sample(t, "small")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "model"), 0o755)
	stale := filepath.Join(dir, "model", ".lifeboat-tmp-999999999."+providers.ProcessTag()+"-deadbeef") // no such pid here
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same pid written in another PID namespace or host sharing the directory (another tag),
	// or by an older version (no tag): its pid means nothing here, so a young file stays.
	foreign := filepath.Join(dir, "model", ".lifeboat-tmp-999999999.0badf00d-deadbeef")
	untagged := filepath.Join(dir, "model", ".lifeboat-tmp-999999999-deadbeef")
	for _, p := range []string{foreign, untagged} {
		if err := os.WriteFile(p, []byte("another writer's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Written during the run (after it started), so that age condemns none of them: only
	// whether its owner is provably gone does.
	later := time.Now().Add(time.Hour)
	for _, p := range []string{stale, foreign, untagged} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := replicate.Restore(context.Background(), f.M, replFixtureStore(t, f), dir, replOptions())
	if err != nil || rep.Status != replicate.OK {
		t.Fatalf("restore: %v %s", err, rep.Status)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the stale temporary file of a dead process is still there")
	}
	if rep.Swept == nil || rep.Swept.Removed != 1 || rep.Swept.Bytes != 1<<20 || rep.Swept.Left != 2 {
		t.Errorf("swept = %+v, want 1 file of 1 MiB removed and 2 left", rep.Swept)
	}
	for _, p := range []string{foreign, untagged} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a young temporary file whose owner cannot be judged here was removed: %v", err)
		}
	}
}

// TestReplicateAbortsStaleMultipartUploads: issue 9 item 11. A run killed mid-upload left its
// multipart parts in S3 even after a successful rerun; a run that ends OK aborts the uploads
// under its prefix begun before it started.
func TestReplicateAbortsStaleMultipartUploads(t *testing.T) {
	f := testbed.Sample(t, "small")
	b := testbed.S3Backend(t)
	prefix := testbed.FreshPrefix("sweep")
	to := b.Open(t, prefix, nil)
	c := b.S3.Client()
	ctx := context.Background()
	key := aws.String(prefix + "/model/model-00001-of-00002.safetensors")
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(testbed.Bucket), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(testbed.Bucket), Key: key, UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 5<<20))}); err != nil {
		t.Fatal(err)
	}
	rep, err := replicate.Run(ctx, f.M, replFixtureStore(t, f), to, replOptions())
	if err != nil || rep.Status != replicate.OK {
		t.Fatalf("replicate: %v %s\n%s", err, rep.Status, replDump(rep))
	}
	left, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(testbed.Bucket), Prefix: aws.String(prefix + "/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Uploads) != 0 {
		t.Errorf("%d incomplete multipart upload(s) left under %s after an OK run", len(left.Uploads), prefix)
	}
	if rep.Swept == nil || rep.Swept.Removed != 1 {
		t.Errorf("swept = %+v, want 1 upload aborted", rep.Swept)
	}
}
