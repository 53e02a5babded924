package providers

import (
	"context"
	"strings"
)

// Registry is what a store that is an OCI registry repository (oci://) offers besides Store;
// IsRegistry and Mount reach it through wrappers, so that code above providers needs no import
// of the registry store.
type Registry interface {
	Store
	// MountFrom is Mount with this store as dst.
	MountFrom(ctx context.Context, src Store, key string, opts WriteOptions) (bool, error)
}

// AsRegistry returns the Registry of s or of a store it wraps (wrappers expose Unwrap() Store).
func AsRegistry(s Store) (Registry, bool) {
	for s != nil {
		if r, ok := s.(Registry); ok {
			return r, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
	return nil, false
}

// IsRegistry reports whether s (seen through wrappers) is an oci:// registry store.
func IsRegistry(s Store) bool {
	_, ok := AsRegistry(s)
	return ok
}

// Mount gives dst the blob of key from src without moving its bytes through this host, when both
// are repositories of one registry (a cross-repository mount: POST …/blobs/uploads/?mount=&from=).
// It reports false, with no error, when it does not apply (other kinds of store, other registries,
// or src's blob is not the digest opts expects): the caller then copies as usual. A registry that
// declines the mount gets the blob streamed from src's repository instead (oras-go's fallback;
// the registry checks the digest on upload).
func Mount(ctx context.Context, dst, src Store, key string, opts WriteOptions) (bool, error) {
	r, ok := AsRegistry(dst)
	if !ok {
		return false, nil
	}
	return r.MountFrom(ctx, src, key, opts)
}

// LayerTitle is the title Lifeboat gives the layer of the file at bundle path p: the path in the
// model repository for a model file (model/ dropped), so that `oras pull` writes a model
// repository that loads as is; the bundle path itself for an engine or deployment file
// (engine/…, deploy/…, beside it).
func LayerTitle(p string) string {
	if t, ok := strings.CutPrefix(p, "model/"); ok {
		return t
	}
	return p
}
