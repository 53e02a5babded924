package emulators

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
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
