// Package routertest is the conformance suite every router.Driver passes against its real router
// (suite.go: Run and its Harness): read-back, conditional writes, drain, topology, liveness.
// Each driver package under failover/routers calls Run from its own integration tests.
package routertest
