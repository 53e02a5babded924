// Package manifest is the DR manifest: an OCI image manifest (ModelPack media types) listing every
// file a vLLM replica needs with its digests and provider-native checksums. Build makes one from a
// model repository (a directory or a store), Parse reads one back, Diff compares two.
//
// build.go, walk.go, classify.go and hash.go build (every file classified by role and hashed
// once); storesource.go reads a repository from a store; manifest.go and parse.go are the model and
// its strict parser; diff.go, diffsettings.go and linedelta.go compare two manifests down to the
// engine settings and chat template; params.go and summary.go say what a manifest holds.
package manifest
