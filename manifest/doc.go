// Package manifest is the DR manifest: an OCI image manifest (ModelPack media types) that lists
// every file a vLLM replica needs — model repository, engine config, deployment files — with the
// content digests and provider-native checksums that verification compares against.
package manifest
