package fleet_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"lifeboat/fleet"
	"lifeboat/providers/localfile"
)

// TestFleetLauncherIsPlainSubstitution: a launcher command is field substitution, not a Go
// template — {{range}} once hung the parser (ignoring signals) and printf took gigabytes.
func TestFleetLauncherIsPlainSubstitution(t *testing.T) {
	head := "model: {name: m, manifest: m.json}\n"
	for _, cmd := range []string{
		`serve {{range 3}}x{{end}}`,
		`serve {{printf "%05d" .Port}}`,
		`serve {{.Port | printf "%d"}}`,
		`serve {{template "x"}}`,
		`serve {{define "x"}}y{{end}}`,
		`serve {{/* comment */}}`,
		`serve {{ .ModelDir }}{{`,
	} {
		doc := head + "regions:\n  a: {replica: ./r, launcher: {kind: exec, command: '" + cmd + "'}}\n"
		_, err := fleet.Parse([]byte(doc), "fleet.yaml")
		if err == nil || !strings.Contains(err.Error(), "regions.a.launcher.command") {
			t.Errorf("command %s: err = %v, want a refusal naming regions.a.launcher.command", cmd, err)
		}
	}
	doc := head + "regions:\n  a: {replica: ./r, launcher: {kind: exec, command: 'serve {{.ModelDir}} --port {{ .Port }} --x \"{{.Host}}:{{.Port}}\" --json {\"a\":{\"b\":1}}'}}\n"
	if _, err := fleet.Parse([]byte(doc), "fleet.yaml"); err != nil {
		t.Fatalf("plain fields refused: %v", err)
	}
}

// TestReadFleetBounded: the fleet file is read only if regular and small enough.
func TestReadFleetBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fleet.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("model: {name: m, manifest: m.json}\n#"+strings.Repeat("x", fleet.MaxBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]error{fifo: localfile.ErrNotRegular, "/dev/zero": localfile.ErrNotRegular, big: localfile.ErrTooLarge} {
		if _, err := fleet.Read(name); !errors.Is(err, want) || !strings.Contains(err.Error(), name) {
			t.Errorf("ReadFleet(%s) = %v, want %v", name, err, want)
		}
	}
}
