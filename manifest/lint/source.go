package lint

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"lifeboat/manifest"
	"lifeboat/providers/localfile"
)

// DirSource serves bundle files from local directories: model/… from Model, and engine/… and
// deploy/… from Bundle's engine/ and deploy/ directories when Bundle is set. If only Bundle is set,
// Model defaults to Bundle/model (a restored replica).
type DirSource struct {
	Model  string
	Bundle string
}

func (s DirSource) resolve(p string) (string, error) {
	model := s.Model
	if model == "" && s.Bundle != "" {
		model = filepath.Join(s.Bundle, "model")
	}
	var base, rel string
	switch {
	case strings.HasPrefix(p, "model/") && model != "":
		base, rel = model, strings.TrimPrefix(p, "model/")
	case (strings.HasPrefix(p, "engine/") || strings.HasPrefix(p, "deploy/")) && s.Bundle != "":
		base, rel = s.Bundle, p
	default:
		return "", fmt.Errorf("%s: not available from the given directories: %w", p, fs.ErrNotExist)
	}
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s: path leaves the bundle", p)
	}
	return filepath.Join(base, filepath.FromSlash(rel)), nil
}

// Size implements Source.
func (s DirSource) Size(_ context.Context, p string) (int64, error) {
	name, err := s.resolve(p)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s: not a regular file", name)
	}
	return st.Size(), nil
}

// ReadAt implements Source.
func (s DirSource) ReadAt(_ context.Context, p string, b []byte, off int64) (int, error) {
	name, err := s.resolve(p)
	if err != nil {
		return 0, err
	}
	f, _, err := localfile.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.ReadAt(b, off)
}

// List implements Lister for the model directory.
func (s DirSource) List(_ context.Context) ([]string, error) {
	model := s.Model
	if model == "" && s.Bundle != "" {
		model = filepath.Join(s.Bundle, "model")
	}
	if model == "" {
		return nil, nil
	}
	files, err := manifest.WalkDir(model)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = "model/" + f.Rel
	}
	return out, nil
}
