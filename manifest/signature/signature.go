package signature

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigsig "github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/options"

	"lifeboat/providers/localfile"
)

// MediaType is the media type of a signature (a Sigstore bundle v0.3), also the artifact type
// of the OCI referrer that carries it in a registry.
const MediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// FileSuffix is appended to a signed file's name for the signature beside it
// (manifest.json → manifest.json.sigstore.json), Sigstore's convention for bundles.
const FileSuffix = ".sigstore.json"

// MaxKeyBytes bounds a key file; MaxBundleBytes bounds a signature read from a file or a peer.
const (
	MaxKeyBytes    = 64 << 10
	MaxBundleBytes = 1 << 20
)

// ErrEncrypted: the private key is encrypted and no password was given.
var ErrEncrypted = errors.New("the private key is encrypted and no password was given")

// ErrNoValidSignature: none of the signatures verifies against any accepted key.
var ErrNoValidSignature = errors.New("no valid signature by an accepted key")

// KeyID returns the id of a public key: the first 16 hex digits of the SHA-256 of its DER
// SubjectPublicKeyInfo.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("unsupported public key: %v", err)
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:8]), nil
}

func hint(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return []byte(base64.StdEncoding.EncodeToString(sum[:])), nil
}

// Signer is a private key loaded for signing. Its String is its key id, never key material.
type Signer struct {
	id      string
	source  string
	priv    crypto.Signer
	details sigsig.AlgorithmDetails
	hint    []byte
}

// ParseSigner parses a PEM private key; source names it in errors (a file name). password is
// asked only for an encrypted key; nil means none was given (ErrEncrypted for such a key).
func ParseSigner(pemBytes []byte, source string, password func() ([]byte, error)) (*Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%s: not a PEM private key", source)
	}
	// A DEK-Info header marks RFC 1423 legacy PEM encryption (the test x509.IsEncryptedPEMBlock
	// makes; that function is deprecated along with the scheme, and only detection is needed).
	_, legacy := block.Headers["DEK-Info"]
	encrypted := strings.HasPrefix(block.Type, "ENCRYPTED ") || legacy
	var pf cryptoutils.PassFunc
	if encrypted {
		if password == nil {
			return nil, fmt.Errorf("%s: %w (set COSIGN_PASSWORD or LIFEBOAT_KEY_PASSWORD)", source, ErrEncrypted)
		}
		pf = func(bool) ([]byte, error) {
			p, err := password()
			if err == nil && p == nil {
				p = []byte{}
			}
			return p, err
		}
	}
	switch block.Type {
	case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
		"ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
	case "PUBLIC KEY":
		return nil, fmt.Errorf("%s: is a public key; signing needs the private key (verify with the public one)", source)
	default:
		return nil, fmt.Errorf("%s: PEM block %q is not a private key this tool reads (PKCS#8, SEC 1, PKCS#1 or cosign's encrypted format)", source, block.Type)
	}
	key, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, pf)
	if err != nil {
		if encrypted {
			return nil, fmt.Errorf("%s: cannot decrypt the private key (wrong password?)", source)
		}
		return nil, fmt.Errorf("%s: cannot parse the private key: %s", source, redactErr(err))
	}
	cs, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported private key type %T", source, key)
	}
	return newSigner(cs, source)
}

// NewSigner wraps an in-memory key (ECDSA, Ed25519 or RSA).
func NewSigner(key crypto.Signer) (*Signer, error) { return newSigner(key, "key") }

func newSigner(key crypto.Signer, source string) (*Signer, error) {
	pub := key.Public()
	details, err := sigsig.GetDefaultAlgorithmDetails(pub, options.WithED25519ph())
	if err != nil {
		return nil, fmt.Errorf("%s: unsupported key: %v", source, err)
	}
	id, err := KeyID(pub)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	h, err := hint(pub)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return &Signer{id: id, source: source, priv: key, details: details, hint: h}, nil
}

// LoadSigner reads a PEM private key file (bounded).
func LoadSigner(path string, password func() ([]byte, error)) (*Signer, error) {
	data, err := localfile.ReadFile(path, MaxKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return ParseSigner(data, path, password)
}

// KeyID is the signer's key id.
func (s *Signer) KeyID() string { return s.id }

// String is the key id: a Signer printed by mistake shows no key material.
func (s *Signer) String() string { return "key " + s.id }

// Public returns the public key.
func (s *Signer) Public() crypto.PublicKey { return s.priv.Public() }

// PublicKeyPEM returns the public key in PEM (PKIX), as `cosign public-key` prints it.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(s.priv.Public())
}

// SignBlob signs data and returns the Sigstore bundle (JSON).
func (s *Signer) SignBlob(ctx context.Context, data []byte) ([]byte, error) {
	b, err := sign.Bundle(&sign.PlainData{Data: data}, keypair{s}, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("signing with key %s: %v", s.id, err)
	}
	pb, err := bundle.NewBundle(b)
	if err != nil {
		return nil, fmt.Errorf("signing with key %s: %v", s.id, err)
	}
	out, err := pb.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("signing with key %s: %v", s.id, err)
	}
	return out, nil
}

// keypair adapts a Signer to sigstore-go's sign.Keypair.
type keypair struct{ s *Signer }

func (k keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.s.details.GetProtoHashType() }
func (k keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.s.details.GetSignatureAlgorithm()
}
func (k keypair) GetHint() []byte                { return k.s.hint }
func (k keypair) GetPublicKey() crypto.PublicKey { return k.s.priv.Public() }
func (k keypair) GetPublicKeyPem() (string, error) {
	p, err := k.s.PublicKeyPEM()
	return string(p), err
}
func (k keypair) GetKeyAlgorithm() string {
	switch k.s.details.GetKeyType() {
	case sigsig.ECDSA:
		return "ECDSA"
	case sigsig.RSA:
		return "RSA"
	case sigsig.ED25519:
		return "ED25519"
	}
	return ""
}

func (k keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.s.details.GetHashType()
	digest := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		digest = h.Sum(nil)
	}
	sig, err := k.s.priv.Sign(rand.Reader, digest, hf)
	if err != nil {
		return nil, nil, err
	}
	return sig, digest, nil
}

// PublicKey is an accepted public key.
type PublicKey struct {
	ID     string // the key id
	Source string // where it came from (a file name, a fleet field)
	key    crypto.PublicKey
}

// ParsePublicKey parses a PEM public key (PKIX "PUBLIC KEY"; a certificate's key is accepted too).
func ParsePublicKey(pemBytes []byte, source string) (*PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%s: not a PEM public key", source)
	}
	var pub crypto.PublicKey
	switch block.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot parse the public key: %v", source, err)
		}
		pub = k
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: cannot parse the certificate: %v", source, err)
		}
		pub = c.PublicKey
	default:
		if strings.Contains(block.Type, "PRIVATE") {
			return nil, fmt.Errorf("%s: is a private key; give the public key (cosign public-key --key K, or openssl pkey -pubout)", source)
		}
		return nil, fmt.Errorf("%s: PEM block %q is not a public key", source, block.Type)
	}
	if _, err := sigsig.GetDefaultAlgorithmDetails(pub, options.WithED25519ph()); err != nil {
		return nil, fmt.Errorf("%s: unsupported public key: %v", source, err)
	}
	id, err := KeyID(pub)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	return &PublicKey{ID: id, Source: source, key: pub}, nil
}

// LoadPublicKey reads a PEM public key file (bounded).
func LoadPublicKey(path string) (*PublicKey, error) {
	data, err := localfile.ReadFile(path, MaxKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	return ParsePublicKey(data, path)
}

// PublicKeyOf returns the public key of a signer as an accepted key (tests, self-checks).
func PublicKeyOf(s *Signer) *PublicKey {
	return &PublicKey{ID: s.id, Source: s.source, key: s.priv.Public()}
}

// Verified says which accepted key a verified signature is by.
type Verified struct {
	KeyID  string // the accepted key's id
	Source string // where the accepted key came from
	Index  int    // which of the signatures given verified
}

// VerifyError is the failure of Verify: no signature verified against an accepted key. Claimed
// lists the key ids the signatures claim (from their hints, unverified; "unknown" when a bundle
// has none); Reasons says per signature why it failed.
type VerifyError struct {
	Claimed  []string
	Accepted []string
	Reasons  []string
}

func (e *VerifyError) Error() string {
	if len(e.Reasons) == 0 {
		return fmt.Sprintf("%v: no signature found (accepted keys: %s)", ErrNoValidSignature, strings.Join(e.Accepted, ", "))
	}
	return fmt.Sprintf("%v: signatures by key %s, accepted keys %s (%s)", ErrNoValidSignature,
		orNone(e.Claimed), orNone(e.Accepted), strings.Join(e.Reasons, "; "))
}

func (e *VerifyError) Unwrap() error { return ErrNoValidSignature }

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}

// ClaimedKeyID returns the key id a bundle claims (from its public-key hint), or "unknown". It
// verifies nothing.
func ClaimedKeyID(bundleJSON []byte) string {
	var b struct {
		VerificationMaterial struct {
			PublicKey struct {
				Hint string `json:"hint"`
			} `json:"publicKey"`
		} `json:"verificationMaterial"`
	}
	if json.Unmarshal(bundleJSON, &b) != nil {
		return "unknown"
	}
	return keyIDFromHint(b.VerificationMaterial.PublicKey.Hint)
}

func keyIDFromHint(h string) string {
	if raw, err := base64.StdEncoding.DecodeString(h); err == nil && len(raw) == sha256.Size {
		return hex.EncodeToString(raw[:8])
	}
	if raw, err := hex.DecodeString(h); err == nil && len(raw) >= 8 {
		return hex.EncodeToString(raw[:8])
	}
	return "unknown"
}

// Verify checks the signatures (Sigstore bundles, JSON) over data against the accepted keys,
// offline: each bundle against each key, and the first that verifies wins. A bundle with a
// certificate (keyless) fails here: verifying it needs Sigstore's trusted root and the signer's
// identity, which is online. The error is a *VerifyError.
func Verify(data []byte, bundles [][]byte, keys []*PublicKey) (Verified, error) {
	e := &VerifyError{}
	for _, k := range keys {
		e.Accepted = append(e.Accepted, k.ID)
	}
	if len(keys) == 0 {
		return Verified{}, errors.New("no public key to verify against")
	}
	verifiers := make([]*verify.Verifier, 0, len(keys))
	for _, k := range keys {
		v, err := sigsig.LoadDefaultVerifier(k.key, options.WithED25519ph())
		if err != nil {
			return Verified{}, fmt.Errorf("%s: key %s: %v", k.Source, k.ID, err)
		}
		tv := root.NewExpiringKey(v, time.Time{}, time.Time{})
		tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return tv, nil })
		vv, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
		if err != nil {
			return Verified{}, err
		}
		verifiers = append(verifiers, vv)
	}
	for i, bj := range bundles {
		claimed := ClaimedKeyID(bj)
		if !slices.Contains(e.Claimed, claimed) {
			e.Claimed = append(e.Claimed, claimed)
		}
		var b bundle.Bundle
		if len(bj) > MaxBundleBytes {
			e.Reasons = append(e.Reasons, fmt.Sprintf("signature %d: larger than %d bytes", i+1, MaxBundleBytes))
			continue
		}
		if err := b.UnmarshalJSON(bj); err != nil {
			e.Reasons = append(e.Reasons, fmt.Sprintf("signature %d: not a Sigstore bundle: %s", i+1, clip(err.Error())))
			continue
		}
		if vc, err := b.VerificationContent(); err == nil && vc.Certificate() != nil {
			e.Reasons = append(e.Reasons, fmt.Sprintf("signature %d: keyless (a certificate): verify it with cosign verify-blob --certificate-identity … (online)", i+1))
			continue
		}
		reason := fmt.Sprintf("signature %d (key %s): not by an accepted key, or the content changed", i+1, claimed)
		for j, v := range verifiers {
			if _, err := v.Verify(&b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(data)), verify.WithKey())); err == nil {
				return Verified{KeyID: keys[j].ID, Source: keys[j].Source, Index: i}, nil
			}
		}
		if slices.Contains(e.Accepted, claimed) {
			reason = fmt.Sprintf("signature %d (key %s, accepted): does not match the content — it was changed after signing", i+1, claimed)
		}
		e.Reasons = append(e.Reasons, reason)
	}
	return Verified{}, e
}

func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// redactErr keeps a parse error's message only when it cannot carry key bytes.
func redactErr(err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		return "malformed key"
	}
	return msg
}

// SidecarName is the name of the signature beside a signed file or object:
// dr/manifest.json → dr/manifest.json.sigstore.json.
func SidecarName(name string) string { return name + FileSuffix }

// LoadBundle reads a signature file (bounded).
func LoadBundle(path string) ([]byte, error) {
	data, err := localfile.ReadFile(path, MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return data, nil
}
