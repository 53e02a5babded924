package drills

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "lifeboat/failover/routers/file" // the kinds its fleet file uses
	"lifeboat/fleet"
	"lifeboat/manifest/signature"
	_ "lifeboat/verify/warm/execlauncher"
)

// TestRunRefusesAnUnsignedManifest: a library caller that never calls EnforceTrust still gets
// the fleet's trust: enforced by Run — an unsigned manifest is refused before anything runs.
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
	files := map[string]string{
		"release.pub":   string(pub),
		"manifest.json": `{"schemaVersion":2}`,
		"fleet.yaml": `model: {name: llama-demo, manifest: manifest.json}
regions:
  eu-west-1: {replica: "file://` + dir + `/eu"}
  us-east-1: {replica: "file://` + dir + `/us"}
router: {driver: file, path: weights.json}
state: file://` + dir + `/state
sla: {rto: 5m}
trust: {keys: [release.pub], require: true}
`,
		"drill.yaml": "name: lose-eu\nfleet: fleet.yaml\nlose: eu-west-1\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fl, err := fleet.Read(filepath.Join(dir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Read(filepath.Join(dir, "drill.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{Drill: d, Fleet: fl, TempDir: dir}
	_, err = r.Run(context.Background())
	if !errors.Is(err, signature.ErrUntrusted) || !strings.HasPrefix(err.Error(), "drill run refused: the manifest ") {
		t.Fatalf("Run: %v, want a refusal (ErrUntrusted)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the state store was touched before the refusal: %v", err)
	}
}
