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

// Lacks returns what stores of a scheme cannot do: nothing for file, s3, gs and az; for oci (an
// OCI registry) compare-and-swap and listing by prefix. It is a property of the scheme, known
// before any store is opened, so that a fleet file can be refused as it is read.
func Lacks(scheme string) []Lack {
	if scheme == "oci" {
		return []Lack{
			{CapCompareAndSwap, "the OCI distribution API has no conditional write: a tag is overwritten by whoever pushes last, so two holders could both believe they own the failover lock"},
			{CapPrefixListing, "a registry lists tags and (sometimes) repositories, never objects by key prefix, so the journal and drill history could not be read back"},
		}
	}
	return nil
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
	return fmt.Errorf("%w: %s cannot be a state store: %s; use file://, s3://, gs:// or az:// for state",
		ErrUnsupported, Redact(loc.String()), strings.Join(parts, "; "))
}
