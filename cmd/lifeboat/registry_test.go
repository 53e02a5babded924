//go:build integration

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/manifest"

	"github.com/opencontainers/go-digest"
)

// A DR bundle pushed to a real registry (basic auth, credentials from a Docker config.json) by
// the binary: oras — an independent client — fetches the manifest and every blob byte for byte;
// quick and deep verify of the registry replica are green; a second push uploads no blob; restore
// from the registry yields the manifest's bytes; a blob corrupted on the registry's disk is found
// by deep verify (exit 1, naming the file) while quick verify, from HEADs, cannot see it.
func TestRegistryPushVerifyRestore(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	oras, err := emulators.OrasPath()
	if err != nil {
		emulators.Unavailable(t, err)
	}
	cfgDir := emulators.DockerConfig(t, reg)
	env := []string{"DOCKER_CONFIG=" + cfgDir}
	l, m := fixture(t, sample.Options{})
	man, err := manifest.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/lifeboat/push-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	target := "oci://" + ref + ":v1"
	target0 := target

	r := cli(t, env, "manifest", "push", m, "--from", l.Root, target)
	if r.code != 0 || !strings.Contains(r.stdout, "manifest pushed") {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, reg.Password) {
		t.Fatal("a credential in the output")
	}

	orasRun := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(oras, append(args, "--plain-http", "--registry-config", filepath.Join(cfgDir, "config.json"))...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("oras %v: %v\n%s", args, err, errb.String())
		}
		return out.Bytes()
	}
	if got := orasRun("manifest", "fetch", ref+":v1"); !bytes.Equal(got, raw) {
		t.Fatalf("oras manifest fetch differs from the manifest file:\n%s", got)
	}
	for _, f := range man.Files {
		want, err := os.ReadFile(l.Path(f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if got := orasRun("blob", "fetch", "--output", "-", ref+"@"+f.Digest.String()); !bytes.Equal(got, want) {
			t.Fatalf("oras blob fetch of %s differs from the file", f.Path)
		}
	}

	for _, deep := range [][]string{nil, {"--deep"}} {
		r := cli(t, env, append([]string{"verify", "--manifest", m, target}, deep...)...)
		if r.code != 0 {
			t.Fatalf("verify %v: exit %d\n%s%s", deep, r.code, r.stdout, r.stderr)
		}
	}

	// Nothing moves the second time: the registry's blobs are HEADed, none uploaded. Counted
	// by a reverse proxy in front of the registry (no upload session is ever started).
	var uploads atomic.Int64
	up, _ := url.Parse("http://" + reg.Host)
	rp := httputil.NewSingleHostReverseProxy(up)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost || req.Method == http.MethodPatch || strings.Contains(req.URL.Path, "/blobs/uploads/") {
			uploads.Add(1)
		}
		rp.ServeHTTP(w, req)
	}))
	defer proxy.Close()
	viaProxy := *reg
	viaProxy.Host = strings.TrimPrefix(proxy.URL, "http://")
	r = cli(t, []string{"DOCKER_CONFIG=" + emulators.DockerConfig(t, &viaProxy)}, "manifest", "push", m, "--from", l.Root, "oci://"+viaProxy.Host+strings.TrimPrefix(target0, "oci://"+reg.Host))
	if r.code != 0 {
		t.Fatalf("second push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := uploads.Load(); n != 0 {
		t.Fatalf("second push started %d uploads", n)
	}

	// Registry to registry: another repository of the same registry (blobs mounted), and a
	// second registry (blobs streamed through); each ends with the same manifest, by digest.
	reg2 := emulators.SharedRegistry2(t)
	cfgDir = emulators.DockerConfig(t, reg, reg2)
	env = []string{"DOCKER_CONFIG=" + cfgDir}
	for _, dst := range []string{ref + "-copy", reg2.Host + "/lifeboat/copy"} {
		r := cli(t, env, "replicate", "--manifest", m, "--from", target, "--to", "oci://"+dst+":v1")
		if r.code != 0 {
			t.Fatalf("replicate to %s: exit %d\n%s%s", dst, r.code, r.stdout, r.stderr)
		}
		if got := orasRun("manifest", "fetch", dst+":v1"); !bytes.Equal(got, raw) {
			t.Fatalf("%s: the manifest differs after replicate", dst)
		}
		if r := cli(t, env, "verify", "--deep", "--manifest", m, "oci://"+dst+":v1"); r.code != 0 {
			t.Fatalf("verify %s: exit %d\n%s%s", dst, r.code, r.stdout, r.stderr)
		}
	}

	to := filepath.Join(t.TempDir(), "restored")
	r = cli(t, env, "restore", "--manifest", m, "--from", target, "--to", to)
	if r.code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range man.Files {
		want, _ := os.ReadFile(l.Path(f.Path))
		got, err := os.ReadFile(filepath.Join(to, filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("restored %s differs: %v", f.Path, err)
		}
	}

	// Corrupt the largest model file's blob on the registry's disk, same size.
	var victim manifest.File
	for _, f := range man.Files {
		if f.Part == manifest.PartModel && f.Size > victim.Size {
			victim = f
		}
	}
	p := reg.BlobPath(victim.Digest.String())
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	orig := append([]byte(nil), data...)
	t.Cleanup(func() { os.WriteFile(p, orig, 0o644) })
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r = cli(t, env, "verify", "--manifest", m, target, "--deep")
	if r.code != 1 || !strings.Contains(r.stdout, victim.Path) || !strings.Contains(r.stdout, "CORRUPT") {
		t.Fatalf("deep verify of a corrupted blob: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, env, "verify", "--manifest", m, target)
	if r.code != 0 || !strings.Contains(r.stdout, "content-addressed") {
		t.Fatalf("quick verify of a registry replica: exit %d, no note\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A registry keeps the content it has for a digest: replicate --deep cannot replace the
	// corrupted blob and must say so rather than report a repair.
	r = cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", target, "--deep")
	if r.code != 1 || !strings.Contains(r.stderr, victim.Path) || !strings.Contains(r.stderr, "deleted there") {
		t.Fatalf("replicate --deep onto a corrupted registry blob: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// oras, an independent client, both ways: `oras pull` of what Lifeboat pushed writes the model
// repository's files under their own names (the layers' org.opencontainers.image.title), with
// engine/ and deploy/ beside them, byte for byte and nothing else; and what `oras push` pushes
// from such a directory with ModelPack media types (layers named only by their titles) is a
// registry replica Lifeboat verifies, deep, and restores against the DR manifest.
func TestRegistryOrasInterop(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	oras, err := emulators.OrasPath()
	if err != nil {
		emulators.Unavailable(t, err)
	}
	cfgDir := emulators.DockerConfig(t, reg)
	env := []string{"DOCKER_CONFIG=" + cfgDir}
	l, m := fixture(t, sample.Options{})
	man, err := manifest.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	base := reg.Host + "/lifeboat/interop-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	orasIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(oras, append(args, "--plain-http", "--registry-config", filepath.Join(cfgDir, "config.json"))...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("oras %v: %v\n%s", args, err, out)
		}
	}

	if r := cli(t, env, "manifest", "push", m, "--from", l.Root, "oci://"+base+":v1"); r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pulled := t.TempDir()
	orasIn(pulled, "pull", base+":v1", "--output", pulled)
	want := map[string]string{} // title → bundle path
	for _, f := range man.Files {
		want[manifest.LayerTitle(f.Path)] = f.Path
	}
	got := 0
	err = filepath.WalkDir(pulled, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(pulled, p)
		bp, ok := want[filepath.ToSlash(rel)]
		if !ok {
			t.Errorf("oras pull wrote %s, which is no file of the bundle", rel)
			return nil
		}
		a, _ := os.ReadFile(p)
		b, _ := os.ReadFile(l.Path(bp))
		if !bytes.Equal(a, b) {
			t.Errorf("oras pull: %s differs from %s", rel, bp)
		}
		got++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(man.Files) || got == 0 {
		t.Fatalf("oras pull wrote %d of the %d files", got, len(man.Files))
	}
	if _, err := os.Stat(filepath.Join(pulled, "config.json")); err != nil {
		t.Fatalf("the model's config.json is not at the top of what oras pulled: %v", err)
	}

	// The other way: oras pushes that directory, each file with its ModelPack media type.
	args := []string{"push", base + "-oras:v1", "--artifact-type", manifest.ArtifactType}
	for _, f := range man.Files {
		args = append(args, manifest.LayerTitle(f.Path)+":"+f.MediaType)
	}
	orasIn(pulled, args...)
	target := "oci://" + base + "-oras:v1"
	for _, deep := range [][]string{nil, {"--deep"}} {
		if r := cli(t, env, append([]string{"verify", "--manifest", m, target}, deep...)...); r.code != 0 {
			t.Fatalf("verify %v of what oras pushed: exit %d\n%s%s", deep, r.code, r.stdout, r.stderr)
		}
	}
	to := filepath.Join(t.TempDir(), "restored")
	if r := cli(t, env, "restore", "--manifest", m, "--from", target, "--to", to); r.code != 0 {
		t.Fatalf("restore of what oras pushed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range man.Files {
		a, err := os.ReadFile(filepath.Join(to, filepath.FromSlash(f.Path)))
		b, _ := os.ReadFile(l.Path(f.Path))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("restored %s differs: %v", f.Path, err)
		}
	}
}

// uploadCounter is a reverse proxy in front of a registry that counts the body bytes of blob
// uploads (POST, PATCH and PUT under /blobs/uploads/) passing through it.
type uploadCounter struct {
	bytes atomic.Int64
	srv   *httptest.Server
}

func newUploadCounter(t *testing.T, reg *emulators.Registry) (*uploadCounter, *emulators.Registry) {
	t.Helper()
	up, _ := url.Parse("http://" + reg.Host)
	rp := httputil.NewSingleHostReverseProxy(up)
	c := &uploadCounter{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/blobs/uploads/") && req.Body != nil {
			req.Body = countingBody{req.Body, &c.bytes}
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(c.srv.Close)
	via := *reg
	via.Host = strings.TrimPrefix(c.srv.URL, "http://")
	return c, &via
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// Registry to registry through the binary (SharedRegistry → SharedRegistry2, no mount possible
// across registries): only the blobs the target lacks move — the weights put there beforehand by
// oras are not uploaded again, counted in bytes at a proxy in front of the target — the target
// ends with the same manifest, deep-verified, and a second replicate uploads nothing. The DR
// manifest itself is read from the source registry (--manifest oci://…).
func TestRegistryCrossRegistryReplicate(t *testing.T) {
	reg, reg2 := emulators.SharedRegistry(t), emulators.SharedRegistry2(t)
	oras, err := emulators.OrasPath()
	if err != nil {
		emulators.Unavailable(t, err)
	}
	l, m := fixture(t, sample.Options{})
	man, err := manifest.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	counter, via2 := newUploadCounter(t, reg2)
	cfgDir := emulators.DockerConfig(t, reg, reg2, via2)
	env := []string{"DOCKER_CONFIG=" + cfgDir}
	name := "lifeboat/x-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	src := "oci://" + reg.Host + "/" + name + ":v1"
	if r := cli(t, env, "manifest", "push", m, "--from", l.Root, src); r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The target already has the weights (pushed there by oras, an independent client).
	var seeded, total int64
	for _, f := range man.Files {
		total += f.Size
		if f.Role != manifest.RoleWeights {
			continue
		}
		cmd := exec.Command(oras, "blob", "push", "--plain-http", "--registry-config", filepath.Join(cfgDir, "config.json"),
			reg2.Host+"/"+name+"@"+f.Digest.String(), l.Path(f.Path))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("oras blob push: %v\n%s", err, out)
		}
		seeded += f.Size
	}
	if seeded == 0 {
		t.Fatal("the sample has no weights")
	}
	dst := "oci://" + via2.Host + "/" + name + ":v1"
	r := cli(t, env, "replicate", "--manifest", src, "--from", src, "--to", dst)
	if r.code != 0 {
		t.Fatalf("replicate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := total - seeded + man.OCI.Config.Size
	if got := counter.bytes.Load(); got != want {
		t.Fatalf("%d bytes uploaded to the second registry, want %d (all but the %d bytes of weights it had, plus the config)", got, want, seeded)
	}
	if r := cli(t, env, "verify", "--deep", "--manifest", src, dst); r.code != 0 {
		t.Fatalf("verify of the copy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	before := counter.bytes.Load()
	if r := cli(t, env, "replicate", "--manifest", m, "--from", src, "--to", dst); r.code != 0 {
		t.Fatalf("second replicate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := counter.bytes.Load() - before; n != 0 {
		t.Fatalf("a second replicate uploaded %d bytes", n)
	}
}

// --manifest oci://REGISTRY/REPO:TAG (or @sha256:…) reads the DR manifest from the registry
// wherever a manifest file is accepted: show, verify, restore; a reference with no manifest
// is an error that names it, not a crash or an empty manifest.
func TestRegistryManifestByReference(t *testing.T) {
	reg := emulators.SharedRegistry(t)
	env := []string{"DOCKER_CONFIG=" + emulators.DockerConfig(t, reg)}
	l, m := fixture(t, sample.Options{})
	raw, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	ref := "oci://" + reg.Host + "/lifeboat/ref-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if r := cli(t, env, "manifest", "push", m, "--from", l.Root, ref+":v1"); r.code != 0 {
		t.Fatalf("push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	byDigest := ref + "@" + digest.FromBytes(raw).String()
	for _, mref := range []string{ref + ":v1", byDigest} {
		if r := cli(t, env, "manifest", "show", mref, "--files", "-o", "json"); r.code != 0 || !strings.Contains(r.stdout, "model/config.json") {
			t.Fatalf("manifest show %s: exit %d\n%s%s", mref, r.code, r.stdout, r.stderr)
		}
		if r := cli(t, env, "verify", "--manifest", mref, ref+":v1"); r.code != 0 {
			t.Fatalf("verify --manifest %s: exit %d\n%s%s", mref, r.code, r.stdout, r.stderr)
		}
	}
	to := filepath.Join(t.TempDir(), "restored")
	if r := cli(t, env, "restore", "--manifest", ref+":v1", "--from", ref+":v1", "--to", to); r.code != 0 {
		t.Fatalf("restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(to, "model", "config.json")); err != nil {
		t.Fatal(err)
	}
	r := cli(t, env, "verify", "--manifest", ref+":nope", ref+":v1")
	if r.code == 0 || !strings.Contains(r.stderr, ":nope") || strings.Contains(r.stderr, "panic") {
		t.Fatalf("a missing manifest reference: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
