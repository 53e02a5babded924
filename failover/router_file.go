package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lifeboat/providers/localfile"
)

// FileRouter keeps the weights in a JSON document, replaced atomically (write a temporary file
// in the same directory, fsync, rename, fsync the directory) and versioned: each Apply
// increments version. A custom L7 router can watch it; it is also the embedded default.
//
//	{"version": 7, "updated": "2026-12-01T07:00:00Z",
//	 "classes": {"eu-only": {"eu-west-1": {"weight": 0, "state": "maint"}, ...}, ...}}
type FileRouter struct {
	Path string
}

// FileRouterDoc is the document's schema.
type FileRouterDoc struct {
	Version int64                                 `json:"version"`
	Updated time.Time                             `json:"updated"`
	Classes map[string]map[string]FileRouterEntry `json:"classes"`
}

// FileRouterEntry is one region's weight and state in one class.
type FileRouterEntry struct {
	Weight int   `json:"weight"`
	State  State `json:"state"`
}

func (f *FileRouter) String() string { return "file:" + f.Path }

// MaxWeight: the file takes any non-negative int; 1,000,000 keeps readers' arithmetic safe.
func (f *FileRouter) MaxWeight() int { return 1_000_000 }

func (f *FileRouter) load() (*FileRouterDoc, error) {
	b, err := localfile.ReadFile(f.Path, maxRouterBody)
	if err != nil {
		return nil, fmt.Errorf("router %s: %w", f.Path, err)
	}
	var doc FileRouterDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("router %s: not a weights document: %v", f.Path, err)
	}
	for c, m := range doc.Classes {
		for r, e := range m {
			switch e.State {
			case "", Ready, Drain, Maint:
			default:
				return nil, fmt.Errorf("router %s: classes.%s.%s.state: %q is not ready, drain or maint", f.Path, c, r, e.State)
			}
			if e.Weight < 0 {
				return nil, fmt.Errorf("router %s: classes.%s.%s.weight: negative", f.Path, c, r)
			}
		}
	}
	return &doc, nil
}

// Read returns the document's weights and states.
func (f *FileRouter) Read(ctx context.Context) (RouterState, error) {
	if err := ctx.Err(); err != nil {
		return RouterState{}, err
	}
	doc, err := f.load()
	if err != nil {
		return RouterState{}, err
	}
	rs := RouterState{Weights: Weights{}, States: States{}}
	for c, m := range doc.Classes {
		rs.Weights[c] = map[string]int{}
		for r, e := range m {
			rs.Weights[c][r] = e.Weight
			if e.State != "" && e.State != Ready {
				rs.States.Set(c, r, e.State)
			}
		}
	}
	return rs, nil
}

// Version returns the document's version (0 when it does not exist).
func (f *FileRouter) Version() (int64, error) {
	doc, err := f.load()
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return doc.Version, nil
}

// Apply writes the desired classes into the document, keeping the others, as a new version.
func (f *FileRouter) Apply(ctx context.Context, desired RouterState) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	doc, err := f.load()
	if errors.Is(err, os.ErrNotExist) {
		doc, err = &FileRouterDoc{}, nil
	}
	if err != nil {
		return err
	}
	if doc.Classes == nil {
		doc.Classes = map[string]map[string]FileRouterEntry{}
	}
	for c, vec := range desired.Weights {
		m := map[string]FileRouterEntry{}
		for r, v := range vec {
			m[r] = FileRouterEntry{Weight: v, State: desired.States.Get(c, r)}
		}
		for r, s := range desired.States[c] {
			if _, ok := m[r]; !ok {
				m[r] = FileRouterEntry{State: s}
			}
		}
		doc.Classes[c] = m
	}
	doc.Version++
	doc.Updated = time.Now().UTC().Truncate(time.Millisecond)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(f.Path, append(b, '\n'))
}

// writeFileAtomic replaces path with data: a reader sees the old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("router %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("router %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("router %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("router %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("router %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
