package main

import (
	"os"
	"testing"

	"lifeboat/internal/clitest"
	"lifeboat/internal/testbed"
)

// The CLI tests of issue 8 run the built binary, as a user and a CI job do.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

// cli runs the built binary with args; env entries (KEY=VALUE) are added to the environment.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return res(clitest.Run(t, clitest.Options{Env: env}, args...))
}

// res is a clitest result as these tests name its fields.
func res(r clitest.Result) result { return result{r.Code, r.Stdout, r.Stderr} }
