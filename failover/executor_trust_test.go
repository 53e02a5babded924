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

	"lifeboat/manifest/signature"
)

// TestRunRefusesAnUnsignedManifest: the executor enforces the fleet's trust: itself — a caller
// that checks nothing gets a refusal (signature.ErrUntrusted) before the lock or the router is
// touched (neither is even set here), while a fail-back is not gated.
func TestRunRefusesAnUnsignedManifest(t *testing.T) {
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
  eu-west-1: {replica: "file://` + dir + `/eu"}
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
	fl, err := ReadFleet(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{Fleet: fl}
	_, err = e.Run(context.Background(), RunOptions{Event: Event{Kind: Evacuate, Region: "eu-west-1"}, Reason: "test"})
	if !errors.Is(err, signature.ErrUntrusted) || !strings.HasPrefix(err.Error(), "failover run refused: the manifest ") || e.Trusted != nil {
		t.Fatalf("Run: %v, want a refusal (ErrUntrusted)", err)
	}
	if err := e.enforceTrust(context.Background(), Restore); err != nil {
		t.Fatalf("a fail-back is gated: %v", err)
	}
}
