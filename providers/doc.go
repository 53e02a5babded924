// Package providers is Lifeboat's one small interface over object stores and local disk — list,
// stat with native checksums, ranged read, streaming write, conditional create/compare-and-swap,
// delete — for file://, s3://, gs://, az:// and oci:// (an OCI registry) URLs (Open, Store).
//
// store.go is the interface and url.go the URLs; file.go, s3.go, gcs.go, azure.go and registry*.go
// the implementations. Around them: errors.go and classify.go (one classification of errors),
// retry.go and stall.go (retries, stalled reads), listcap.go and statecap.go (what a store may not
// do), readsmall.go (bounded reads), atomic.go (atomic local writes), httplog.go (-v request logs),
// and redact.go (internal/base/redact for the layers above).
package providers
