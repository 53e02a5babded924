// Package verify checks replicas against a DR manifest: quick (native checksums from metadata),
// deep (re-hash every byte), repair/replicate/restore, and the warm-readiness of booted replicas.
// It is populated by the verification and boot work (issues 3 and 4).
package verify
