//go:build integration

package replicate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"lifeboat/internal/testbed"
	"lifeboat/verify/replicate"
)

// TestRestoreSweepsStaleTempFiles: issue 9 item 11. After a SIGKILL mid-restore, hundreds of MB
// of .lifeboat-tmp-* files stayed in the target for good; the next run removes a dead process's.
func TestRestoreSweepsStaleTempFiles(t *testing.T) {
	f := testbed.Sample(t, "small")
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "model"), 0o755)
	stale := filepath.Join(dir, "model", ".lifeboat-tmp-999999999-deadbeef") // no such pid
	if err := os.WriteFile(stale, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := replicate.Restore(context.Background(), f.M, replFixtureStore(t, f), dir, replOptions())
	if err != nil || rep.Status != replicate.OK {
		t.Fatalf("restore: %v %s", err, rep.Status)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the stale temporary file of a dead process is still there")
	}
	if rep.Swept == nil || rep.Swept.Removed != 1 || rep.Swept.Bytes != 1<<20 {
		t.Errorf("swept = %+v, want 1 file of 1 MiB", rep.Swept)
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
