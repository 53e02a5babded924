package testbed

import (
	"testing"

	"lifeboat/internal/clitest"
)

// LifeboatBinary is the lifeboat binary built once per test process (clitest.Binary), which Main
// removes.
func LifeboatBinary(t testing.TB) string { t.Helper(); return clitest.Binary(t) }
