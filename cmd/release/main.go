package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"lifeboat/manifest/signature"
)

const usage = `usage:
  release image -repo REGISTRY/REPO [-tag TAG] -platform OS/ARCH=BINARY [-platform …] -key KEY
                [-version V] [-revision SHA] [-created RFC3339] [-source URL] [-ca-certs FILE]
                [-digest-file FILE]
  release verify-image -key PUBKEY REGISTRY/REPO@sha256:…
  release sign -key KEY FILE…          (writes FILE.sigstore.json)
  release verify -key PUBKEY FILE…     (checks FILE.sigstore.json)
  release pubkey -key KEY [-check PUBKEY]
                                       (prints KEY's public key, PEM; with -check, fails unless
                                       it is the key in PUBKEY)
  release sbom -binary BINARY [-version V] [-created RFC3339]
An encrypted key's password comes from LIFEBOAT_KEY_PASSWORD or COSIGN_PASSWORD.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(os.Stderr, usage)
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"no subcommand"}
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	switch args[0] {
	case "image":
		var o imageOptions
		var platforms multiFlag
		fs.StringVar(&o.Repo, "repo", "", "REGISTRY/REPO to push to")
		fs.StringVar(&o.Tag, "tag", "", "tag for the image index (optional; the digest is what to use)")
		fs.Var(&platforms, "platform", "OS/ARCH=BINARY, once per platform")
		fs.StringVar(&o.Key, "key", "", "private key to sign with")
		fs.StringVar(&o.Meta.Version, "version", "dev", "the version label")
		fs.StringVar(&o.Meta.Revision, "revision", "", "the git commit label")
		created := fs.String("created", "", "the image's time (RFC 3339; the commit time); default 1970-01-01")
		fs.StringVar(&o.Meta.Source, "source", "", "the source repository URL label")
		fs.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to put in the image (empty: none)")
		fs.StringVar(&o.DigestFile, "digest-file", "", "write REGISTRY/REPO@sha256:… here")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if o.Repo == "" || len(platforms) == 0 || o.Key == "" || fs.NArg() > 0 {
			return usageError{"image needs -repo, at least one -platform and -key"}
		}
		t, err := parseTime(*created)
		if err != nil {
			return err
		}
		o.Meta.Created = t
		for _, p := range platforms {
			pl, bin, ok := strings.Cut(p, "=")
			osName, arch, ok2 := strings.Cut(pl, "/")
			if !ok || !ok2 || bin == "" {
				return usageError{fmt.Sprintf("-platform %q: want OS/ARCH=BINARY", p)}
			}
			o.Platforms = append(o.Platforms, platformBinary{ocispec.Platform{OS: osName, Architecture: arch}, bin})
		}
		ref, err := buildAndPush(ctx, o)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, ref)
		return nil
	case "verify-image":
		key := fs.String("key", "", "public key to verify with")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if *key == "" || fs.NArg() != 1 {
			return usageError{"verify-image needs -key and one REGISTRY/REPO@sha256:…"}
		}
		pub, err := signature.LoadPublicKey(*key)
		if err != nil {
			return err
		}
		rep, err := verifyImage(ctx, fs.Arg(0), pub)
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, rep)
		return nil
	case "sign", "verify":
		key := fs.String("key", "", "private key (sign) or public key (verify)")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if *key == "" || fs.NArg() == 0 {
			return usageError{args[0] + " needs -key and at least one file"}
		}
		if args[0] == "sign" {
			s, err := loadSigner(*key)
			if err != nil {
				return err
			}
			for _, f := range fs.Args() {
				data, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				b, err := s.SignBlob(ctx, data)
				if err != nil {
					return fmt.Errorf("signing %s: %w", f, err)
				}
				if err := os.WriteFile(f+signature.FileSuffix, b, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "signed %s with %s: %s\n", f, s, f+signature.FileSuffix)
			}
			return nil
		}
		pub, err := signature.LoadPublicKey(*key)
		if err != nil {
			return err
		}
		for _, f := range fs.Args() {
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(f + signature.FileSuffix)
			if err != nil {
				return err
			}
			v, err := signature.Verify(data, [][]byte{b}, []*signature.PublicKey{pub})
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			fmt.Fprintf(stdout, "OK %s: signed by key %s\n", f, v.KeyID)
		}
		return nil
	case "pubkey":
		key := fs.String("key", "", "private key")
		check := fs.String("check", "", "a published public key that must be KEY's")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if *key == "" || fs.NArg() != 0 {
			return usageError{"pubkey needs -key and no other argument"}
		}
		s, err := loadSigner(*key)
		if err != nil {
			return err
		}
		pem, err := s.PublicKeyPEM()
		if err != nil {
			return err
		}
		if *check != "" {
			// A release signed by another key than the published one verifies against nothing a
			// user has: refuse before anything is built or uploaded.
			pub, err := signature.LoadPublicKey(*check)
			if err != nil {
				return err
			}
			if pub.ID != s.KeyID() {
				return fmt.Errorf("%s is key %s, but -key %s is key %s: sign with the published release key, or publish the new one (docs/release.md)", *check, pub.ID, *key, s.KeyID())
			}
		}
		_, err = stdout.Write(pem)
		return err
	case "sbom":
		bin := fs.String("binary", "", "the Go binary")
		version := fs.String("version", "", "the version (default: the binary's module version)")
		created := fs.String("created", "", "the SBOM's timestamp (RFC 3339)")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError{err.Error()}
		}
		if *bin == "" {
			return usageError{"sbom needs -binary"}
		}
		if *created != "" {
			if _, err := parseTime(*created); err != nil {
				return err
			}
		}
		out, err := SBOMFor(*bin, *version, *created, nil)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(out, '\n'))
		return err
	}
	return usageError{fmt.Sprintf("unknown subcommand %q", args[0])}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("-created %q: not RFC 3339: %w", s, err)
	}
	return t.UTC(), nil
}

func loadSigner(path string) (*signature.Signer, error) {
	return signature.LoadSigner(path, func() ([]byte, error) {
		for _, env := range []string{"LIFEBOAT_KEY_PASSWORD", "COSIGN_PASSWORD"} {
			if p, ok := os.LookupEnv(env); ok {
				return []byte(p), nil
			}
		}
		return nil, nil
	})
}

type platformBinary struct {
	Platform ocispec.Platform
	Binary   string
}

type imageOptions struct {
	Repo       string
	Tag        string
	Platforms  []platformBinary
	Key        string
	Meta       imageMeta
	CACerts    string
	DigestFile string
}

// repository opens REGISTRY/REPO with the Docker credentials (DOCKER_CONFIG or
// ~/.docker/config.json and its helpers), plain HTTP for a loopback registry only.
func repository(ref string) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return nil, err
	}
	host := repo.Reference.Registry
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	repo.PlainHTTP = host == "localhost" || (ip != nil && ip.IsLoopback())
	creds, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Docker credential configuration: %w", err)
	}
	repo.Client = &auth.Client{
		Client:     &http.Client{Timeout: 10 * time.Minute},
		Header:     http.Header{"User-Agent": {"lifeboat-release"}},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(creds),
	}
	return repo, nil
}

// push uploads a blob or manifest unless the registry already has it.
func push(ctx context.Context, repo *remote.Repository, b blob) error {
	ok, err := repo.Exists(ctx, b.desc)
	if err != nil {
		return fmt.Errorf("checking %s: %w", b.desc.Digest, err)
	}
	if ok {
		return nil
	}
	if err := repo.Push(ctx, b.desc, bytes.NewReader(b.data)); err != nil {
		return fmt.Errorf("pushing %s (%s): %w", b.desc.Digest, b.desc.MediaType, err)
	}
	return nil
}

// attach pushes content as a referrer of subject (and its empty config); title names the file
// `oras pull` writes it to.
func attach(ctx context.Context, repo *remote.Repository, artifactType, title string, content blob, subject ocispec.Descriptor, created time.Time) (blob, error) {
	content.desc.Annotations = map[string]string{ocispec.AnnotationTitle: title}
	ref, err := referrer(artifactType, content, subject, created)
	if err != nil {
		return blob{}, err
	}
	empty := blob{desc: ocispec.DescriptorEmptyJSON, data: ocispec.DescriptorEmptyJSON.Data}
	for _, b := range []blob{content, empty, ref} {
		if err := push(ctx, repo, b); err != nil {
			return blob{}, err
		}
	}
	return ref, nil
}

// buildAndPush builds every platform's image and the index, pushes them, attaches each
// platform's SBOM (signed) and signs the index; it returns REGISTRY/REPO@DIGEST.
func buildAndPush(ctx context.Context, o imageOptions) (string, error) {
	signer, err := loadSigner(o.Key)
	if err != nil {
		return "", err
	}
	var extra []cdxComponent
	if o.CACerts != "" {
		data, err := os.ReadFile(o.CACerts)
		if err != nil {
			return "", fmt.Errorf("-ca-certs: %w (give -ca-certs '' for an image without CA certificates)", err)
		}
		o.Meta.CACerts = data
		extra = append(extra, cdxComponent{Type: "data", BOMRef: "file:/" + caPath, Name: "ca-certificates",
			Hashes:     []cdxHash{{Alg: "SHA-256", Content: sha256Hex(data)}},
			Properties: []cdxProperty{{Name: "lifeboat:image:path", Value: "/" + caPath}}})
	}
	repo, err := repository(o.Repo)
	if err != nil {
		return "", err
	}
	var imgs []*platformImage
	for _, p := range o.Platforms {
		im, err := buildPlatform(p.Platform, p.Binary, o.Meta)
		if err != nil {
			return "", err
		}
		imgs = append(imgs, im)
	}
	idx, err := indexOf(imgs, o.Meta)
	if err != nil {
		return "", err
	}
	for _, im := range imgs {
		for _, b := range []blob{im.Layer, im.Config, im.Manifest} {
			if err := push(ctx, repo, b); err != nil {
				return "", err
			}
		}
	}
	if err := push(ctx, repo, idx); err != nil {
		return "", err
	}
	if o.Tag != "" {
		if err := repo.Tag(ctx, idx.desc, o.Tag); err != nil {
			return "", fmt.Errorf("tagging %s: %w", o.Tag, err)
		}
	}
	created := o.Meta.Created
	for _, im := range imgs {
		sbom, err := SBOMFor(im.Binary, o.Meta.Version, created.Format(time.RFC3339), extra)
		if err != nil {
			return "", err
		}
		sbomRef, err := attach(ctx, repo, SBOMMediaType, "sbom.cdx.json", newBlob(SBOMMediaType, sbom), im.Manifest.desc, created)
		if err != nil {
			return "", err
		}
		if err := signAndAttach(ctx, repo, signer, sbomRef, created); err != nil {
			return "", err
		}
	}
	if err := signAndAttach(ctx, repo, signer, idx, created); err != nil {
		return "", err
	}
	ref := repo.Reference
	ref.Reference = idx.desc.Digest.String()
	out := ref.String()
	if o.DigestFile != "" {
		if err := os.WriteFile(o.DigestFile, []byte(out+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	return out, nil
}

// signAndAttach signs a manifest's bytes (what its digest is the hash of) and attaches the
// Sigstore bundle to it as a referrer — unless a signature by this key is already attached and
// verifies (a second `make image` of the same commit pushes the same image: no second signature).
func signAndAttach(ctx context.Context, repo *remote.Repository, s *signature.Signer, m blob, created time.Time) error {
	if _, err := verifyAttached(ctx, repo, m.desc, m.data, signature.PublicKeyOf(s)); err == nil {
		return nil
	}
	b, err := s.SignBlob(ctx, m.data)
	if err != nil {
		return fmt.Errorf("signing %s: %w", m.desc.Digest, err)
	}
	_, err = attach(ctx, repo, signature.MediaType, "manifest.json"+signature.FileSuffix, newBlob(signature.MediaType, b), m.desc, created)
	return err
}

// maxManifestBytes bounds a manifest or an attached SBOM/signature read from the registry.
const maxManifestBytes = 4 << 20

func fetch(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size > maxManifestBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a manifest, SBOM or signature may have", desc.Digest, desc.Size, maxManifestBytes)
	}
	return content.FetchAll(ctx, repo, desc)
}

// verifyAttached verifies the signatures attached to a manifest (its bytes) against pub.
func verifyAttached(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte, pub *signature.PublicKey) (signature.Verified, error) {
	var bundles [][]byte
	err := repo.Referrers(ctx, desc, signature.MediaType, func(refs []ocispec.Descriptor) error {
		for _, r := range refs {
			mb, err := fetch(ctx, repo, r)
			if err != nil {
				return err
			}
			var m ocispec.Manifest
			if err := jsonUnmarshal(mb, &m); err != nil || len(m.Layers) != 1 {
				return fmt.Errorf("signature referrer %s: not a one-layer artifact manifest", r.Digest)
			}
			b, err := fetch(ctx, repo, m.Layers[0])
			if err != nil {
				return err
			}
			bundles = append(bundles, b)
		}
		return nil
	})
	if err != nil {
		return signature.Verified{}, fmt.Errorf("listing the signatures of %s: %w", desc.Digest, err)
	}
	if len(bundles) == 0 {
		return signature.Verified{}, fmt.Errorf("%s: no signature attached", desc.Digest)
	}
	v, err := signature.Verify(data, bundles, []*signature.PublicKey{pub})
	if err != nil {
		return v, fmt.Errorf("%s: %w", desc.Digest, err)
	}
	return v, nil
}

// verifyImage checks a pushed image by digest: the index's signature, and for every platform an
// attached CycloneDX SBOM whose signature verifies. It returns a report, one line a check.
func verifyImage(ctx context.Context, ref string, pub *signature.PublicKey) (string, error) {
	r, err := registry.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if _, err := r.Digest(); err != nil {
		return "", fmt.Errorf("%s: verify an image by digest (REPO@sha256:…), not by a tag that can move", ref)
	}
	repo, err := repository(r.Registry + "/" + r.Repository)
	if err != nil {
		return "", err
	}
	desc, err := repo.Resolve(ctx, r.Reference)
	if err != nil {
		return "", err
	}
	data, err := fetch(ctx, repo, desc)
	if err != nil {
		return "", err
	}
	var w strings.Builder
	v, err := verifyAttached(ctx, repo, desc, data, pub)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&w, "OK %s: signed by key %s\n", ref, v.KeyID)
	var idx ocispec.Index
	if err := jsonUnmarshal(data, &idx); err != nil {
		return "", fmt.Errorf("%s: not an image index: %w", ref, err)
	}
	for _, m := range idx.Manifests {
		plat := "?"
		if m.Platform != nil {
			plat = m.Platform.OS + "/" + m.Platform.Architecture
		}
		var sboms []ocispec.Descriptor
		if err := repo.Referrers(ctx, m, SBOMMediaType, func(refs []ocispec.Descriptor) error {
			sboms = append(sboms, refs...)
			return nil
		}); err != nil {
			return "", err
		}
		if len(sboms) == 0 {
			return "", fmt.Errorf("%s (%s): no SBOM attached", m.Digest, plat)
		}
		for _, s := range sboms {
			sm, err := fetch(ctx, repo, s)
			if err != nil {
				return "", err
			}
			v, err := verifyAttached(ctx, repo, s, sm, pub)
			if err != nil {
				return "", fmt.Errorf("the SBOM of %s: %w", plat, err)
			}
			var art ocispec.Manifest
			if err := jsonUnmarshal(sm, &art); err != nil || len(art.Layers) != 1 {
				return "", fmt.Errorf("SBOM referrer %s: not a one-layer artifact manifest", s.Digest)
			}
			bom, err := fetch(ctx, repo, art.Layers[0])
			if err != nil {
				return "", err
			}
			var doc cdxBOM
			if err := jsonUnmarshal(bom, &doc); err != nil || doc.BOMFormat != "CycloneDX" {
				return "", fmt.Errorf("the SBOM of %s: not CycloneDX JSON", plat)
			}
			fmt.Fprintf(&w, "OK %s SBOM %s: signed by key %s, %d components\n", plat, s.Digest, v.KeyID, len(doc.Components))
		}
	}
	return w.String(), nil
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
