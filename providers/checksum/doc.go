// Package checksum is the one home of the digests Lifeboat records and compares: the algorithm
// names, the set a manifest keeps per file (five the clouds can compare, plus BLAKE3 for deep
// verification), hashers for each, and their encodings in the manifest.
//
// Encodings: lower-case hex for SHA-256, SHA-1 and BLAKE3, base64 of the big-endian digest for
// the rest.
package checksum
