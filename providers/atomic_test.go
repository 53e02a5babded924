package providers_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"lifeboat/providers"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "new", "sub", "report.json")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := providers.WriteFileAtomic(name, 0o644, write("first")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("stat %v, mode %v", err, fi.Mode())
	}
	// A failing write keeps the old content and leaves no temporary file.
	boom := errors.New("boom")
	err = providers.WriteFileAtomic(name, 0o644, func(w io.Writer) error { io.WriteString(w, "half"); return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "first" {
		t.Fatalf("content after a failed write: %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(name)); len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
	if err := providers.WriteFileAtomic(name, 0o600, write("second")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(name); string(b) != "second" {
		t.Fatalf("content: %q", b)
	}
	if fi, _ := os.Stat(name); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}
