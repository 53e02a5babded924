package signature

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"

	"lifeboat/internal/base/shell"
	"lifeboat/providers/localfile"
)

// ErrUntrusted: a trust policy that requires a signature refused the blob (a DR manifest): no
// signature on it verifies against an accepted key. Errors wrapping it are refusals for safety.
var ErrUntrusted = errors.New("refused: no valid signature by an accepted key")

// Found is one signature found for a blob: where it was, the key id it claims (its hint, before
// verification) and its bytes (nil: it could not be read, and Where says why).
type Found struct {
	Where string `json:"where"`
	KeyID string `json:"key_id"`
	Data  []byte `json:"-"`
}

// Source is a signed blob as read once, and where its signatures are: a trust check verifies
// Bytes and a caller acts on the same Bytes (read once: no second read to race a change).
type Source interface {
	// Subject names the blob in messages (a path, or a URL with its credentials redacted).
	Subject() string
	// Bytes is the blob as read.
	Bytes() []byte
	// Signatures finds the blob's signatures.
	Signatures(ctx context.Context) ([]Found, error)
}

// Check is the verdict on a blob's signatures. JSON field names are stable (manifest
// verify-sig -o json).
type Check struct {
	Subject    string   `json:"subject"`
	Digest     string   `json:"digest"`
	Valid      bool     `json:"valid"`
	KeyID      string   `json:"key_id,omitempty"` // the accepted key that verified
	Signatures []Found  `json:"signatures"`
	Accepted   []string `json:"accepted_keys"`
	Reasons    []string `json:"reasons,omitempty"`
}

// Claimed lists the key ids the signatures found claim ("by key A, B"), or "none".
func (c *Check) Claimed() string {
	if len(c.Signatures) == 0 {
		return "none"
	}
	ids := make([]string, 0, len(c.Signatures))
	for _, s := range c.Signatures {
		ids = append(ids, s.KeyID)
	}
	return "by key " + strings.Join(ids, ", ")
}

// CheckSource verifies src's bytes against keys with the signatures src finds, plus extra
// (bundles given by the caller). A blob no accepted key signed is a Check with Valid false, not
// an error; the error is for a signature or key that could not be read or used.
func CheckSource(ctx context.Context, src Source, extra []Found, keys []*PublicKey) (*Check, error) {
	sigs, err := src.Signatures(ctx)
	if err != nil {
		return nil, err
	}
	sigs = append(append([]Found(nil), extra...), sigs...)
	c := &Check{Subject: src.Subject(), Digest: digest.FromBytes(src.Bytes()).String(), Signatures: sigs}
	for _, k := range keys {
		c.Accepted = append(c.Accepted, k.ID)
	}
	bundles := make([][]byte, 0, len(sigs))
	for _, s := range sigs {
		if s.Data != nil {
			bundles = append(bundles, s.Data)
		}
	}
	v, err := Verify(src.Bytes(), bundles, keys)
	var ve *VerifyError
	switch {
	case err == nil:
		c.Valid, c.KeyID = true, v.KeyID
	case errors.As(err, &ve):
		c.Reasons = ve.Reasons
	default:
		return nil, err
	}
	return c, nil
}

// Policy is what a command or a library entry point accepts as a DR manifest's signer: the
// fleet's trust: section (or restore's --key). With Require a manifest no accepted key signed
// is refused (ErrUntrusted); without, it is a warning and the work goes on.
type Policy struct {
	Keys    []*PublicKey
	Require bool
	// VerifyArgs names the same keys for the `lifeboat manifest verify-sig` a refusal suggests
	// ("--fleet fleet.yaml", "--key release.pub"); empty: "--key PUB".
	VerifyArgs string
}

// FleetPolicy is the policy of a fleet file's trust: section (keys, require) given as its
// fields; nil when the fleet has no trust: section (keys nil).
func FleetPolicy(keys []*PublicKey, require bool, fleetFile string) *Policy {
	if keys == nil {
		return nil
	}
	return &Policy{Keys: keys, Require: require, VerifyArgs: "--fleet " + shell.Quote(fleetFile)}
}

// Enforced is what Enforce let through: the verified bytes (act on these, not on a second
// read), the verdict, and with require: false and no valid signature the warning to print.
type Enforced struct {
	Data    []byte
	Check   *Check
	Warning string // "" unless the policy warned instead of refusing
}

// RefusedError is the refusal of Enforce: Action ("restore", "boot", "failover run", "drill
// run") refused because of Detail. It wraps ErrUntrusted.
type RefusedError struct {
	Action string
	Detail string // why, and the commands to see why and to sign
}

func (e *RefusedError) Error() string { return e.Action + " refused: " + e.Detail }

func (e *RefusedError) Unwrap() error { return ErrUntrusted }

// Enforce checks src against the policy before action acts on it: the bytes verified when a
// signature by an accepted key verifies (or when the policy only warns, with the warning);
// a *RefusedError (ErrUntrusted) naming the key ids found and the next commands otherwise. A nil
// policy enforces nothing: src's bytes are returned as they are.
func (p *Policy) Enforce(ctx context.Context, src Source, action string) (*Enforced, error) {
	if p == nil {
		return &Enforced{Data: src.Bytes()}, nil
	}
	c, err := CheckSource(ctx, src, nil, p.Keys)
	if err != nil {
		return nil, err
	}
	if c.Valid {
		return &Enforced{Data: src.Bytes(), Check: c}, nil
	}
	msg := fmt.Sprintf("the manifest %s (%s) has no valid signature by an accepted key (signatures found: %s; accepted keys: %s)",
		c.Subject, c.Digest, c.Claimed(), strings.Join(c.Accepted, ", "))
	if len(c.Reasons) > 0 {
		msg += ": " + strings.Join(c.Reasons, "; ")
	}
	verifyArgs := p.VerifyArgs
	if verifyArgs == "" {
		verifyArgs = "--key PUB"
	}
	next := fmt.Sprintf("\n  see why: lifeboat manifest verify-sig %s %s\n  sign it, if it is the manifest you meant: lifeboat manifest sign %s --key KEY",
		shell.Quote(c.Subject), verifyArgs, shell.Quote(c.Subject))
	if !p.Require {
		return &Enforced{Data: src.Bytes(), Check: c, Warning: fmt.Sprintf("warning: %s (trust.require is false: going on)%s", msg, next)}, nil
	}
	return nil, &RefusedError{Action: action, Detail: msg + next}
}

// FileSource is a local file as read once, with its signature beside it (FILE.sigstore.json).
type FileSource struct {
	Path string
	data []byte
}

// ReadFileSource reads the file at path (bounded by limit).
func ReadFileSource(path string, limit int64) (*FileSource, error) {
	data, err := localfile.ReadFile(path, limit)
	if err != nil {
		return nil, err
	}
	return &FileSource{Path: path, data: data}, nil
}

// Subject is the file's path.
func (f *FileSource) Subject() string { return f.Path }

// Bytes is the file as read.
func (f *FileSource) Bytes() []byte { return f.data }

// Signatures reads the signature beside the file, if any.
func (f *FileSource) Signatures(context.Context) ([]Found, error) {
	p := SidecarName(f.Path)
	data, err := LoadBundle(p)
	switch {
	case err == nil:
		return []Found{{Where: p, KeyID: ClaimedKeyID(data), Data: data}}, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	}
	return nil, err
}

// Opener reads the blob at ref once, with where its signatures are, for a trust check. A Source
// with a Close method is closed after the check.
type Opener func(ctx context.Context, ref string) (Source, error)

// OpenLocal is the Opener of a local file (FileSource): what EnforceAt uses when given none.
func OpenLocal(limit int64) Opener {
	return func(_ context.Context, ref string) (Source, error) {
		if strings.Contains(ref, "://") && !strings.HasPrefix(ref, "file://") {
			return nil, fmt.Errorf("%s: cannot read it to check its signature: the caller gave no way to open a store (an Opener)", ref)
		}
		return ReadFileSource(strings.TrimPrefix(ref, "file://"), limit)
	}
}

// EnforceAt reads the blob at ref with open (nil: OpenLocal) and enforces the policy on it: see
// Enforce. A nil policy reads nothing and returns nil.
func (p *Policy) EnforceAt(ctx context.Context, open Opener, ref string, limit int64, action string) (*Enforced, error) {
	if p == nil {
		return nil, nil
	}
	if open == nil {
		open = OpenLocal(limit)
	}
	src, err := open(ctx, ref)
	if err != nil {
		return nil, err
	}
	if c, ok := src.(interface{ Close() }); ok {
		defer c.Close()
	}
	return p.Enforce(ctx, src, action)
}
