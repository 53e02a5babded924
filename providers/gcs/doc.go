// Package gcs is the gs:// store: Google Cloud Storage through its Go client, registered with
// providers.Register; blank-import it to open gs:// URLs (STORAGE_EMULATOR_HOST is honoured).
//
// url.go is the scheme: the gs://BUCKET/PREFIX grammar, the hints and the registration. gcs.go
// holds the client: CRC32C checksums, generation-based compare-and-swap, bounded retries.
package gcs
