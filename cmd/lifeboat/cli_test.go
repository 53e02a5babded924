package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The CLI tests of issue 8 run the built binary, as a user and a CI job do.
var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// binary builds cmd/lifeboat once per test run.
func binary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "lifeboat-bin")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "lifeboat")
		cmd := exec.Command("go", "build", "-buildvcs=true", "-o", built.path, ".") // as make build does
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// cli runs the built binary with args; env entries (KEY=VALUE) are added to the environment.
func cli(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
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
