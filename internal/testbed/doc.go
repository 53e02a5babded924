// Package testbed is the one place tests set up what they run against: a generated sample bundle
// with its manifest, fresh store prefixes on a temp dir, versitygw, fake-gcs-server and Azurite,
// and the lifeboat binary built once per test binary (LifeboatBinary). Tests only.
//
// testbed.go holds the stores (Backends, each optionally behind an *http.Client for fault
// injection) and the verify helpers (ExpectStatuses, ByPath, Dump); binary.go gets the binary from
// internal/clitest. Main stops the shared emulators and removes the binary; never a product
// import.
package testbed
