package manifest

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// LocalFile is a regular file found under a local root.
type LocalFile struct {
	Rel  string // slash-separated, relative to the root
	Abs  string // path to open (a symlink is opened through its link, which stays in the root)
	Size int64
}

// skipDirs are tool metadata, not repository content: git's object store (which would double the
// size with LFS objects) and huggingface_hub's --local-dir bookkeeping.
var skipDirs = map[string]bool{".git": true, ".cache": true}

// WalkDir lists the regular files under root in lexical order. It refuses what a replica could not
// reproduce safely: symlinks that leave the root, symlinked directories, special files (devices,
// sockets, pipes) and names that are not valid UTF-8.
func WalkDir(root string) ([]LocalFile, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("model root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("model root %s is not a directory", root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("model root %s: %w", root, err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return nil, fmt.Errorf("model root %s: %w", root, err)
	}
	var out []LocalFile
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDirs[d.Name()] && path.Dir(rel) == "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !utf8.ValidString(rel) {
			return fmt.Errorf("%s: file name is not valid UTF-8", p)
		}
		if err := checkRelPath(rel); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("%s: broken symlink: %w", p, err)
			}
			target, _ = filepath.Abs(target)
			if target != realRoot && !strings.HasPrefix(target, realRoot+string(filepath.Separator)) {
				return fmt.Errorf("%s: symlink points outside the model root (to %s); copy the file in (cp -L) or point --model at a self-contained directory", p, target)
			}
			tst, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if tst.IsDir() {
				return fmt.Errorf("%s: symlinked directory; replace it with the directory itself", p)
			}
			if !tst.Mode().IsRegular() {
				return fmt.Errorf("%s: symlink to a special file (%s)", p, tst.Mode().Type())
			}
			out = append(out, LocalFile{Rel: rel, Abs: p, Size: tst.Size()})
			return nil
		}
		if !mode.IsRegular() {
			return fmt.Errorf("%s: special file (%s) cannot be part of a DR bundle", p, mode.Type())
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, LocalFile{Rel: rel, Abs: p, Size: info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
