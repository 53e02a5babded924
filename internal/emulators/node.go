package emulators

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// NodeModules returns ./.tools/node_modules after checking that every package named is installed
// there (`make oracles` installs the differential-test oracles); the error wraps ErrNotInstalled
// when one is missing, so Unavailable skips or, under LIFEBOAT_REQUIRE_EMULATORS=1, fails.
func NodeModules(pkgs ...string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	nm := filepath.Join(root, ".tools", "node_modules")
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(nm, filepath.FromSlash(p), "package.json")); err != nil {
			return "", fmt.Errorf("npm package %s not in %s (run `make oracles`): %w", p, nm, ErrNotInstalled)
		}
	}
	return nm, nil
}

// RunNode runs node on script with args, feeding stdin, and returns its stdout. A missing node
// binary wraps ErrNotInstalled.
func RunNode(ctx context.Context, script string, stdin []byte, args ...string) ([]byte, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node: %v: %w", err, ErrNotInstalled)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node %s: %v: %s", filepath.Base(script), err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}
