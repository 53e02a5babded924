// Package providers is Lifeboat's one small interface over object stores and local disk — list,
// stat with native checksums, ranged read, streaming write, conditional create/compare-and-swap,
// delete — and the factory (Register, Open) that opens a store by its URL's scheme.
//
// It links no cloud SDK: each store is its own package that registers its scheme from init —
// providers/s3, providers/gcs, providers/azure and providers/oci — and a program links those it
// blank-imports (cmd/lifeboat/kinds.go), and owns its scheme's URL grammar, hints and what it
// lacks; file:// (file.go) is built in. store.go is the interface, url.go the generic part of
// the URLs (Location, ParseURL's rules for every scheme, BadURL), scheme.go the factory and the
// file:// grammar, and registryapi.go what a registry store adds.
// Around them, for every store: errors.go and classify.go (one classification of errors),
// retry.go and stall.go (retries, stalled reads), listcap.go and statecap.go (what a store may
// not do), keys.go, digest.go and parts.go (keys, checksums, multipart uploads), readsmall.go
// (bounded reads), atomic.go (atomic local writes), httplog.go (-v request logs), and redact.go
// (internal/base/redact for the layers above).
package providers
