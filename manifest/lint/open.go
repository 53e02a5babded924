package lint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"lifeboat/manifest"
	"lifeboat/providers"
)

// Opener opens a store URL (the CLI's, so that every store is opened the same way).
type Opener func(ctx context.Context, rawURL string) (providers.Store, error)

// OpenSource turns the --model and --bundle arguments — directories or store URLs — into the
// Source a lint reads: local directories as they are, or a store read through ranged reads
// (listed once). file:// URLs are local directories. Pointing at the wrong level is diagnosed
// before anything is linted: a bundle given as --model (it holds model/config.json, not
// config.json) or a model repository given as --bundle. The returned func releases the store.
func OpenSource(ctx context.Context, m *manifest.Manifest, dirs DirSource, open Opener) (Source, func(), error) {
	noop := func() {}
	var remote string
	layout := manifest.ModelRepoLayout
	for _, d := range []struct {
		flag string
		v    *string
	}{{"--model", &dirs.Model}, {"--bundle", &dirs.Bundle}} {
		if !strings.Contains(*d.v, "://") {
			continue
		}
		loc, err := providers.ParseURL(*d.v)
		if err != nil {
			return nil, noop, fmt.Errorf("%s: %w", d.flag, err)
		}
		if loc.Scheme == "file" {
			*d.v = loc.Path
			continue
		}
		remote = *d.v
		if d.flag == "--bundle" {
			layout = manifest.BundleLayout
		}
	}
	if remote == "" {
		return dirs, noop, checkDirs(dirs)
	}
	if dirs.Model != "" && dirs.Bundle != "" {
		return nil, noop, errors.New("give either --model or --bundle when one of them is a store URL, not both")
	}
	st, err := open(ctx, remote)
	if err != nil {
		return nil, noop, err
	}
	src := manifest.NewStoreSource(st, layout)
	if err := src.Prefetch(ctx); err != nil && !errors.Is(err, providers.ErrInvalidKey) {
		st.Close()
		return nil, noop, err
	}
	if layout == manifest.ModelRepoLayout && LooksLikeBundle(ctx, m, src) {
		st.Close()
		return nil, noop, fmt.Errorf("%s looks like a DR bundle (it holds model/… paths of the manifest): use --bundle %s for a replica; --model is the model repository itself", remote, remote)
	}
	return src, func() { st.Close() }, nil
}

// checkDirs refuses local directories that do not exist or are at the wrong level.
func checkDirs(dirs DirSource) error {
	for _, d := range []string{dirs.Model, dirs.Bundle} {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if d := dirs.Model; d != "" && !exists(filepath.Join(d, "config.json")) && exists(filepath.Join(d, "model", "config.json")) {
		return fmt.Errorf("--model %s: no config.json here, but model/config.json: this is a DR bundle — use --bundle %s, or --model %s", d, d, filepath.Join(d, "model"))
	}
	if d := dirs.Bundle; d != "" && !exists(filepath.Join(d, "model")) && !exists(filepath.Join(d, "engine")) && !exists(filepath.Join(d, "deploy")) {
		hint := "did you mean the parent directory?"
		if exists(filepath.Join(d, "config.json")) {
			hint = "it holds config.json: use --model " + d + " for a model repository"
		}
		return fmt.Errorf("--bundle %s: no model/, engine/ or deploy/ here — %s", d, hint)
	}
	return nil
}

// LooksLikeBundle reports whether a model-repository source holds none of the manifest's model
// files but does hold them under model/ — a replica given to --model.
func LooksLikeBundle(ctx context.Context, m *manifest.Manifest, src *manifest.StoreSource) bool {
	direct, nested := 0, 0
	for _, f := range m.PartFiles(manifest.PartModel) {
		if _, err := src.Size(ctx, f.Path); err == nil {
			direct++
		}
		if _, err := src.Size(ctx, "model/"+f.Path); err == nil {
			nested++
		}
	}
	return direct == 0 && nested > 0
}
