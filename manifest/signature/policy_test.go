package signature_test

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

// newTestSigner makes an in-memory Ed25519 signer.
func newTestSigner(t *testing.T) *signature.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := signature.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPolicyEnforce: a policy that requires a signature refuses an unsigned or wrongly signed
// file (ErrUntrusted), lets a signed one through with the bytes it verified, and one that does
// not require it warns instead.
func TestPolicyEnforce(t *testing.T) {
	ctx := context.Background()
	trusted, other := newTestSigner(t), newTestSigner(t)
	p := filepath.Join(t.TempDir(), "manifest.json")
	blob := []byte(`{"schemaVersion":2}`)
	if err := os.WriteFile(p, blob, 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() *signature.FileSource {
		src, err := signature.ReadFileSource(p, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	pol := &signature.Policy{Keys: []*signature.PublicKey{signature.PublicKeyOf(trusted)}, Require: true}

	_, err := pol.Enforce(ctx, read(), "restore")
	var re *signature.RefusedError
	if !errors.Is(err, signature.ErrUntrusted) || !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "restore refused: the manifest ") ||
		!strings.Contains(err.Error(), "signatures found: none") || !strings.Contains(err.Error(), "lifeboat manifest verify-sig") {
		t.Fatalf("unsigned: %v, want a refusal", err)
	}

	sign := func(s *signature.Signer) {
		b, err := s.SignBlob(ctx, blob)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(signature.SidecarName(p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sign(other)
	if _, err := pol.Enforce(ctx, read(), "boot"); !errors.Is(err, signature.ErrUntrusted) || !strings.Contains(err.Error(), "by key "+other.KeyID()) {
		t.Fatalf("signed by another key: %v, want a refusal naming it", err)
	}
	warn := *pol
	warn.Require = false
	e, err := warn.Enforce(ctx, read(), "boot")
	if err != nil || !strings.HasPrefix(e.Warning, "warning: the manifest ") || !strings.Contains(e.Warning, "trust.require is false: going on") || string(e.Data) != string(blob) {
		t.Fatalf("require: false: %+v, %v, want a warning and the bytes", e, err)
	}

	sign(trusted)
	e, err = pol.Enforce(ctx, read(), "boot")
	if err != nil || !e.Check.Valid || e.Check.KeyID != trusted.KeyID() || e.Warning != "" || string(e.Data) != string(blob) {
		t.Fatalf("signed: %+v, %v, want the verified bytes", e, err)
	}
	var none *signature.Policy
	if e, err := none.Enforce(ctx, read(), "boot"); err != nil || string(e.Data) != string(blob) {
		t.Fatalf("nil policy: %v, want the bytes as read", err)
	}
}
