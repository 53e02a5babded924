package providers

import (
	"errors"
	"fmt"
	"strings"
)

// What a store may be unable to do at all — not a failure of one call but a property of the kind
// of store, reported so that callers refuse early, with the reason, instead of failing half-way.
const (
	// CapCompareAndSwap: conditional writes and deletes (WriteOptions.IfNotExists/IfMatch,
	// DeleteOptions.IfMatch) — the failover lock and the journal's append depend on them.
	CapCompareAndSwap = "compare-and-swap"
	// CapPrefixListing: listing the keys below a prefix — the journal, the drill history and the
	// lock's stale-holder scan depend on it.
	CapPrefixListing = "listing by prefix"
)

// Lack is one thing a kind of store cannot do, and why.
type Lack struct {
	Capability string // CapCompareAndSwap, CapPrefixListing
	Why        string
}

// ErrUnsupported: the store cannot do this at all (see Lacks); retrying will not help.
var ErrUnsupported = errors.New("not supported by this kind of store")

// Lacks returns what stores of a scheme cannot do, as the scheme registered them: nothing for
// file, s3, gs and az; for oci (an OCI registry) compare-and-swap and listing by prefix. It is a
// property of the scheme, known before any store is opened, so that a fleet file can be refused
// as it is read.
func Lacks(scheme string) []Lack {
	if s, ok := lookupScheme(scheme); ok {
		return s.Lacks
	}
	return nil
}

// stateSchemes are the registered schemes that lack nothing control state needs, as "file://,
// s3:// or az://" (file first).
func stateSchemes() string {
	names := []string{"file://"}
	for _, n := range Schemes() {
		if n != "file" && len(Lacks(n)) == 0 {
			names = append(names, n+"://")
		}
	}
	return orList(names, "or")
}

// CheckStateLocation refuses a location that cannot hold control state (the failover lock, its
// journal, drill history), naming each missing capability and why.
func CheckStateLocation(loc Location) error {
	lacks := Lacks(loc.Scheme)
	if len(lacks) == 0 {
		return nil
	}
	parts := make([]string, len(lacks))
	for i, l := range lacks {
		parts[i] = "no " + l.Capability + " (" + l.Why + ")"
	}
	return fmt.Errorf("%w: %s cannot be a state store: %s; use %s for state",
		ErrUnsupported, Redact(loc.String()), strings.Join(parts, "; "), stateSchemes())
}
