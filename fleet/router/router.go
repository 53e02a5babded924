package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"lifeboat/providers"
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

// RouterVersion is, per class, what identifies the router's content as this run last wrote or
// read it back: the router's ETag, or, for a router without compare-and-swap, a digest of what
// was read ("digest:…"). A conditional write is checked against it — never against a version
// fetched right before the write, which would let a stale holder overwrite another's change.
type RouterVersion map[string]string

// ConditionalDriver is a driver that writes only where the router still holds what this run last
// saw. The http and Caddy drivers send If-Match with the ETag (the router answers 412 otherwise:
// compare-and-swap); HAProxy, which has no compare-and-swap, compares the backend's servers
// immediately before its commands.
type ConditionalDriver interface {
	Driver
	// ReadVersion is Read, with each class's version.
	ReadVersion(ctx context.Context) (RouterState, RouterVersion, error)
	// ApplyIf is Apply on a condition: a class whose content is no longer since[class] is not
	// written and the error matches ErrRouterConflict — someone else changed the router; it is
	// never re-read and retried. fence is called immediately before every write the driver sends;
	// its error stops the write.
	ApplyIf(ctx context.Context, desired RouterState, since RouterVersion, fence func() error) error
}

// ZeroDrainDriver is a driver on which a kept region with weight 0 is the drain (Caddy has no
// drain state): a ready region with weight 0 and a drained one read the same.
type ZeroDrainDriver interface {
	Driver
	ZeroWeightIsDrain() bool
}

// NotingDriver is a driver with something to report about the router beyond weights and states:
// what its controllers say of the objects it drives (a gateway's Accepted and ResolvedRefs
// conditions on an HTTPRoute). Notes is as of the driver's last read; the executor logs the
// notes whenever they change.
type NotingDriver interface {
	Driver
	Notes() []string
}

// ZeroWeightIsDrain says whether weight 0 is the drain on d (a ZeroDrainDriver that says so). A
// driver wrapper keeps the capability by being built with Wrap.
func ZeroWeightIsDrain(d Driver) bool {
	z, ok := d.(ZeroDrainDriver)
	return ok && z.ZeroWeightIsDrain()
}

// normalizeZeroDrain makes a ready region with weight 0 read as drained, for drivers where
// the two are the same thing.
func NormalizeZeroDrain(rs RouterState) RouterState {
	out := rs.Clone()
	if out.States == nil {
		out.States = States{}
	}
	for c, vec := range out.Weights {
		for r, v := range vec {
			if v == 0 && out.States.Get(c, r) == Ready {
				out.States.Set(c, r, Drain)
			}
		}
	}
	return out
}

// ReadVersion reads d with each class's version: the driver's own when it is a
// ConditionalDriver, else a digest of what it read.
func ReadVersion(ctx context.Context, d Driver) (RouterState, RouterVersion, error) {
	if c, ok := d.(ConditionalDriver); ok {
		return c.ReadVersion(ctx)
	}
	rs, err := d.Read(ctx)
	if err != nil {
		return rs, nil, err
	}
	return rs, stateDigest(rs), nil
}

// ApplyIf applies desired only where the router is still at since: through the driver's own
// ApplyIf, or else (the file driver) by comparing a fresh Read with since immediately
// before one Apply. fence runs before each write; nil means none.
func ApplyIf(ctx context.Context, d Driver, desired RouterState, since RouterVersion, fence func() error) error {
	if fence == nil {
		fence = func() error { return nil }
	}
	if c, ok := d.(ConditionalDriver); ok {
		return c.ApplyIf(ctx, desired, since, fence)
	}
	if err := fence(); err != nil {
		return err
	}
	rs, err := d.Read(ctx)
	if err != nil {
		return err
	}
	now := stateDigest(rs)
	for _, class := range slices.Sorted(maps.Keys(desired.Weights)) {
		if err := SameVersion(d.String(), class, since, now[class]); err != nil {
			return err
		}
	}
	if err := fence(); err != nil {
		return err
	}
	return d.Apply(ctx, desired)
}

// sameVersion: class is still at the version this run last saw; ErrRouterConflict otherwise.
func SameVersion(router, class string, since RouterVersion, now string) error {
	want, ok := since[class]
	switch {
	case !ok:
		return fmt.Errorf("%s: class %s: this run has not read it back, so it cannot write it conditionally: %w", router, class, ErrRouterConflict)
	case want != now:
		return fmt.Errorf("%s: class %s changed since this run last wrote or read it back (someone else edited the router); nothing overwritten: %w", router, class, ErrRouterConflict)
	}
	return nil
}

// stateDigest is each class's digest of its weights and states as read.
func stateDigest(rs RouterState) RouterVersion {
	v := RouterVersion{}
	for class, w := range rs.Weights {
		b, _ := json.Marshal(struct {
			W map[string]int   `json:"w"`
			S map[string]State `json:"s"`
		}{w, rs.States[class]})
		v[class] = DigestOf(b)
	}
	return v
}

func DigestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "digest:" + hex.EncodeToString(sum[:12])
}

// ErrRouterUnreachable is matched by driver errors that mean the router did not answer
// (unreachable); other driver errors are protocol or content problems.
var ErrRouterUnreachable = errors.New("router unreachable")

// ErrRouterConflict is matched when a conditional write found the router changed by someone else
// since this run last wrote or read it back (a refusal: stop, never overwrite).
var ErrRouterConflict = errors.New("router changed concurrently")

// ErrRouterTopology is matched when the router's configuration itself breaks residency (a
// region outside a class's eligible list can receive that class's traffic): refused.
var ErrRouterTopology = errors.New("router topology breaks residency")

// maxRouterBody bounds every answer read from a router.
const MaxBody = 4 << 20

// readBounded reads at most maxRouterBody bytes of r, failing beyond.
func ReadBounded(r io.Reader) ([]byte, error) { return ReadBoundedN(r, MaxBody) }

func ReadBoundedN(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > n {
		return nil, fmt.Errorf("answer larger than %d bytes", n)
	}
	return b, nil
}

// routerClient is c (nil: a fresh client) made never to follow a redirect: the router's answer
// is the 3xx itself, which routerAnswer refuses, whichever host it names.
func Client(c *http.Client) *http.Client {
	var cl http.Client
	if c != nil {
		cl = *c
	}
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cl
}

// routerAnswer reads one HTTP router answer, bounded: a redirect is refused (a router driver
// follows none), and a body that stalls or is cut off mid-way is the router not answering
// (ErrRouterUnreachable), not bad input. what names the request ("router GET URL").
func Answer(what string, resp *http.Response) ([]byte, error) {
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, fmt.Errorf("%s: HTTP %d redirect to %q refused: router drivers follow no redirect; point router.url at the router itself", what, resp.StatusCode, FirstLine(resp.Header.Get("Location")))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%s: the answer stalled or was cut off after %d bytes: %v: %w", what, len(b), err, ErrRouterUnreachable)
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", what, MaxBody)
	}
	return b, nil
}

// routerStatus is the error for an unexpected HTTP status from a router's API. A 5xx or 429 is
// the router up but not serving its API: unreachable for now (exit 4, try again), as a refused
// connection is, and a write so answered may or may not have landed (the read-back settles
// it). Any other status is a protocol or content problem.
func Status(what string, code int, body []byte) error {
	err := fmt.Errorf("%s: HTTP %d: %s", what, code, FirstLine(string(body)))
	if code >= 500 || code == http.StatusTooManyRequests {
		return fmt.Errorf("%w: %w", err, ErrRouterUnreachable)
	}
	return err
}

// checkTopology verifies that a router's state can carry a class's traffic only to its eligible
// regions: a region the router holds for a class outside its list must have weight 0 and be cut
// off (maint), or the router itself leaks and nothing is changed.
func CheckTopology(classes map[string][]string, rs RouterState) error {
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

// firstLine is the first line of a router's reply, sanitised for the terminal and bounded
// (providers.Sanitize): a router's text is never shown verbatim.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return providers.Sanitize(s, 200)
}
