package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Driver is one router driver: it reads and sets each class's per-region weights and server
// states. Apply is idempotent (it sets the desired state, whatever the router held); the
// executor reads back after every Apply and treats any difference as a failed step.
type Driver interface {
	// Read returns the weights and states of every class the driver manages.
	Read(ctx context.Context) (RouterState, error)
	// Apply makes the router route as desired for the classes in desired.
	Apply(ctx context.Context, desired RouterState) error
	// MaxWeight is the largest weight the router takes (0: no limit the planner must know).
	MaxWeight() int
	// String names the router without any secret.
	String() string
}

// ErrRouterUnreachable is matched by driver errors that mean the router did not answer
// (exit 4); other driver errors are protocol or content problems.
var ErrRouterUnreachable = errors.New("router unreachable")

// ErrRouterConflict is matched when a compare-and-swap write lost to a concurrent edit.
var ErrRouterConflict = errors.New("router changed concurrently")

// ErrRouterTopology is matched when the router's configuration itself breaks residency (a
// region outside a class's eligible list can receive that class's traffic): refused, exit 3.
var ErrRouterTopology = errors.New("router topology breaks residency")

// maxRouterBody bounds every answer read from a router.
const maxRouterBody = 4 << 20

// readBounded reads at most maxRouterBody bytes of r, failing beyond.
func readBounded(r io.Reader) ([]byte, error) { return readBoundedN(r, maxRouterBody) }

func readBoundedN(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("answer larger than %d bytes", n)
	}
	return b, nil
}

// OpenRouter returns the fleet's router driver.
func OpenRouter(f *Fleet) (Driver, error) {
	switch f.Router.Driver {
	case DriverFile:
		return &FileRouter{Path: f.Router.Path}, nil
	case DriverHAProxy:
		return &HAProxyRouter{Socket: f.Router.Socket, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout}, nil
	case DriverCaddy:
		return NewCaddyRouter(f)
	case DriverHTTP:
		return &HTTPRouter{URL: f.Router.URL, Backends: f.Router.Backends, Classes: f.Tenants, Timeout: f.Router.Timeout}, nil
	case "":
		return nil, fmt.Errorf("%s: router.driver: required for failover", f.File)
	}
	return nil, fmt.Errorf("%s: router.driver %s: unknown", f.File, f.Router.Driver)
}

// checkTopology verifies that a router's state can carry a class's traffic only to its eligible
// regions: a region the router holds for a class outside its list must have weight 0 and be cut
// off (maint), or the router itself leaks and nothing is changed.
func checkTopology(classes map[string][]string, rs RouterState) error {
	var bad []string
	for _, c := range slices.Sorted(maps.Keys(rs.Weights)) {
		elig, known := classes[c]
		for _, r := range slices.Sorted(maps.Keys(rs.Weights[c])) {
			if known && slices.Contains(elig, r) {
				continue
			}
			if rs.Weights[c][r] != 0 || rs.States.Get(c, r) != Maint {
				bad = append(bad, fmt.Sprintf("%s/%s (weight %d, %s)", c, r, rs.Weights[c][r], rs.States.Get(c, r)))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %v can receive traffic of a class that must never reach them; take them out of that class's backend", ErrRouterTopology, bad)
	}
	return nil
}
