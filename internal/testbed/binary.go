package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// lifeboat is the CLI binary of this test binary, built at most once.
var lifeboat struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// LifeboatBinary builds cmd/lifeboat once per test binary, as `make build` does (CGO_ENABLED=0,
// -trimpath, -tags disable_grpc_modules, the VCS stamp where the checkout has one), into a temp dir that Main removes. The
// CLI tests run it as a user does, and the launcher tests and drills boot engine-sim candidates
// with it; one build serves them all.
func LifeboatBinary(t testing.TB) string {
	t.Helper()
	lifeboat.once.Do(func() {
		dir, err := os.MkdirTemp("", "lifeboat-testbed-bin-")
		if err != nil {
			lifeboat.err = fmt.Errorf("lifeboat binary: %w", err)
			return
		}
		lifeboat.dir, lifeboat.path = dir, filepath.Join(dir, "lifeboat")
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=true", "-tags", "disable_grpc_modules", "-o", lifeboat.path, "lifeboat/cmd/lifeboat")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			lifeboat.err = fmt.Errorf("go build lifeboat/cmd/lifeboat: %v\n%s", err, out)
		}
	})
	if lifeboat.err != nil {
		t.Fatal(lifeboat.err)
	}
	return lifeboat.path
}

// removeLifeboatBinary removes the built binary's directory (from Main, after the tests).
func removeLifeboatBinary() {
	if lifeboat.dir != "" {
		os.RemoveAll(lifeboat.dir)
	}
}
