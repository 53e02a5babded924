//go:build integration

package replicate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/testbed"
	"lifeboat/verify/replicate"
)

// TestReplicateIntoSymlinkedDirStaysInside: issue 9 item 6. A file:// target whose model/
// directory is a symbolic link leading out of it used to be written through; now every write
// is refused beneath the target's root and nothing appears outside.
func TestReplicateIntoSymlinkedDirStaysInside(t *testing.T) {
	f := testbed.Sample(t, "small")
	base := t.TempDir()
	target, outside := filepath.Join(base, "target"), filepath.Join(base, "outside")
	os.MkdirAll(target, 0o755)
	os.MkdirAll(outside, 0o755)
	if err := os.Symlink(outside, filepath.Join(target, "model")); err != nil {
		t.Fatal(err)
	}
	to := testbed.OpenStore(t, "file://"+target, testbed.StoreOptions())
	rep, err := replicate.Run(context.Background(), f.M, replFixtureStore(t, f), to, replOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != replicate.Failed {
		t.Errorf("status %s, want FAILED\n%s", rep.Status, replDump(rep))
	}
	for _, c := range rep.Files {
		if strings.HasPrefix(c.Path, "model/") && (c.Outcome != replicate.OutcomeFailed || !strings.Contains(c.Error, "outside the store's root")) {
			t.Errorf("%s: %s %q, want failed outside the store's root", c.Path, c.Outcome, c.Error)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("%d entries written outside the target", len(ents))
	}
}

// TestRestoreLocalWriteFailure: issue 9 item 9. A local write error (here a directory where a
// file must go) is WRITE_FAILED with the file system's error, not UNREACHABLE, and not retried.
func TestRestoreLocalWriteFailure(t *testing.T) {
	f := testbed.Sample(t, "small")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "model", "config.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err := replicate.Restore(context.Background(), f.M, replFixtureStore(t, f), dir, replOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != replicate.WriteFailed {
		t.Errorf("status %s, want WRITE_FAILED\n%s", rep.Status, replDump(rep.Report))
	}
	for _, c := range rep.Files {
		if c.Path == "model/config.json" && (c.Failure != replicate.FailLocalWrite || c.Attempts != 1) {
			t.Errorf("model/config.json: failure %q after %d attempt(s), want local-write after 1", c.Failure, c.Attempts)
		}
	}
}

// TestReplicateInterrupted: issue 9 item 9. A cancelled run ends INTERRUPTED with an error that
// says so and how far it got (errors.Is ErrInterrupted and context.Canceled), not FAILED with a
// bare "context canceled"; running again resumes to OK.
func TestReplicateInterrupted(t *testing.T) {
	f := testbed.Sample(t, "small")
	dir := t.TempDir()
	to := testbed.OpenStore(t, "file://"+dir, testbed.StoreOptions())
	ctx, cancel := context.WithCancel(context.Background())
	o := replOptions()
	o.Jobs = 1
	o.OnFile = func(c replicate.CopyResult) {
		if c.Outcome == replicate.OutcomeCopied {
			cancel()
		}
	}
	rep, err := replicate.Run(ctx, f.M, replFixtureStore(t, f), to, o)
	if !errors.Is(err, replicate.ErrInterrupted) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("err = %v, want ErrInterrupted naming how to resume", err)
	}
	if rep.Status != replicate.Interrupted {
		t.Errorf("status %s, want INTERRUPTED", rep.Status)
	}
	rep, err = replicate.Run(context.Background(), f.M, replFixtureStore(t, f), to, replOptions())
	if err != nil || rep.Status != replicate.OK {
		t.Fatalf("rerun: %v, %s", err, rep.Status)
	}
}
