package main

import (
	"testing"

	"lifeboat/internal/clitest"
)

// cli runs the built binary with args; env entries (KEY=VALUE) are added to the environment.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return res(clitest.Run(t, clitest.Options{Env: env}, args...))
}

// res is a clitest result as these tests name its fields.
func res(r clitest.Result) result { return result{r.Code, r.Stdout, r.Stderr} }
