// Package oci is the oci:// store: a repository of an OCI registry (Distribution API, through
// oras-go), registered with providers.Register; blank-import it to open oci:// URLs.
//
// url.go is the scheme: the oci://REGISTRY/REPO[:TAG|@sha256:HEX] grammar, what a registry lacks
// and the registration. registry.go is the store (a manifest's layers as objects) with PushManifest, FetchManifest and
// the cross-repository mount behind providers.Mount; upload.go the blob uploads; referrers.go
// AttachReferrer and Referrers (signatures attached to a manifest).
package oci
