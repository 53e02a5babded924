package replicate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/manifest"
	"lifeboat/manifest/signature"
)

// TestRestoreRefusesAnUnsignedManifest: with a trust policy in its options, Restore itself
// refuses a manifest no accepted key signed, before the directory is made or a store is read.
func TestRestoreRefusesAnUnsignedManifest(t *testing.T) {
	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(ref, []byte(`{"schemaVersion":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "restored")
	o := Options{Trust: &Trust{Policy: &signature.Policy{Keys: []*signature.PublicKey{signature.PublicKeyOf(s)}, Require: true}, ManifestRef: ref}}
	_, err = Restore(context.Background(), &manifest.Manifest{}, nil, to, o)
	if !errors.Is(err, signature.ErrUntrusted) || !strings.HasPrefix(err.Error(), "restore refused: the manifest ") {
		t.Fatalf("Restore: %v, want a refusal (ErrUntrusted)", err)
	}
	if _, err := os.Stat(to); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory was made before the refusal: %v", err)
	}
}
