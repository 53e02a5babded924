package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"lifeboat/internal/testbed"
)

// The CLI tests of issue 8 run the built binary, as a user and a CI job do.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

// cli runs the built binary with args; env entries (KEY=VALUE) are added to the environment.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(testbed.LifeboatBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code, out.String(), errb.String()}
}
