package providers_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lifeboat/providers"
)

// A local model directory laid out like a Hugging Face cache snapshot: the files are symbolic
// links into a blobs directory, and the snapshot is reached through a "current" link.
func TestFileFollowsLinkedFilesAndRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	blobs := filepath.Join(base, "blobs")
	snap := filepath.Join(base, "snapshots", "abc123")
	for _, d := range []string{blobs, filepath.Join(snap, "sub"), filepath.Join(base, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(blobs, "sha-config"), []byte(`{"a":1}`), 0o644)
	os.WriteFile(filepath.Join(blobs, "sha-weights"), []byte("weights"), 0o644)
	os.WriteFile(filepath.Join(base, "elsewhere", "x"), []byte("x"), 0o644)
	os.Symlink("../../blobs/sha-config", filepath.Join(snap, "config.json"))
	os.Symlink("../../../blobs/sha-weights", filepath.Join(snap, "sub", "model.safetensors"))
	os.Symlink("../elsewhere", filepath.Join(snap, "linkeddir")) // not followed
	os.Symlink("missing", filepath.Join(snap, "dangling"))       // skipped
	os.Symlink(snap, filepath.Join(base, "current"))

	s, err := providers.Open(t.Context(), filepath.Join(base, "current"), providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	sizes := map[string]int64{}
	if err := s.List(t.Context(), "", func(o providers.Object) error {
		got = append(got, o.Key)
		sizes[o.Key] = o.Size
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"config.json", "sub/model.safetensors"}) {
		t.Fatalf("listed %q", got)
	}
	if sizes["sub/model.safetensors"] != 7 {
		t.Fatalf("sizes %v", sizes)
	}
	var sub []string
	s.List(t.Context(), "sub", func(o providers.Object) error { sub = append(sub, o.Key); return nil })
	if !slices.Equal(sub, []string{"sub/model.safetensors"}) {
		t.Fatalf("listed sub: %q", sub)
	}
}

// Written files get an ordinary file's mode: a replica on disk is read by other users too (a
// vLLM container running as its own uid), not only by the user who replicated it.
func TestFileWriteMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := providers.Open(t.Context(), dir, providers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(t.Context(), "model/config.json", strings.NewReader("{}"), providers.WriteOptions{Size: 2}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "model", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", fi.Mode().Perm())
	}
}
