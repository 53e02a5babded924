// Command release is Lifeboat's release tool (`make release` and `make image` run it with `go
// run`; not product code): it builds the container image without a Docker daemon, reproducibly,
// pushes it, attaches a CycloneDX SBOM, signs image and SBOMs, signs files, verifies a pushed image.
//
// The image is FROM scratch: the static binary `make build` makes, the build machine's CA bundle,
// /etc/passwd for the non-root user 65532 — reproducible (sorted tar, fixed owners, every time the
// commit time, so one commit gives one digest) — pushed to a registry with the Docker credentials
// already configured (image.go). The SBOM is derived from each binary's Go build information
// (sbom.go). The image index and each SBOM are signed with lifeboat/manifest/signature (Sigstore
// bundles that `cosign verify-blob` also verifies), the signatures and SBOMs attached as OCI 1.1
// referrers (the sha256-<digest> tag schema on registries without the referrers API). It also signs
// files (the release's SHA256SUMS) and verifies a pushed image's signatures and SBOMs.
//
//	go run ./cmd/release image -repo REGISTRY/REPO -tag TAG -platform linux/amd64=BINARY … -key cosign.key
//	go run ./cmd/release verify-image -key cosign.pub REGISTRY/REPO@sha256:…
//	go run ./cmd/release sign -key cosign.key dist/SHA256SUMS
//	go run ./cmd/release sbom -binary dist/lifeboat_linux_amd64
package main
