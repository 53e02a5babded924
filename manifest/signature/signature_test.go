package signature_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"lifeboat/manifest/signature"
)

func pkcs8PEM(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func pubPEM(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func TestSignVerifyECDSAAndEd25519(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	blob := []byte(`{"schemaVersion":2}`)
	for name, key := range map[string]any{"ecdsa-p256": ec, "ed25519": ed} {
		t.Run(name, func(t *testing.T) {
			s, err := signature.ParseSigner(pkcs8PEM(t, key), "k.pem", nil)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := signature.ParsePublicKey(pubPEM(t, s.Public()), "k.pub")
			if err != nil {
				t.Fatal(err)
			}
			der, _ := x509.MarshalPKIXPublicKey(s.Public())
			sum := sha256.Sum256(der)
			if want := hex.EncodeToString(sum[:])[:16]; s.KeyID() != want || pub.ID != want {
				t.Fatalf("key id %s / %s, want %s", s.KeyID(), pub.ID, want)
			}
			b, err := s.SignBlob(context.Background(), blob)
			if err != nil {
				t.Fatal(err)
			}
			if got := signature.ClaimedKeyID(b); got != s.KeyID() {
				t.Fatalf("claimed key id %s, want %s", got, s.KeyID())
			}
			v, err := signature.Verify(blob, [][]byte{b}, []*signature.PublicKey{pub})
			if err != nil || v.KeyID != s.KeyID() {
				t.Fatalf("verify: %+v %v", v, err)
			}
			// A changed blob fails, naming the key as accepted but not matching.
			_, err = signature.Verify([]byte(`{"schemaVersion":3}`), [][]byte{b}, []*signature.PublicKey{pub})
			var ve *signature.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, signature.ErrNoValidSignature) || !strings.Contains(err.Error(), "changed after signing") {
				t.Fatalf("tampered blob: %v", err)
			}
			// Another key does not verify it, and the error names the key id found.
			other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			op, _ := signature.ParsePublicKey(pubPEM(t, &other.PublicKey), "other.pub")
			_, err = signature.Verify(blob, [][]byte{b}, []*signature.PublicKey{op})
			if !errors.As(err, &ve) || len(ve.Claimed) != 1 || ve.Claimed[0] != s.KeyID() || !strings.Contains(err.Error(), op.ID) {
				t.Fatalf("other key: %v", err)
			}
			// Either of two accepted keys (a rotation) verifies.
			v, err = signature.Verify(blob, [][]byte{b}, []*signature.PublicKey{op, pub})
			if err != nil || v.KeyID != pub.ID {
				t.Fatalf("rotation: %+v %v", v, err)
			}
		})
	}
}

// TestLegacyEncryptedPEMKey: a key under RFC 1423 legacy PEM encryption (the DEK-Info header
// `openssl rsa -des3` writes) is recognised as encrypted, not reported as unparseable.
func TestLegacyEncryptedPEMKey(t *testing.T) {
	block := &pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{
		"Proc-Type": "4,ENCRYPTED",
		"DEK-Info":  "AES-256-CBC," + strings.Repeat("0A", 16),
	}, Bytes: []byte(strings.Repeat("\x5a", 64))}
	_, err := signature.ParseSigner(pem.EncodeToMemory(block), "legacy.key", nil)
	if !errors.Is(err, signature.ErrEncrypted) {
		t.Fatalf("no password: err = %v, want ErrEncrypted", err)
	}
}

func TestEncryptedCosignKey(t *testing.T) {
	privPEM, pubPEMBytes, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("s3cret")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(privPEM), "ENCRYPTED SIGSTORE PRIVATE KEY") {
		t.Fatalf("not cosign's format:\n%s", privPEM)
	}
	if _, err := signature.ParseSigner(privPEM, "cosign.key", nil); !errors.Is(err, signature.ErrEncrypted) {
		t.Fatalf("no password: %v", err)
	}
	_, err = signature.ParseSigner(privPEM, "cosign.key", func() ([]byte, error) { return []byte("wrong"), nil })
	if err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Fatalf("wrong password: %v", err)
	}
	s, err := signature.ParseSigner(privPEM, "cosign.key", func() ([]byte, error) { return []byte("s3cret"), nil })
	if err != nil {
		t.Fatal(err)
	}
	pub, err := signature.ParsePublicKey(pubPEMBytes, "cosign.pub")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.SignBlob(context.Background(), []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signature.Verify([]byte("x"), [][]byte{b}, []*signature.PublicKey{pub}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.String(), "PRIVATE") || !strings.Contains(s.String(), s.KeyID()) {
		t.Fatalf("String: %s", s)
	}
}

func TestBadInputIsNamed(t *testing.T) {
	dir := t.TempDir()
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	priv := filepath.Join(dir, "k.pem")
	os.WriteFile(priv, pkcs8PEM(t, ec), 0o600)
	if _, err := signature.LoadPublicKey(priv); err == nil || !strings.Contains(err.Error(), "is a private key") || strings.Contains(err.Error(), "BEGIN") {
		t.Fatalf("private as public: %v", err)
	}
	pub := filepath.Join(dir, "k.pub")
	os.WriteFile(pub, pubPEM(t, &ec.PublicKey), 0o644)
	if _, err := signature.LoadSigner(pub, nil); err == nil || !strings.Contains(err.Error(), "is a public key") {
		t.Fatalf("public as private: %v", err)
	}
	p, _ := signature.LoadPublicKey(pub)
	_, err := signature.Verify([]byte("x"), [][]byte{[]byte("not json")}, []*signature.PublicKey{p})
	if err == nil || !strings.Contains(err.Error(), "not a Sigstore bundle") {
		t.Fatalf("garbage bundle: %v", err)
	}
	_, err = signature.Verify([]byte("x"), nil, []*signature.PublicKey{p})
	if err == nil || !strings.Contains(err.Error(), "no signature found") {
		t.Fatalf("no bundles: %v", err)
	}
}
