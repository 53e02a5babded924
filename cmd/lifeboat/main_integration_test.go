//go:build integration

package main

import (
	"os"
	"testing"

	"lifeboat/internal/testbed"
)

// The CLI tests of issue 8 run the built binary, as a user and a CI job do, and start the
// servers (emulators, routers, the control plane) they need on loopback.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }
