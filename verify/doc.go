// Package verify checks DR replicas against a manifest, byte for byte: Quick compares sizes and
// native full-object checksums from listings (a Stat only where a listing cannot prove a file),
// Deep re-hashes every byte with bounded memory, and Replicas runs either over several stores.
// Copies live in verify/replicate and boot readiness in verify/warm.
package verify
