// Package verify checks DR replicas against a manifest, byte for byte: Quick compares sizes and
// native full-object checksums from listings, Deep re-hashes every byte with bounded memory, and
// Replicas runs either over several stores. Copies are verify/replicate's, boots verify/warm's.
//
// Quick stats a file only where a listing cannot prove it (verify.go, compare.go); Deep streams
// every byte through the recorded hashes (deep.go); Settle reads the bytes of the files a quick
// verification could not prove (settle.go); result.go holds the per-file statuses and the report.
package verify
