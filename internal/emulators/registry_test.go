package emulators

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The registry refuses anonymous clients (auth is really on), accepts its user, stores a pushed
// blob where BlobPath says, and the two shared registries are distinct servers.
func TestRegistryAuthAndStorage(t *testing.T) {
	t.Parallel()
	r := SharedRegistry(t)
	do := func(method, url string, body []byte, auth bool) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			req.Header.Set("Authorization", r.BasicAuth())
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	base := "http://" + r.Host
	if resp := do("GET", base+"/v2/", nil, false); resp.StatusCode != http.StatusUnauthorized ||
		!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("anonymous /v2/: %d %q, want 401 with a Basic challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := do("GET", base+"/v2/", nil, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("authenticated /v2/: %d", resp.StatusCode)
	}

	content := []byte("a blob of the lifeboat emulator test\n")
	sum := sha256.Sum256(content)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	resp := do("POST", base+"/v2/emu/test/blobs/uploads/", nil, true)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start upload: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = base + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	if resp := do("PUT", loc+sep+"digest="+digest, content, true); resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("finish upload: %d %s", resp.StatusCode, b)
	}
	got, err := os.ReadFile(r.BlobPath(digest))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("blob on disk: %q, %v", got, err)
	}
	if resp := do("HEAD", base+"/v2/emu/test/blobs/"+digest, nil, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD blob: %d", resp.StatusCode)
	}

	r2 := SharedRegistry2(t)
	if r2.Host == r.Host || r2.Dir == r.Dir {
		t.Fatalf("second registry is the first: %s %s", r2.Host, r2.Dir)
	}
	if r2.Password == r.Password {
		t.Fatal("both registries share a password")
	}
}

// The independent client works against the fixture as a user's would: oras, logged in only
// through the config.json DockerConfig writes, pushes a file and pulls the same bytes back; without
// that config it is refused.
func TestRegistryWithOras(t *testing.T) {
	t.Parallel()
	oras, err := OrasPath()
	if err != nil {
		Unavailable(t, err)
	}
	r := SharedRegistry(t)
	cfg := filepath.Join(DockerConfig(t, r), "config.json")
	src := t.TempDir()
	content := []byte("weights, as far as oras knows\n")
	if err := os.WriteFile(filepath.Join(src, "w.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := r.Host + "/emu/oras:v1"
	run := func(dir string, args ...string) ([]byte, error) {
		cmd := exec.Command(oras, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir()) // no login of the machine's user leaks in
		return cmd.CombinedOutput()
	}
	if out, err := run(src, "push", "--plain-http", "--registry-config", cfg, ref, "w.bin:application/vnd.cncf.model.weight.v1.raw"); err != nil {
		t.Fatalf("oras push: %v\n%s", err, out)
	}
	dst := t.TempDir()
	if out, err := run(dst, "pull", "--plain-http", "--registry-config", cfg, ref); err != nil {
		t.Fatalf("oras pull: %v\n%s", err, out)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "w.bin")); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("pulled %q, %v", got, err)
	}
	out, err := run(t.TempDir(), "pull", "--plain-http", ref)
	if err == nil || bytes.Contains(out, []byte(r.Password)) {
		t.Fatalf("anonymous pull: err=%v\n%s", err, out)
	}
}
