// Package clitest runs the lifeboat CLI in tests as a user and a CI job do: the binary built once
// per test process as `make build` builds it (Binary), run with args, a directory, an environment,
// stdin and a timeout (Run, Start), or the CLI's run function in-process (Call). Tests only.
//
// clitest.go holds all of it. It imports no server and nothing of Lifeboat, so a package's unit
// tests can run the CLI without compiling the emulators; Main (or testbed.Main, which calls
// RemoveBinary) removes the built binary after the tests.
package clitest
