package providers_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/providers"
)

// A batch file store's writes are checked at once but land under their final names only at
// Commit: until then a reader (or a crash) sees the old content or nothing, never part of the
// new one; after it, every file is there whole, no temporary file is left, and a write whose
// bytes did not match left nothing pending.
func TestBatchFileStoreCommitsTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "model"), 0o755)
	os.WriteFile(filepath.Join(dir, "model", "old.bin"), []byte("old"), 0o644)
	s, err := providers.NewBatchFileStore(dir, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := providers.AsCommitter(s)
	if !ok {
		t.Fatal("a batch file store is not a Committer")
	}
	// Bigger than the copy buffer and the writeback step, so that both loops turn.
	big := bytes.Repeat([]byte("0123456789abcdef"), (9<<20)/16+3)
	files := map[string][]byte{"model/old.bin": []byte("new content"), "model/big.bin": big, "engine/config.json": []byte(`{"a":1}`)}
	for key, data := range files {
		sum := sha256.Sum256(data)
		o, err := s.Write(ctx, key, bytes.NewReader(data), providers.WriteOptions{Size: int64(len(data)), Checksums: providers.Checksums{SHA256: hex.EncodeToString(sum[:])}})
		if err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		if o.Size != int64(len(data)) {
			t.Errorf("write %s: size %d, want %d", key, o.Size, len(data))
		}
	}
	// A write whose bytes do not match its SHA-256 fails at once and leaves nothing behind.
	_, err = s.Write(ctx, "model/bad.bin", strings.NewReader("tampered"), providers.WriteOptions{Size: 8, Checksums: providers.Checksums{SHA256: strings.Repeat("0", 64)}})
	if !errors.Is(err, providers.ErrContentMismatch) {
		t.Fatalf("mismatching write: %v, want ErrContentMismatch", err)
	}
	// Before Commit: the old file is as it was, the new ones are not there.
	if got, _ := os.ReadFile(filepath.Join(dir, "model", "old.bin")); string(got) != "old" {
		t.Errorf("before Commit, model/old.bin holds %q, want the old content", got)
	}
	for _, key := range []string{"model/big.bin", "engine/config.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("before Commit, %s: %v, want not there", key, err)
		}
	}
	if failed := c.Commit(ctx); len(failed) != 0 {
		t.Fatalf("Commit: %v", failed)
	}
	for key, data := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("after Commit, %s: %d bytes (%v), want %d", key, len(got), err, len(data))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "model", "bad.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mismatching write is there after Commit: %v", err)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".lifeboat-tmp-") {
			t.Errorf("temporary file left after Commit: %s", p)
		}
		return nil
	})
	if failed := c.Commit(ctx); len(failed) != 0 {
		t.Errorf("a second Commit with nothing pending: %v", failed)
	}
}

// A commit that cannot rename a file into place (a directory where the file goes) reports that
// key alone and removes its temporary file; the others land.
func TestBatchFileStoreCommitReportsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := providers.NewBatchFileStore(dir, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a/blocked", "a/fine"} {
		if _, err := s.Write(ctx, key, strings.NewReader("x"), providers.WriteOptions{Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "blocked", "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, _ := providers.AsCommitter(s)
	failed := c.Commit(ctx)
	if len(failed) != 1 || failed["a/blocked"] == nil {
		t.Fatalf("Commit failed %v, want a/blocked alone", failed)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "a", "fine")); err != nil || string(got) != "x" {
		t.Errorf("a/fine after Commit: %q, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "a"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".lifeboat-tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
