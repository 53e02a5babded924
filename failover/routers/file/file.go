package file

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go.yaml.in/yaml/v3"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/internal/base/yamlnode"
	"lifeboat/providers/localfile"
)

// Router keeps the weights in a JSON document, replaced atomically (write a temporary file
// in the same directory, fsync, rename, fsync the directory) and versioned: each Apply
// increments version. A custom L7 router can watch it; it is also the embedded default.
//
//	{"version": 7, "updated": "2026-12-01T07:00:00Z",
//	 "classes": {"eu-only": {"eu-west-1": {"weight": 0, "state": "maint"}, ...}, ...}}
type Router struct {
	Path string
}

// Doc is the document's schema.
type Doc struct {
	Version int64                       `json:"version"`
	Updated time.Time                   `json:"updated"`
	Classes map[string]map[string]Entry `json:"classes"`
}

// Entry is one region's weight and state in one class.
type Entry struct {
	Weight int          `json:"weight"`
	State  router.State `json:"state"`
}

func (f *Router) String() string { return "file:" + f.Path }

// MaxWeight: the file takes any non-negative int; 1,000,000 keeps readers' arithmetic safe.
func (f *Router) MaxWeight() int { return 1_000_000 }

func (f *Router) load() (*Doc, error) {
	b, err := localfile.ReadFile(f.Path, router.MaxBody)
	if err != nil {
		return nil, fmt.Errorf("router %s: %w", f.Path, err)
	}
	doc, err := decodeFileRouterDoc(b)
	if err != nil {
		return nil, fmt.Errorf("router %s: %w", f.Path, err)
	}
	return doc, nil
}

// fileRouterShape is the document's shape, said in every error about it.
const fileRouterShape = `{"version": N, "classes": {CLASS: {REGION: {"weight": W, "state": "ready|drain|maint"}}}}`

// decodeFileRouterDoc reads the document strictly: a member it does not know, a value of the
// wrong type or a region without its weight is an error naming the field, never a weight read
// as 0 (a document of another shape would otherwise read as "no traffic anywhere").
func decodeFileRouterDoc(b []byte) (*Doc, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		return nil, fmt.Errorf("not a weights document (%s): %v", fileRouterShape, jsonWhy(err, "an object"))
	}
	doc := &Doc{}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		v := top[k]
		var err error
		switch k {
		case "version":
			err = json.Unmarshal(v, &doc.Version)
		case "updated":
			err = json.Unmarshal(v, &doc.Updated)
		case "classes":
		default:
			return nil, fmt.Errorf("%s: not a member of a weights document (%s)", k, fileRouterShape)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, jsonWhy(err, "a "+map[string]string{"version": "whole number", "updated": "RFC 3339 time"}[k]))
		}
	}
	raw, ok := top["classes"]
	if !ok {
		return nil, fmt.Errorf("classes: missing: not a weights document (%s)", fileRouterShape)
	}
	var classes map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &classes); err != nil || classes == nil {
		return nil, fmt.Errorf("classes: %v (%s)", jsonWhy(err, "an object of classes, each an object of regions"), fileRouterShape)
	}
	doc.Classes = map[string]map[string]Entry{}
	for c, m := range classes {
		if m == nil {
			return nil, fmt.Errorf("classes.%s: want an object of regions, got null", c)
		}
		doc.Classes[c] = map[string]Entry{}
		for r, v := range m {
			at := "classes." + c + "." + r
			e, err := decodeFileRouterEntry(v)
			if err != nil {
				return nil, fmt.Errorf("%s%v", at, err)
			}
			doc.Classes[c][r] = e
		}
	}
	return doc, nil
}

// decodeFileRouterEntry reads {"weight": W, "state": S}; its error starts with the member it is
// about (".weight: …") or ": …" for the entry itself.
func decodeFileRouterEntry(v json.RawMessage) (Entry, error) {
	var e Entry
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return e, fmt.Errorf(`: %v ({"weight": W, "state": S})`, jsonWhy(err, "an object"))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "weight":
			if err := json.Unmarshal(m[k], &e.Weight); err != nil {
				return e, fmt.Errorf(".weight: %v", jsonWhy(err, "a whole number"))
			}
		case "state":
			if err := json.Unmarshal(m[k], &e.State); err != nil {
				return e, fmt.Errorf(".state: %v", jsonWhy(err, "ready, drain or maint"))
			}
		default:
			return e, fmt.Errorf(`.%s: not a member of a region's entry (want "weight" and "state")`, k)
		}
	}
	if _, ok := m["weight"]; !ok {
		return e, errors.New(`.weight: missing (a region's entry is {"weight": W, "state": S})`)
	}
	switch e.State {
	case "", router.Ready, router.Drain, router.Maint:
	default:
		return e, fmt.Errorf(".state: %q is not ready, drain or maint", e.State)
	}
	if e.Weight < 0 {
		return e, fmt.Errorf(".weight: %d is negative", e.Weight)
	}
	return e, nil
}

// jsonWhy says what was wrong with a JSON value: its type when it was of the wrong one, the
// parser's message otherwise ("null" when the value parsed as null).
func jsonWhy(err error, want string) string {
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return "want " + want + ", got null"
	case errors.As(err, &te):
		return "want " + want + ", got a JSON " + te.Value
	}
	return err.Error()
}

// Read returns the document's weights and states.
func (f *Router) Read(ctx context.Context) (router.RouterState, error) {
	if err := ctx.Err(); err != nil {
		return router.RouterState{}, err
	}
	doc, err := f.load()
	if err != nil {
		return router.RouterState{}, err
	}
	rs := router.RouterState{Weights: router.Weights{}, States: router.States{}}
	for c, m := range doc.Classes {
		rs.Weights[c] = map[string]int{}
		for r, e := range m {
			rs.Weights[c][r] = e.Weight
			if e.State != "" && e.State != router.Ready {
				rs.States.Set(c, r, e.State)
			}
		}
	}
	return rs, nil
}

// Version returns the document's version (0 when it does not exist).
func (f *Router) Version() (int64, error) {
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
func (f *Router) Apply(ctx context.Context, desired router.RouterState) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	doc, err := f.load()
	if errors.Is(err, os.ErrNotExist) {
		doc, err = &Doc{}, nil
	}
	if err != nil {
		return err
	}
	if doc.Classes == nil {
		doc.Classes = map[string]map[string]Entry{}
	}
	for c, vec := range desired.Weights {
		m := map[string]Entry{}
		for r, v := range vec {
			m[r] = Entry{Weight: v, State: desired.States.Get(c, r)}
		}
		for r, s := range desired.States[c] {
			if _, ok := m[r]; !ok {
				m[r] = Entry{State: s}
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

// Register the kind; cmd/lifeboat/kinds.go links it in.
func init() {
	fleet.RegisterDriver(fleet.DriverKind{Name: fleet.DriverFile, Order: 1, Config: func() fleet.DriverConfig { return &Config{} }})
}

// The configuration's interface and the driver's capabilities, checked at compile time.
var (
	_ fleet.DriverConfig = (*Config)(nil)
)

// Identity of the built-in drivers keeps the fleet digest's layout from before kinds were
// registered (socket, url, path), so that runs journaled then are still this fleet's.

// FileConfig is the file driver's configuration: router: {driver: file, path: weights.json}.
type Config struct {
	Path string `json:"path"` // the weights document, resolved against the fleet file's directory
}

func (c *Config) Keys(d *fleet.Decoder) yamlnode.Fields {
	return yamlnode.Fields{"path": func(n *yaml.Node, at string) { c.Path = d.Path(n, at) }}
}

func (c *Config) Check(d *fleet.Decoder, f *fleet.Fleet) {
	d.RequireRouter(f, c.Path != "", "path", "the weights document")
	if len(f.Router.Frontends) > 0 {
		d.Errf(d.Line("router"), "router.frontends", "the file driver has no data plane: traffic goes to the receivers' endpoints")
	}
}

func (c *Config) Open(*fleet.Fleet) (router.Driver, error) { return &Router{Path: c.Path}, nil }
func (c *Config) Identity() []string                       { return []string{"", "", c.Path} }
