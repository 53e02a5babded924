package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"lifeboat/internal/emulators"
)

func TestMain(m *testing.M) {
	code := emulators.Main(m)
	if toolDir != "" {
		os.RemoveAll(toolDir)
	}
	os.Exit(code)
}

var (
	toolOnce sync.Once
	toolDir  string
	toolBin  string
	toolErr  error
)

// keyPair writes a fresh ECDSA P-256 key pair (PKCS#8 and PKIX PEM) and returns their paths.
func keyPair(t *testing.T) (priv, pub string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pder, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "release.key"), filepath.Join(dir, "release.pub")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pder}), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// makeIn runs make in the repository root with extra variables and environment.
func makeIn(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	c := exec.Command("make", append([]string{"-s", "--no-print-directory"}, args...)...)
	c.Dir = "../.."
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// tool runs the release tool (built once: the same package the Makefile runs with go run).
func tool(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	toolOnce.Do(func() {
		if toolDir, toolErr = os.MkdirTemp("", "lifeboat-release-tool-"); toolErr != nil {
			return
		}
		toolBin = filepath.Join(toolDir, "release")
		if out, err := exec.Command("go", "build", "-o", toolBin, ".").CombinedOutput(); err != nil {
			toolErr = fmt.Errorf("go build the release tool: %v\n%s", err, out)
		}
	})
	if toolErr != nil {
		t.Fatal(toolErr)
	}
	c := exec.Command(toolBin, args...)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	return string(out), err
}

// cosignPath is bin/cosign when `make` installed it (the independent verifier), else "".
func cosignPath(t *testing.T) string {
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "bin", "cosign")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// goBuildLines returns the `go build` commands of `make -n TARGET`.
func goBuildLines(t *testing.T, vars ...string) []string {
	t.Helper()
	out, err := makeIn(t, nil, append([]string{"-n"}, vars...)...)
	if err != nil {
		t.Fatalf("make -n %v: %v\n%s", vars, err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " go build ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// The release and image binaries are built with `make build`'s flags: the recipes use one
// definition, and what they expand to says so.
func TestReleaseAndImageBuildAsMakeBuild(t *testing.T) {
	build := goBuildLines(t, "build", "VERSION=v9.9.9-test")
	if len(build) != 1 {
		t.Fatalf("make -n build: %q", build)
	}
	flags := build[0][strings.Index(build[0], "CGO_ENABLED=0"):strings.Index(build[0], " -o ")]
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-tags disable_grpc_modules", "-X main.version=v9.9.9-test", "-X main.commit="} {
		if !strings.Contains(flags, want) {
			t.Errorf("make build lacks %s: %s", want, build[0])
		}
	}
	release := strings.Join(goBuildLines(t, "release", "SIGN_KEY=k", "VERSION=v9.9.9-test"), "\n")
	image := strings.Join(goBuildLines(t, "image", "SIGN_KEY=k", "VERSION=v9.9.9-test"), "\n")
	for name, text := range map[string]string{"release": release, "image": image} {
		if !strings.Contains(text, flags) {
			t.Errorf("make %s does not build with make build's flags %q:\n%s", name, flags, text)
		}
	}
	out, err := makeIn(t, nil, "-n", "release", "SIGN_KEY=k")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "for p in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64;") {
		t.Errorf("make release does not build linux and darwin on amd64 and arm64:\n%s", out)
	}
	// Without a key nothing is released: a clear refusal, exit 2, before any build.
	for _, target := range []string{"release", "image"} {
		out, err := makeIn(t, nil, target, "SIGN_KEY=")
		if err == nil || !strings.Contains(out, "SIGN_KEY=PATH") || strings.Contains(out, "building") {
			t.Errorf("make %s without SIGN_KEY: %v\n%s", target, err, out)
		}
	}
}

// `make release` (for the host's platform only: the recipe loops over RELEASE_PLATFORMS, all four
// checked above) writes the binary, SHA256SUMS that `sha256sum -c` verifies and its signature,
// which verifies against the public key — and fails for a changed SHA256SUMS, as a changed
// binary fails the checksums.
func TestMakeReleaseChecksumsAndSignature(t *testing.T) {
	priv, pub := keyPair(t)
	dist := t.TempDir()
	plat := runtime.GOOS + "/" + runtime.GOARCH
	out, err := makeIn(t, nil, "release", "DIST="+dist, "RELEASE_PLATFORMS="+plat, "SIGN_KEY="+priv, "VERSION=v0.0.1-test",
		"ALLOW_DIRTY=1", "RELEASE_PUB="+pub)
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	// The public key a user verifies with is published beside the checksums, and is the key's pair.
	if got, err := os.ReadFile(filepath.Join(dist, "lifeboat.pub")); err != nil {
		t.Error(err)
	} else if want, _ := os.ReadFile(pub); string(got) != string(want) {
		t.Errorf("dist/lifeboat.pub:\n%s\nwant the key's public half:\n%s", got, want)
	}
	bin := filepath.Join(dist, "lifeboat_"+runtime.GOOS+"_"+runtime.GOARCH)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256Hex(data) + "  " + filepath.Base(bin) + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS:\n%s\nwant\n%s", sums, want)
	}
	check := func() error {
		c := exec.Command("sha256sum", "-c", "SHA256SUMS")
		c.Dir = dist
		out, err := c.CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
	if err := check(); err != nil {
		t.Errorf("sha256sum -c: %v", err)
	}
	if out, err := tool(t, nil, "verify", "-key", pub, filepath.Join(dist, "SHA256SUMS")); err != nil || !strings.Contains(out, "OK ") {
		t.Errorf("verify SHA256SUMS: %v\n%s", err, out)
	}
	if cosign := cosignPath(t); cosign != "" {
		c := exec.Command(cosign, "verify-blob", "--key", pub, "--bundle", filepath.Join(dist, "SHA256SUMS.sigstore.json"), "--insecure-ignore-tlog", filepath.Join(dist, "SHA256SUMS"))
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("cosign verify-blob SHA256SUMS: %v\n%s", err, out)
		}
	} else {
		t.Log("bin/cosign not installed: the signature was verified by lifeboat/manifest/signature only")
	}
	// The binary is the one `lifeboat version` describes.
	if out, err := exec.Command(bin, "version").Output(); err != nil || !strings.Contains(string(out), "lifeboat v0.0.1-test") || !strings.Contains(string(out), "build tags:  disable_grpc_modules") {
		t.Errorf("%s version: %v\n%s", bin, err, out)
	}

	// A changed binary fails the checksums; a changed checksums file fails the signature.
	if err := os.WriteFile(bin, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := check(); err == nil {
		t.Error("sha256sum -c passes a changed binary")
	}
	forged := strings.Replace(string(sums), string(sums[:64]), sha256Hex(append(data, 0)), 1)
	if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	if check() != nil {
		t.Fatal("the forged SHA256SUMS does not match the changed binary (the test's own mistake)")
	}
	if out, err := tool(t, nil, "verify", "-key", pub, filepath.Join(dist, "SHA256SUMS")); err == nil || !strings.Contains(out, "changed after signing") {
		t.Errorf("verify of a forged SHA256SUMS: %v\n%s", err, out)
	}
}

// A release is never built from a dirty tree (every binary would say dirty=true), nor signed by
// a key other than the published lifeboat.pub: both refused with exit 2, before any build, with
// what to do.
func TestMakeReleaseRefusesDirtyTreeAndStrangerKey(t *testing.T) {
	priv, _ := keyPair(t)
	_, otherPub := keyPair(t)
	dist := t.TempDir()
	plat := runtime.GOOS + "/" + runtime.GOARCH
	out, err := makeIn(t, nil, "release", "DIST="+dist, "RELEASE_PLATFORMS="+plat, "SIGN_KEY="+priv, "DIRTY=true")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "stamped dirty=true") || !strings.Contains(out, "a signing key belongs outside it") {
		t.Errorf("make release of a dirty tree: %v\n%s", err, out)
	}
	out, err = makeIn(t, nil, "release", "DIST="+dist, "RELEASE_PLATFORMS="+plat, "SIGN_KEY="+priv, "ALLOW_DIRTY=1", "RELEASE_PUB="+otherPub)
	if err == nil || !strings.Contains(out, "sign with the published release key") {
		t.Errorf("make release with a key that is not lifeboat.pub's pair: %v\n%s", err, out)
	}
	if m, _ := filepath.Glob(filepath.Join(dist, "lifeboat_*")); len(m) != 0 {
		t.Errorf("a refused release built %v", m)
	}
}

// oras runs the oras CLI (an independent client) against the registry with its credentials.
func oras(t *testing.T, dockerConfig string, args ...string) []byte {
	t.Helper()
	bin, err := emulators.OrasPath()
	if err != nil {
		emulators.Unavailable(t, err)
	}
	c := exec.Command(bin, append(args, "--plain-http", "--registry-config", filepath.Join(dockerConfig, "config.json"))...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("oras %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// `make image` twice, from the same source into two fresh dist directories (two real `go build`s
// and two image builds): the same digest. The image is pulled back with oras (an independent
// client) and judged: a linux index → manifest → config with the non-root user, the entrypoint,
// the version and revision labels, the platform; a layer holding exactly the binary the build
// made, /etc/passwd naming user 65532 and the CA bundle; a CycloneDX SBOM attached to the
// platform's manifest listing every module the binary's build information lists; signatures on
// the index and the SBOM that verify — and a different key does not verify them.
func TestMakeImageReproducibleSignedWithSBOM(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	dockerConfig := emulators.DockerConfig(t, reg)
	priv, pub := keyPair(t)
	repo := reg.Host + "/lifeboat-image-test"
	plat := "linux/" + runtime.GOARCH
	env := []string{"DOCKER_CONFIG=" + dockerConfig}
	var refs []string
	var dists []string
	for range 2 {
		dist := t.TempDir()
		out, err := makeIn(t, env, "image", "DIST="+dist, "IMAGE_REPO="+repo, "IMAGE_PLATFORMS="+plat, "SIGN_KEY="+priv, "ALLOW_DIRTY=1",
			"VERSION=v0.0.2-test", "IMAGE_TAG=v0.0.2-test", "SOURCE_URL=https://example.com/lifeboat")
		if err != nil {
			t.Fatalf("make image: %v\n%s", err, out)
		}
		ref, err := os.ReadFile(filepath.Join(dist, "image.ref"))
		if err != nil {
			t.Fatal(err)
		}
		refs, dists = append(refs, strings.TrimSpace(string(ref))), append(dists, dist)
	}
	if refs[0] != refs[1] {
		t.Fatalf("two builds of the same source: %s and %s", refs[0], refs[1])
	}
	ref := refs[0]
	if !strings.HasPrefix(ref, repo+"@sha256:") {
		t.Fatalf("image.ref %q: want %s@sha256:…", ref, repo)
	}
	binary, err := os.ReadFile(filepath.Join(dists[0], "image", "lifeboat_linux_"+runtime.GOARCH))
	if err != nil {
		t.Fatal(err)
	}

	// Pulled back by oras: the tag resolves to the same index.
	var idx ocispec.Index
	if err := json.Unmarshal(oras(t, dockerConfig, "manifest", "fetch", repo+":v0.0.2-test"), &idx); err != nil {
		t.Fatal(err)
	}
	if idx.MediaType != ocispec.MediaTypeImageIndex || len(idx.Manifests) != 1 || idx.Manifests[0].Platform == nil ||
		idx.Manifests[0].Platform.OS != "linux" || idx.Manifests[0].Platform.Architecture != runtime.GOARCH {
		t.Fatalf("index: %+v", idx)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(oras(t, dockerConfig, "manifest", "fetch", repo+"@"+idx.Manifests[0].Digest.String()), &man); err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(oras(t, dockerConfig, "blob", "fetch", "--output", "-", repo+"@"+man.Config.Digest.String()), &cfg); err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || c.User != "65532:65532" ||
		strings.Join(c.Entrypoint, " ") != "/usr/local/bin/lifeboat" ||
		c.Labels["org.opencontainers.image.version"] != "v0.0.2-test" || c.Labels["org.opencontainers.image.source"] != "https://example.com/lifeboat" ||
		len(c.Labels["org.opencontainers.image.revision"]) != 40 || cfg.Created == nil || cfg.Created.Unix() < 1e9 {
		t.Errorf("image config: %+v created %v", c, cfg.Created)
	}
	if len(man.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("layers: %+v", man.Layers)
	}
	layer := oras(t, dockerConfig, "blob", "fetch", "--output", "-", repo+"@"+man.Layers[0].Digest.String())
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if d := "sha256:" + sha256Hex(raw); d != cfg.RootFS.DiffIDs[0].String() {
		t.Errorf("the layer's diff id %s, the config says %s", d, cfg.RootFS.DiffIDs[0])
	}
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
		if !h.ModTime.Equal(*cfg.Created) {
			t.Errorf("%s: mtime %v, want the commit time %v", h.Name, h.ModTime, cfg.Created)
		}
		if h.Name == "usr/local/bin/lifeboat" && (h.Mode != 0o755 || h.Uid != 0) {
			t.Errorf("the binary: mode %o uid %d", h.Mode, h.Uid)
		}
	}
	if !bytes.Equal(files["usr/local/bin/lifeboat"], binary) {
		t.Error("the image's /usr/local/bin/lifeboat is not the binary make image built")
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd: %q", files["etc/passwd"])
	}
	if ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil && !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"], ca) {
		t.Error("the image's CA bundle is not the system's")
	}
	if _, ok := files["tmp/"]; !ok {
		t.Error("no /tmp in the image")
	}

	// The SBOM, found through the referrers tag schema (the registry has no referrers API).
	var disc struct {
		Referrers []ocispec.Descriptor `json:"referrers"`
	}
	if err := json.Unmarshal(oras(t, dockerConfig, "discover", "--format", "json", "--depth", "1", "--artifact-type", SBOMMediaType, repo+"@"+idx.Manifests[0].Digest.String()), &disc); err != nil {
		t.Fatal(err)
	}
	if len(disc.Referrers) != 1 {
		t.Fatalf("SBOM referrers of the linux manifest: %+v", disc.Referrers)
	}
	var sbomMan ocispec.Manifest
	if err := json.Unmarshal(oras(t, dockerConfig, "manifest", "fetch", repo+"@"+disc.Referrers[0].Digest.String()), &sbomMan); err != nil {
		t.Fatal(err)
	}
	var bom cdxBOM
	if err := json.Unmarshal(oras(t, dockerConfig, "blob", "fetch", "--output", "-", repo+"@"+sbomMan.Layers[0].Digest.String()), &bom); err != nil {
		t.Fatal(err)
	}
	bi, err := buildinfo.ReadFile(filepath.Join(dists[0], "image", "lifeboat_linux_"+runtime.GOARCH))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, comp := range bom.Components {
		listed[comp.Name] = comp.Version
	}
	for _, d := range bi.Deps {
		if listed[d.Path] != d.Version {
			t.Errorf("SBOM: module %s: version %q, the binary has %s", d.Path, listed[d.Path], d.Version)
		}
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Version != "v0.0.2-test" || len(bi.Deps) < 50 ||
		len(bom.Metadata.Component.Hashes) != 1 || bom.Metadata.Component.Hashes[0].Content != sha256Hex(binary) {
		t.Errorf("SBOM metadata: %+v (%d deps in the binary)", bom.Metadata.Component, len(bi.Deps))
	}

	// The signatures: the release tool's verification (index + SBOM), and a stranger's key fails.
	denv := []string{"DOCKER_CONFIG=" + dockerConfig}
	out, err := tool(t, denv, "verify-image", "-key", pub, ref)
	if err != nil || !strings.Contains(out, "OK "+ref+": signed by key") || !strings.Contains(out, "OK "+plat+" SBOM") {
		t.Errorf("verify-image: %v\n%s", err, out)
	}
	_, otherPub := keyPair(t)
	if out, err := tool(t, denv, "verify-image", "-key", otherPub, ref); err == nil || !strings.Contains(out, "no valid signature") {
		t.Errorf("verify-image with another key: %v\n%s", err, out)
	}
	// An image nobody signed (here: the platform manifest, which only the index's signature
	// covers) is refused.
	if out, err := tool(t, denv, "verify-image", "-key", pub, repo+"@"+idx.Manifests[0].Digest.String()); err == nil || !strings.Contains(out, "no signature attached") {
		t.Errorf("verify-image of an unsigned manifest: %v\n%s", err, out)
	}
	// Independently: oras fetches the index and the signature bundle (one: the second make image
	// found the first one's signature and added none); cosign verifies it.
	dir := t.TempDir()
	digest := ref[strings.Index(ref, "@")+1:]
	index := oras(t, dockerConfig, "manifest", "fetch", ref)
	if "sha256:"+sha256Hex(index) != digest {
		t.Fatalf("the fetched index does not hash to %s", digest)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(oras(t, dockerConfig, "discover", "--format", "json", "--depth", "1", "--artifact-type", "application/vnd.dev.sigstore.bundle.v0.3+json", ref), &disc); err != nil || len(disc.Referrers) != 1 {
		t.Fatalf("signature referrers of the index: %v %+v", err, disc.Referrers)
	}
	var sigMan ocispec.Manifest
	if err := json.Unmarshal(oras(t, dockerConfig, "manifest", "fetch", repo+"@"+disc.Referrers[0].Digest.String()), &sigMan); err != nil {
		t.Fatal(err)
	}
	bundle := oras(t, dockerConfig, "blob", "fetch", "--output", "-", repo+"@"+sigMan.Layers[0].Digest.String())
	if err := os.WriteFile(filepath.Join(dir, "index.json.sigstore.json"), bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := tool(t, nil, "verify", "-key", pub, filepath.Join(dir, "index.json")); err != nil {
		t.Errorf("verify the fetched index and bundle: %v\n%s", err, out)
	}
	if cosign := cosignPath(t); cosign != "" {
		c := exec.Command(cosign, "verify-blob", "--key", pub, "--bundle", filepath.Join(dir, "index.json.sigstore.json"), "--insecure-ignore-tlog", filepath.Join(dir, "index.json"))
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("cosign verify-blob of the image index: %v\n%s", err, out)
		}
	} else {
		t.Log("bin/cosign not installed: the image signature was verified by lifeboat/manifest/signature only")
	}
}
