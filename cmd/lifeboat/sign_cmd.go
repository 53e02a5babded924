package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/opencontainers/go-digest"
	"github.com/spf13/cobra"

	"lifeboat/fleet"
	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
	"lifeboat/providers/oci"
)

// signedSource is a signed (or to-be-signed) blob and where its signatures live: a local file
// (signature FILE.sigstore.json beside it), an object in a store (KEY.sigstore.json beside it), or
// a manifest in a registry (signatures are OCI 1.1 referrers of it).
type signedSource struct {
	a     *app
	ref   string // as given
	kind  string // "file", "store", "oci"
	path  string // file: the path
	store providers.Store
	key   string // store: the object's key
	data  []byte
}

func (s *signedSource) Close() {
	if s.store != nil {
		s.store.Close()
	}
}

// digest is the blob's SHA-256 digest (a registry manifest's digest).
func (s *signedSource) digest() digest.Digest { return digest.FromBytes(s.data) }

// splitObjectURL splits a store URL naming an object (s3://bucket/dr/manifest.json?region=…)
// into the URL of its directory and the object's name.
func splitObjectURL(raw string) (dir, key string, ok bool) {
	base, query, _ := strings.Cut(raw, "?")
	i := strings.Index(base, "://")
	if i < 0 {
		return "", "", false
	}
	j := strings.LastIndex(base, "/")
	if j <= i+2 || j == len(base)-1 || strings.Count(base[i+3:], "/") < 1 {
		return "", "", false
	}
	dir, key = base[:j+1], base[j+1:]
	if query != "" {
		dir += "?" + query
	}
	return dir, key, true
}

// sidecarURL is the URL of the signature beside the object at ref (its query kept).
func sidecarURL(ref string) string {
	base, query, ok := strings.Cut(ref, "?")
	u := base + signature.FileSuffix
	if ok {
		u += "?" + query
	}
	return providers.Redact(u)
}

// openSigned reads the blob at ref (bounded by limit).
func (a *app) openSigned(ctx context.Context, ref string, limit int64) (*signedSource, error) {
	if !strings.Contains(ref, "://") {
		data, err := localfile.ReadFile(ref, limit)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return &signedSource{a: a, ref: ref, kind: "file", path: ref, data: data}, nil
	}
	loc, err := providers.ParseURL(ref)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if loc.Scheme == "oci" {
		st, err := a.openStore(ctx, ref)
		if err != nil {
			return nil, err
		}
		data, err := oci.FetchManifest(ctx, st)
		if err != nil {
			st.Close()
			return nil, err
		}
		return &signedSource{a: a, ref: ref, kind: "oci", store: st, data: data}, nil
	}
	if loc.Scheme == "file" {
		return a.openSigned(ctx, strings.TrimPrefix(ref, "file://"), limit)
	}
	dir, key, ok := splitObjectURL(ref)
	if !ok {
		return nil, usageErr("%s: name the object, e.g. s3://BUCKET/dr/manifest.json", providers.Redact(ref))
	}
	st, err := a.openStore(ctx, dir)
	if err != nil {
		return nil, err
	}
	data, err := providers.ReadSmall(ctx, st, key, providers.ReadOptions{}, limit)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &signedSource{a: a, ref: ref, kind: "store", store: st, key: key, data: data}, nil
}

// signedOpener is openSigned as the library's entry points take it (signature.Opener).
func (a *app) signedOpener(limit int64) signature.Opener {
	return func(ctx context.Context, ref string) (signature.Source, error) {
		src, err := a.openSigned(ctx, ref, limit)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
}

// foundSig is one signature found for a blob.
type foundSig = signature.Found

// Subject, Bytes and Signatures make a signedSource the signature.Source a trust policy checks.
func (s *signedSource) Subject() string { return providers.Redact(s.ref) }
func (s *signedSource) Bytes() []byte   { return s.data }

// Signatures finds the blob's signatures: beside it, or its registry referrers.
func (s *signedSource) Signatures(ctx context.Context) ([]foundSig, error) {
	var out []foundSig
	add := func(where string, data []byte) {
		out = append(out, foundSig{Where: where, KeyID: signature.ClaimedKeyID(data), Data: data})
	}
	switch s.kind {
	case "file":
		p := signature.SidecarName(s.path)
		data, err := signature.LoadBundle(p)
		switch {
		case err == nil:
			add(p, data)
		case !errors.Is(err, os.ErrNotExist):
			return nil, usageErr("%v", err)
		}
	case "store":
		k := signature.SidecarName(s.key)
		data, err := providers.ReadSmall(ctx, s.store, k, providers.ReadOptions{}, signature.MaxBundleBytes)
		switch {
		case err == nil:
			add(sidecarURL(s.ref), data)
		case !errors.Is(err, providers.ErrNotFound):
			return nil, err
		}
	case "oci":
		refs, skipped, err := oci.Referrers(ctx, s.store, s.data, signature.MediaType, signature.MaxBundleBytes)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			add("referrer "+r.Digest.String(), r.Data)
		}
		if skipped > 0 {
			out = append(out, foundSig{Where: fmt.Sprintf("%d unreadable referrer(s)", skipped), KeyID: "unknown"})
		}
	}
	return out, nil
}

// attach stores a signature for the blob: out if given, else beside it (file, store) or as a
// referrer (registry). It returns where.
func (s *signedSource) attach(ctx context.Context, b []byte, out string, keyID string) (string, error) {
	if out != "" {
		if err := writeOut(out, b, s.a); err != nil {
			return "", usageErr("--bundle %s: %v", out, err)
		}
		return out, nil
	}
	switch s.kind {
	case "file":
		p := signature.SidecarName(s.path)
		if err := writeOut(p, b, s.a); err != nil {
			return "", usageErr("%s: %v", p, err)
		}
		return p, nil
	case "store":
		k := signature.SidecarName(s.key)
		if _, err := s.store.Write(ctx, k, bytes.NewReader(b), providers.WriteOptions{}); err != nil {
			return "", err
		}
		return sidecarURL(s.ref), nil
	}
	d, err := oci.AttachReferrer(ctx, s.store, s.data, signature.MediaType, b, map[string]string{
		"dev.sigstore.bundle.content": "message-signature",
		"dev.lifeboat.signature.key":  keyID,
	})
	if err != nil {
		return "", err
	}
	return "referrer " + d.String() + " of " + s.digest().String(), nil
}

// keyPassword reads an encrypted key's password from LIFEBOAT_KEY_PASSWORD, else COSIGN_PASSWORD
// (cosign's variable): nil when neither is set.
func keyPassword() func() ([]byte, error) {
	for _, v := range []string{"LIFEBOAT_KEY_PASSWORD", "COSIGN_PASSWORD"} {
		if p, ok := os.LookupEnv(v); ok {
			return func() ([]byte, error) { return []byte(p), nil }
		}
	}
	return nil
}

func (a *app) loadSigner(path string) (*signature.Signer, error) {
	s, err := signature.LoadSigner(path, keyPassword())
	if err != nil {
		return nil, usageErr("--key: %v", err)
	}
	return s, nil
}

func (a *app) manifestSignCmd() *cobra.Command {
	var keyFile, out, manifestFile string
	c := &cobra.Command{
		Use:   "sign MANIFEST --key KEY [--bundle FILE] [-o text|json]",
		Short: "Sign a DR manifest with a key: a signature beside it, or attached in the registry",
		Long: `Sign signs the DR manifest's exact bytes (so its digest, and through it every file's digest)
with a private key and stores the signature — a Sigstore bundle, the format cosign writes:

  FILE                          beside it, as FILE.sigstore.json
  s3://… gs://… az://…/NAME     beside it in the store, as NAME.sigstore.json
  oci://REGISTRY/REPO[:TAG]     in the registry, as an OCI 1.1 referrer of the manifest (subject =
                                its digest); registries without the referrers API get the
                                referrers tag (sha256-<hex>), as oras and cosign do

--bundle FILE writes it there instead. Sign again with another key to add a signature (a
registry keeps every referrer; a file or store keeps the last, see docs/signing.md for rotation).

KEY is a PEM private key: PKCS#8 (ECDSA P-256/P-384, Ed25519, RSA), SEC 1 EC, or cosign's
encrypted key (cosign generate-key-pair), whose password comes from LIFEBOAT_KEY_PASSWORD or
COSIGN_PASSWORD. A key is named by its id — the first 16 hex digits of the SHA-256 of its public
key's DER — never printed. Keyless (OIDC, Fulcio, Rekor) signing needs the internet: use cosign
sign-blob for it (docs/signing.md); this command signs offline, with no transparency log.

Exit codes: 0 signed; 2 bad input (manifest, key, password); 4 the store stayed unreachable.`,
		Example: `  openssl genpkey -algorithm ed25519 -out release.key && openssl pkey -in release.key -pubout -out release.pub
  lifeboat manifest sign dr/manifest.json --key release.key
  COSIGN_PASSWORD=… lifeboat manifest sign oci://registry.example.com/models/llama:v1 --key cosign.key
  lifeboat manifest verify-sig dr/manifest.json --key release.pub`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			args, err := manifestArg(manifestFile, args, "manifest sign")
			if err != nil {
				return err
			}
			if keyFile == "" {
				return usageErr("manifest sign needs --key KEY, a PEM private key (see --help)")
			}
			signer, err := a.loadSigner(keyFile)
			if err != nil {
				return err
			}
			src, err := a.openSigned(cmd.Context(), args[0], manifest.MaxManifestBytes)
			if err != nil {
				return err
			}
			defer src.Close()
			if _, err := manifest.Parse(src.data, args[0]); err != nil {
				return usageErr("%s: not a DR manifest, refusing to sign it: %v", providers.Redact(args[0]), err)
			}
			b, err := signer.SignBlob(cmd.Context(), src.data)
			if err != nil {
				return err
			}
			where, err := src.attach(cmd.Context(), b, out, signer.KeyID())
			if err != nil {
				return err
			}
			if a.output == "json" {
				return a.writeJSON(map[string]any{"manifest": providers.Redact(args[0]), "digest": src.digest(), "key_id": signer.KeyID(), "stored": where})
			}
			fmt.Fprintf(a.stdout, "signed %s (%s) with key %s\nstored: %s\n", providers.Redact(args[0]), src.digest(), signer.KeyID(), where)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&keyFile, "key", "", "the PEM private key to sign with (required)")
	f.StringVar(&manifestFile, "manifest", "", "the manifest: FILE, a store URL of the object, or oci://REGISTRY/REPO[:TAG|@DIGEST] (or as the argument)")
	f.StringVar(&out, "bundle", "", "write the signature (a Sigstore bundle) to this file instead of beside the manifest")
	_ = c.MarkFlagFilename("key", "key", "pem")
	return c
}

// sigCheck is the verdict on a blob's signatures.
type sigCheck = signature.Check

// checkSignatures reads the blob at ref and its signatures and verifies them against keys.
func (a *app) checkSignatures(ctx context.Context, ref string, extra []string, keys []*signature.PublicKey, limit int64) (*sigCheck, []byte, error) {
	src, err := a.openSigned(ctx, ref, limit)
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	more, err := extraSignatures(extra)
	if err != nil {
		return nil, nil, err
	}
	c, err := signature.CheckSource(ctx, src, more, keys)
	if err != nil {
		return nil, nil, err
	}
	return c, src.data, nil
}

// extraSignatures reads the signature files given with --bundle.
func extraSignatures(files []string) ([]foundSig, error) {
	var out []foundSig
	for _, f := range files {
		data, err := signature.LoadBundle(f)
		if err != nil {
			return nil, usageErr("--bundle: %v", err)
		}
		out = append(out, foundSig{Where: f, KeyID: signature.ClaimedKeyID(data), Data: data})
	}
	return out, nil
}

func (a *app) manifestVerifySigCmd() *cobra.Command {
	var keyFiles, sigFiles []string
	var fleetFile, manifestFile string
	c := &cobra.Command{
		Use:   "verify-sig MANIFEST|FILE (--key PUB... | --fleet FILE) [--bundle FILE]... [-o text|json]",
		Short: "Verify a manifest's (or a drill report's) signature offline against public keys",
		Long: `Verify-sig checks that the file was signed by one of the accepted public keys and has not
changed since: it finds the signatures where 'lifeboat manifest sign' (or 'drill run --sign-key')
puts them — FILE.sigstore.json beside a file or a store object, the OCI referrers of a manifest in
a registry — plus any --bundle FILE (as cosign sign-blob --bundle FILE writes it), and verifies each
against each key, offline: no transparency log, no certificate, no network but the store's.

The accepted keys are --key PUB (PEM public keys; repeat for a rotation) or the trust.keys of the
fleet file given with --fleet (then MANIFEST defaults to the fleet's model.manifest). Keys are named
by id: the first 16 hex digits of the SHA-256 of the public key's DER.

A signature made keyless (a Fulcio certificate) is not verified here: use cosign verify-blob with
--certificate-identity and --certificate-oidc-issuer (online; docs/signing.md).

Exit codes: 0 a signature by an accepted key verifies; 1 none does (the key ids found are named);
2 bad input (a key or signature file unreadable, the file missing); 4 the store stayed unreachable.`,
		Example: `  lifeboat manifest verify-sig dr/manifest.json --key release.pub
  lifeboat manifest verify-sig oci://registry.example.com/models/llama:v1 --key release.pub --key release-2027.pub
  lifeboat manifest verify-sig --fleet fleet.yaml
  lifeboat manifest verify-sig drills/report.json --key ops.pub
  lifeboat manifest verify-sig dr/manifest.json --key cosign.pub --bundle manifest.bundle`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			var keys []*signature.PublicKey
			for _, k := range keyFiles {
				pk, err := signature.LoadPublicKey(k)
				if err != nil {
					return usageErr("--key: %v", err)
				}
				keys = append(keys, pk)
			}
			ref := manifestFile
			if len(args) == 1 {
				if manifestFile != "" && args[0] != manifestFile {
					return usageErr("manifest verify-sig: the file is given twice (%s and --manifest %s)", args[0], manifestFile)
				}
				ref = args[0]
			}
			if fleetFile != "" {
				fl, err := a.loadFleet(fleetFile)
				if err != nil {
					return err
				}
				if fl.Trust == nil {
					return usageErr("--fleet %s has no trust: section (accepted public keys); give --key PUB", fleetFile)
				}
				keys = append(keys, fl.Trust.Keys...)
				if ref == "" {
					ref = fl.Model.Manifest
				}
			}
			if ref == "" {
				return usageErr("manifest verify-sig needs the file to verify: MANIFEST (or --fleet FILE)")
			}
			if len(keys) == 0 {
				return usageErr("manifest verify-sig needs the accepted public keys: --key PUB (or --fleet FILE with trust.keys)")
			}
			c, _, err := a.checkSignatures(cmd.Context(), ref, sigFiles, keys, manifest.MaxManifestBytes)
			if err != nil {
				return err
			}
			if a.output == "json" {
				if err := a.writeJSON(c); err != nil {
					return err
				}
			} else {
				renderSigCheck(a, c)
			}
			if !c.Valid {
				return problem("%s: no valid signature by an accepted key (signatures found: %s; accepted keys: %s)", c.Subject, c.Claimed(), strings.Join(c.Accepted, ", "))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&keyFiles, "key", nil, "an accepted PEM public key (repeatable)")
	f.StringArrayVar(&sigFiles, "bundle", nil, "a signature file (Sigstore bundle) to check too (repeatable)")
	f.StringVar(&fleetFile, "fleet", "", "accept the keys of this fleet file's trust: section")
	f.StringVar(&manifestFile, "manifest", "", "the file to verify (or as the argument)")
	_ = c.MarkFlagFilename("key", "pub", "pem")
	_ = c.MarkFlagFilename("fleet", "yaml", "yml")
	return c
}

func renderSigCheck(a *app, c *sigCheck) {
	if c.Valid {
		fmt.Fprintf(a.stdout, "OK   %s (%s): signed by accepted key %s\n", c.Subject, c.Digest, c.KeyID)
		return
	}
	fmt.Fprintf(a.stdout, "FAIL %s (%s): no valid signature by an accepted key\n", c.Subject, c.Digest)
	for _, s := range c.Signatures {
		fmt.Fprintf(a.stdout, "  signature %s: key %s\n", s.Where, s.KeyID)
	}
	if len(c.Signatures) == 0 {
		fmt.Fprintln(a.stdout, "  no signature found")
	}
	for _, r := range c.Reasons {
		fmt.Fprintf(a.stdout, "  %s\n", r)
	}
	fmt.Fprintf(a.stdout, "  accepted keys: %s\n", strings.Join(c.Accepted, ", "))
}

// trustSpec is what a command accepts as the manifest's signer: the fleet's trust: section, or
// restore's --key flags (signature.Policy, which the library's entry points enforce too).
type trustSpec = signature.Policy

// fleetTrust is the fleet's trust: section as a trustSpec; nil when it has none.
func fleetTrust(fl *fleet.Fleet, fleetFile string) *trustSpec {
	if fl == nil || fl.Trust == nil {
		return nil
	}
	return signature.FleetPolicy(fl.Trust.Keys, fl.Trust.Require, fleetFile)
}

// enforceTrust enforces ts before cmdName acts on the manifest at ref and returns the check
// made (nil when ts is nil): exit 3 naming the key ids found and the next command when no
// accepted key signed it (with require: false only a warning). Callers act on e.Data, exactly
// the bytes verified.
func (a *app) enforceTrust(ctx context.Context, ref string, ts *trustSpec, cmdName string) (*signature.Enforced, error) {
	e, err := ts.EnforceAt(ctx, a.signedOpener(manifest.MaxManifestBytes), ref, manifest.MaxManifestBytes, cmdName)
	if err != nil {
		return nil, err
	}
	a.printEnforced(e)
	return e, nil
}

// printEnforced logs a verified signature or prints the warning of a policy that only warns.
func (a *app) printEnforced(e *signature.Enforced) {
	if e == nil || e.Check == nil {
		return
	}
	if e.Warning != "" {
		fmt.Fprintln(a.stderr, e.Warning)
		return
	}
	a.log.Info("manifest signature verified", "manifest", e.Check.Subject, "digest", e.Check.Digest, "key", e.Check.KeyID)
}

// requireTrustedFleet enforces the trust: of the fleet file before cmdName (which does not read
// the manifest itself) acts; it returns the check made (nil: the fleet has no trust:).
func (a *app) requireTrustedFleet(ctx context.Context, fleetFile, cmdName string) (*signature.Enforced, error) {
	if fleetFile == "" {
		return nil, nil // the command's own usage error follows
	}
	fl, err := a.loadFleet(fleetFile)
	if err != nil {
		return nil, err
	}
	return a.enforceTrust(ctx, fl.Model.Manifest, fleetTrust(fl, fleetFile), cmdName)
}

// parseTrusted parses the bytes e verified, or reads the manifest at ref when nothing was
// checked (e nil).
func (a *app) parseTrusted(ctx context.Context, ref string, e *signature.Enforced) (*manifest.Manifest, error) {
	if e == nil {
		return a.readManifest(ctx, ref)
	}
	m, err := manifest.Parse(e.Data, ref)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return m, nil
}

// checkTrust is check's signature step: nil when the fleet has no trust: or the manifest was
// built from --model (nothing signed it yet).
func (a *app) checkTrust(ctx context.Context, fl *fleet.Fleet, in checkInput) (*sigCheck, error) {
	if fl.Trust == nil {
		return nil, nil
	}
	if in.model != "" {
		fmt.Fprintln(a.stderr, "trust: not checked: the manifest was built from --model (sign the manifest file, then check the fleet)")
		return nil, nil
	}
	c, _, err := a.checkSignatures(ctx, fl.Model.Manifest, nil, fl.Trust.Keys, manifest.MaxManifestBytes)
	return c, err
}

func renderCheckSig(a *app, c *sigCheck, require bool) {
	if c.Valid {
		fmt.Fprintf(a.stdout, "Trust: OK, %s signed by accepted key %s\n", c.Digest, c.KeyID)
		return
	}
	verdict := "FAIL"
	if !require {
		verdict = "WARN (trust.require: false)"
	}
	fmt.Fprintf(a.stdout, "Trust: %s, %s has no valid signature by an accepted key (signatures found: %s; accepted keys: %s)\n",
		verdict, c.Digest, c.Claimed(), strings.Join(c.Accepted, ", "))
	for _, r := range c.Reasons {
		fmt.Fprintf(a.stdout, "  %s\n", r)
	}
}

// signatureSuite is check's JUnit suite for the manifest's signature: one case.
func signatureSuite(c *sigCheck, require bool) junitSuite {
	tc := junitCase{Name: "manifest signature", ClassName: "lifeboat.trust"}
	su := junitSuite{Name: "lifeboat signature " + c.Subject, Tests: 1}
	if c.Valid {
		tc.SystemOut = fmt.Sprintf("%s signed by accepted key %s", c.Digest, c.KeyID)
	} else {
		msg := fmt.Sprintf("no valid signature by an accepted key (signatures found: %s; accepted keys: %s)", c.Claimed(), strings.Join(c.Accepted, ", "))
		if require {
			tc.Failure = &junitFailure{Message: msg, Type: "untrusted", Text: strings.Join(append([]string{msg}, c.Reasons...), "\n")}
			su.Failures++
		} else {
			tc.SystemOut = msg
		}
	}
	su.Cases = []junitCase{tc}
	return su
}
