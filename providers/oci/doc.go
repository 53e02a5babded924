// Package oci is the oci:// store: a repository of an OCI registry (Distribution API, through
// oras-go), registered with providers.Register; blank-import it to open oci:// URLs.
//
// registry.go is the store (a manifest's layers as objects) with PushManifest, FetchManifest and
// the cross-repository mount behind providers.Mount; upload.go the blob uploads; referrers.go
// AttachReferrer and Referrers (signatures attached to a manifest).
package oci
