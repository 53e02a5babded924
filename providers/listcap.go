package providers

import (
	"errors"
	"fmt"
)

// ErrListTooLarge: a listing went past a cap — more entries than Options.MaxListEntries, or an
// S3 listing page larger than MaxListPageBytes. A store's contents are not trusted to be small:
// the cap is a named failure, never a listing silently cut short.
var ErrListTooLarge = errors.New("listing too large")

// DefaultMaxListEntries is Options.MaxListEntries when unset: a model replica holds thousands of
// files, a shared bucket prefix perhaps a few hundred thousand.
const DefaultMaxListEntries = 1_000_000

// MaxListPageBytes bounds one S3 listing response: 1,000 keys of at most 1,024 bytes, XML-escaped,
// with their metadata, stay well below it. The SDK reads a page whole, so without it an endless
// page grows memory without limit.
const MaxListPageBytes = 32 << 20

func (o Options) EffectiveMaxListEntries() int {
	if o.MaxListEntries > 0 {
		return o.MaxListEntries
	}
	return DefaultMaxListEntries
}

// CapEntries wraps a List callback so that entry max+1 ends the listing with ErrListTooLarge.
func CapEntries(fn func(Object) error, max int) func(Object) error {
	n := 0
	return func(o Object) error {
		if n++; n > max {
			return fmt.Errorf("%w: more than %d objects (raise Options.MaxListEntries if that is expected)", ErrListTooLarge, max)
		}
		return fn(o)
	}
}
