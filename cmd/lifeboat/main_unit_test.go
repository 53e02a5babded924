//go:build !integration

package main

import (
	"os"
	"testing"

	"lifeboat/internal/clitest"
)

// The unit tests run the built binary too, as a user and a CI job do, without the servers.
func TestMain(m *testing.M) { os.Exit(clitest.Main(m)) }
