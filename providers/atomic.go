package providers

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes a local file through a temporary file in the same directory (created,
// with its parents, if missing), synced and renamed into place, so that a reader — or a crash —
// never sees a partial file under name. The file gets mode perm (CreateTemp's 0600 would hide a
// report or manifest from the other users who read it). It is the one atomic local write outside
// the file store, whose Write adds conditional commits on top of the same steps.
func WriteFileAtomic(name string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), name); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}
