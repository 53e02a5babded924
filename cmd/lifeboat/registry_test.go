package main

import (
	"bytes"
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
