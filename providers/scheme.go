package providers

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Scheme is one kind of store URL and the package that implements it, in the way of restic's
// location registry: every store package registers its scheme from an init function, and Open
// dispatches by the URL's scheme. A program links the stores it blank-imports (cmd/lifeboat
// links them all); package providers itself links none but file://.
type Scheme struct {
	// Name is the URL scheme: "s3", "gs", "az", "oci" (file is registered by this package).
	Name string
	// Open returns the store loc names; loc has been parsed and checked by ParseURL. It must not
	// contact the store: the first call does.
	Open func(ctx context.Context, loc Location, opts Options) (Store, error)
	// Hint is the remedy to print for an error of kind k on this scheme ("" for none).
	Hint func(k Kind) string
}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]Scheme{}
)

// Register makes a scheme available to Open. It panics on an empty or repeated name or a nil
// Open, as database/sql's Register does: both are programming errors found at start-up.
func Register(s Scheme) {
	if s.Name == "" || s.Open == nil {
		panic("providers.Register: a scheme needs a name and an Open")
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

// errNotLinked is Open's error for a well-formed URL whose store this program does not link.
func errNotLinked(scheme string) error {
	return fmt.Errorf("%w: no %s:// store is linked into this program (blank-import its package under lifeboat/providers)", ErrMisconfigured, scheme)
}

func init() {
	Register(Scheme{
		Name: "file",
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
