package failover

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/fleet"
	"lifeboat/manifest/signature"
	"lifeboat/verify/warm"
)

// trustFleet writes a fleet whose trust: requires a signature on its unsigned manifest.
func trustFleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"release.pub":   string(pub),
		"manifest.json": `{"schemaVersion":2}`,
		"fleet.yaml": `model: {name: llama-demo, manifest: manifest.json}
regions:
  eu-west-1: {replica: "file://` + dir + `/eu", launcher: {kind: exec, command: "false {{.ModelDir}}"}}
  us-east-1: {replica: "file://` + dir + `/us"}
router: {driver: file, path: weights.json}
state: file://` + dir + `/state
trust: {keys: [release.pub]}
`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fl, err := fleet.Read(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// TestBootRefusesAnUnsignedManifest: a caller that boots from the fleet's BootOptions gets the
// fleet's trust: enforced by warm.Boot — an unsigned manifest is refused before anything is
// restored or launched.
func TestBootRefusesAnUnsignedManifest(t *testing.T) {
	fl := trustFleet(t)
	o, err := warm.FleetBootOptions(fl, "eu-west-1", fleet.LaunchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.Workdir = filepath.Join(t.TempDir(), "wd")
	_, err = warm.Boot(context.Background(), o)
	if !errors.Is(err, signature.ErrUntrusted) || !strings.HasPrefix(err.Error(), "boot refused: the manifest ") {
		t.Fatalf("Boot: %v, want a refusal (ErrUntrusted)", err)
	}
	if _, err := os.Stat(o.Workdir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the working directory was made before the refusal: %v", err)
	}
}

// TestRunRefusesAnUnsignedManifest: the executor enforces the fleet's trust: itself — a caller
// that checks nothing gets a refusal (signature.ErrUntrusted) before the lock or the router is
// touched (neither is even set here), while a fail-back is not gated.
func TestRunRefusesAnUnsignedManifest(t *testing.T) {
	fl := trustFleet(t)
	e := &Executor{Fleet: fl}
	_, err := e.Run(context.Background(), RunOptions{Event: Event{Kind: Evacuate, Region: "eu-west-1"}, Reason: "test"})
	if !errors.Is(err, signature.ErrUntrusted) || !strings.HasPrefix(err.Error(), "failover run refused: the manifest ") || e.Trusted != nil {
		t.Fatalf("Run: %v, want a refusal (ErrUntrusted)", err)
	}
	if err := e.enforceTrust(context.Background(), Restore); err != nil {
		t.Fatalf("a fail-back is gated: %v", err)
	}
}
