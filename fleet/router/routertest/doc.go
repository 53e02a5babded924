// Package routertest is the conformance suite every router.Driver passes against its real router
// (suite.go: Run and its Harness): read-back, conditional writes, drain, topology, liveness.
// Each driver package calls Run from its conformance_test.go (build tag integration).
package routertest
