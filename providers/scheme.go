package providers

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"sync"
)

// Scheme is one kind of store URL and the package that implements it, in the way of restic's
// location registry: every store package registers its scheme from an init function — its URL
// grammar, its hints, what it lacks and its constructor — and ParseURL and Open dispatch by the
// URL's scheme. A program links the stores it blank-imports (cmd/lifeboat/kinds.go links them
// all); package providers itself links none but file://. A program that does not link a store
// cannot parse its URLs either: ParseURL refuses them as an unknown scheme that says so.
type Scheme struct {
	// Name is the URL scheme: "s3", "gs", "az", "oci" (file is registered by this package).
	Name string
	// Usage is the form of a URL after "NAME://", for messages ("BUCKET/PREFIX").
	Usage string
	// Query are the query parameters the scheme's URLs may carry; ParseURL refuses any other, and
	// any given twice or empty, before Parse sees the URL.
	Query []string
	// Credentials is the advice of the error refusing a URL that carries credentials: where this
	// scheme's come from instead ("" means the SDK's environment variables or default chain).
	Credentials string
	// Parse checks the scheme's own grammar of raw, already parsed as u and checked for what
	// every store URL must satisfy (see ParseURL), and returns its Location with Scheme set to
	// Name. Its errors come from BadURL.
	Parse func(raw string, u *url.URL) (Location, error)
	// Format renders a Location of this scheme as its canonical URL, which Parse accepts and turns
	// into the same Location; nil means NAME://BUCKET/PREFIX.
	Format func(Location) string
	// Open returns the store loc names; loc has been parsed and checked by ParseURL. It must not
	// contact the store: the first call does.
	Open func(ctx context.Context, loc Location, opts Options) (Store, error)
	// Hint is the remedy to print for an error of kind k on this scheme ("" for none).
	Hint func(k Kind) string
	// Lacks are what every store of the scheme cannot do (see Lacks).
	Lacks []Lack
}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]Scheme{}
)

// Register makes a scheme available to ParseURL and Open. It panics on an empty or repeated name,
// a nil Parse or a nil Open, as database/sql's Register does: all are programming errors found at
// start-up.
func Register(s Scheme) {
	if s.Name == "" || s.Open == nil || s.Parse == nil {
		panic("providers.Register: a scheme needs a name, a Parse and an Open")
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if _, dup := schemes[s.Name]; dup {
		panic("providers.Register: scheme " + s.Name + " registered twice")
	}
	schemes[s.Name] = s
}

func lookupScheme(name string) (Scheme, bool) {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	s, ok := schemes[name]
	return s, ok
}

// Schemes are the names of the registered schemes, sorted.
func Schemes() []string {
	schemesMu.RLock()
	defer schemesMu.RUnlock()
	var names []string
	for n := range schemes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// errNotLinked is Open's error for a location whose store this program does not link.
func errNotLinked(scheme string) error {
	return fmt.Errorf("%w: no %s:// store is linked into this program (blank-import its package under lifeboat/providers)", ErrMisconfigured, scheme)
}

func init() {
	Register(Scheme{
		Name:   "file",
		Usage:  "/abs/path",
		Parse:  parseFileURL,
		Format: formatFileURL,
		Open: func(_ context.Context, loc Location, opts Options) (Store, error) {
			return NewFileStore(loc.Path, opts)
		},
		Hint: func(k Kind) string {
			switch k {
			case KindMisconfigured, KindDenied:
				return "check the directory's permissions"
			case KindNotFound:
				return "check the path"
			}
			return ""
		},
	})
}

// parseFileURL is file:///abs/path or file://./rel/path (a plain path never reaches it).
func parseFileURL(raw string, u *url.URL) (Location, error) {
	p := u.Path
	switch u.Host {
	case "", "localhost":
	case ".", "..":
		p = u.Host + p // file://./rel
	default:
		return Location{}, BadURL(raw, "file URLs name a local path: file:///abs/path or file://./rel/path, not host %q", u.Host)
	}
	if p == "" {
		return Location{}, BadURL(raw, "empty path")
	}
	return Location{Scheme: "file", Path: filepath.Clean(p)}, nil
}

func formatFileURL(l Location) string {
	if !filepath.IsAbs(l.Path) {
		return "./" + filepath.ToSlash(l.Path) // file://./rel would also do; a plain path reads better
	}
	return (&url.URL{Scheme: "file", Path: l.Path}).String()
}
