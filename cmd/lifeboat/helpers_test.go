package main

import (
	"os"
	"path/filepath"
	"testing"
)

// Helpers the unit and the integration tests share (none starts a server).

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
