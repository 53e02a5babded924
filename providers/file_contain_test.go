package providers_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lifeboat/providers"
)

// TestFileStoreWritesStayBeneathRoot: issue 9 item 6. A directory inside a file:// store that is
// a symbolic link leading out of it (planted, or a careless cp -s) refuses writes and deletes
// through it; a link that stays inside the tree is still fine.
func TestFileStoreWritesStayBeneathRoot(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, outside := filepath.Join(base, "replica"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "inside"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "victim"), []byte("keep me"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, "model")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("inside", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	s, err := providers.NewFileStore(root, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("weights")
	for _, key := range []string{"model/config.json", "model/sub/x.bin", "model/victim"} {
		for _, o := range []providers.WriteOptions{{}, {IfNotExists: true}} {
			_, err := s.Write(ctx, key, bytes.NewReader(data), o)
			if !errors.Is(err, providers.ErrOutsideRoot) || !errors.Is(err, providers.ErrPermission) {
				t.Errorf("Write(%s, %+v) = %v, want ErrOutsideRoot", key, o, err)
			}
		}
	}
	if err := s.Delete(ctx, "model/victim", providers.DeleteOptions{}); !errors.Is(err, providers.ErrOutsideRoot) {
		t.Errorf("Delete through the link = %v, want ErrOutsideRoot", err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("outside the root now holds %d entries, want only the victim", len(ents))
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "keep me" {
		t.Errorf("victim overwritten: %q", b)
	}
	if _, err := s.Write(ctx, "alias/ok.json", bytes.NewReader(data), providers.WriteOptions{}); err != nil {
		t.Errorf("a link inside the tree refused: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "inside", "ok.json")); string(b) != "weights" {
		t.Errorf("inside/ok.json = %q", b)
	}
}
