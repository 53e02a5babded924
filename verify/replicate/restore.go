package replicate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"lifeboat/manifest"
	"lifeboat/providers"
)

// Restore materialises a replica into the local directory dir: the DR bundle layout (model/,
// engine/, deploy/ — the manifest's paths), every byte checked against the manifest as it streams.
// It is Run with a file:// target, so it is resumable and never partial: a file already in
// dir is skipped only once proven intact (the same size and a SHA-256 re-read that matches the
// manifest — a local directory keeps no native checksums); a file that differs, or is missing,
// streams from the source straight into a temporary file that is renamed into place only after its
// size and checksums matched and it is on disk (fsynced, the copies' fsyncs batched after the last
// byte arrived: providers.NewBatchFileStore). Files it writes are not read a second time.
//
// Before anything is written, every manifest path is checked to resolve inside dir (see
// RestorePath): a path that is absolute, climbs out with "..", or runs through a symbolic link that
// leads out of dir refuses the whole restore with an error wrapping ErrOutsideDir. With
// o.Trust, a manifest no accepted key signed is refused first (signature.ErrUntrusted).
func Restore(ctx context.Context, m *manifest.Manifest, from providers.Store, dir string, o Options) (*RestoreReport, error) {
	m, err := o.Trust.enforce(ctx, m, o)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		if _, err := RestorePath(abs, f.Path); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	// Batched: every file's bytes are written and checked first, then all are fsynced, renamed
	// into place and their directories fsynced together, when the last copy is done (Run commits
	// before its check of the result) — not one copy waiting for its own fsync before the next.
	to, err := providers.NewBatchFileStore(abs, providers.Options{})
	if err != nil {
		return nil, err
	}
	defer to.Close()
	rep, err := Run(ctx, m, from, to, o)
	out := &RestoreReport{Report: rep, Dir: abs}
	if rep != nil && rep.Status == OK {
		out.Layout = BundleLayout(m, abs)
	}
	return out, err
}

// RestoreReport is the result of Restore: the replicate report and where the bundle now is.
type RestoreReport struct {
	*Report
	Dir string `json:"dir"`
	// Layout locates the restored bundle; set only when the restore ended OK.
	Layout *Layout `json:"layout,omitempty"`
}

// Layout locates a bundle restored into a directory.
type Layout struct {
	Root         string `json:"root"`
	ModelDir     string `json:"model_dir"`               // Root/model
	EngineConfig string `json:"engine_config,omitempty"` // Root/engine/<the manifest's engine config>, "" when it has none
	DeployDir    string `json:"deploy_dir"`              // Root/deploy
}

// BundleLayout is where the manifest's parts are (or will be) under root.
func BundleLayout(m *manifest.Manifest, root string) *Layout {
	l := &Layout{Root: root, ModelDir: filepath.Join(root, "model"), DeployDir: filepath.Join(root, "deploy")}
	for _, f := range m.Files {
		if f.Role == manifest.RoleEngineConfig {
			l.EngineConfig = filepath.Join(root, filepath.FromSlash(f.Path))
			break
		}
	}
	return l
}

// ErrOutsideDir: a path would be written outside the restore directory.
var ErrOutsideDir = errors.New("outside the restore directory")

// RestorePath returns where the bundle path rel goes under dir (an absolute, clean directory),
// or an error wrapping ErrOutsideDir when it would land anywhere else: rel is empty, absolute
// (also "C:" or a leading backslash), not clean, holds a ".." element or a backslash, or one of
// its existing parent directories under dir is a symbolic link that leads out of dir.
func RestorePath(dir, rel string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("refusing to restore %q: %s: %w %s", rel, why, ErrOutsideDir, dir)
	}
	switch {
	case rel == "":
		return bad("empty path")
	case strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) || filepath.IsAbs(rel) || filepath.VolumeName(rel) != "":
		return bad("absolute path")
	case strings.ContainsRune(rel, '\\') || strings.ContainsRune(rel, 0):
		return bad("backslash or NUL in the path")
	case path.Clean(rel) != rel || !fs.ValidPath(rel):
		return bad("not a clean relative path")
	}
	for _, el := range strings.Split(rel, "/") {
		if el == ".." {
			return bad("climbs out with ..")
		}
	}
	root, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		root = filepath.Clean(dir) // nothing exists yet, so no link can lead out
	} else if err != nil {
		return "", err
	}
	// Walk the existing prefix of the path: a link that resolves outside root refuses it.
	cur := filepath.Clean(dir)
	els := strings.Split(rel, "/")
	for i, el := range els {
		cur = filepath.Join(cur, el)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return bad(fmt.Sprintf("%s is a dangling symbolic link", strings.Join(els[:i+1], "/")))
		}
		if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return bad(fmt.Sprintf("%s is a symbolic link to %s", strings.Join(els[:i+1], "/"), real))
		}
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}
