// Package verify checks DR replicas against a manifest: Quick compares sizes and native full-object
// checksums from listings (and a Stat only where a listing cannot prove a file), Deep re-hashes
// every byte with bounded memory, and Replicas runs either over several stores concurrently.
package verify
