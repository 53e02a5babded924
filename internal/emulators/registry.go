package emulators

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry is a running distribution registry (the CNCF reference implementation, what Harbor and
// GitLab run inside) with filesystem storage and htpasswd basic auth on. It speaks plain HTTP on
// loopback: OCI clients treat localhost/127.0.0.1 registries as plain-HTTP by convention, and the
// tests pass the plain-HTTP option explicitly anyway. It serves no OCI 1.1 referrers endpoint, so
// signatures attached to a manifest go through the tag-schema fallback (sha256-<digest>).
type Registry struct {
	Host     string // 127.0.0.1:PORT, the REGISTRY part of oci://REGISTRY/REPO
	Username string
	Password string // random per start
	// Dir is the storage root: blobs live under Dir/docker/registry/v2/blobs/sha256/XX/HEX/data
	// (see BlobPath), which is what a test edits to corrupt a blob "on the registry's disk".
	Dir  string
	proc *Process
}

// RegistryPath is where `make emulators` installs the registry
// (github.com/distribution/distribution/v3/cmd/registry).
func RegistryPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "registry"), nil
}

// OrasPath is where `make emulators` installs the oras CLI (oras.land/oras/cmd/oras), the
// independent client the registry tests pull and push with; ErrNotInstalled when it is missing.
func OrasPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "oras")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("oras: %s: %w", p, ErrNotInstalled)
	}
	return p, nil
}

// StartRegistry starts a registry on a free loopback port with its storage and htpasswd file in
// dir (created if needed).
func StartRegistry(dir string) (*Registry, error) {
	bin, err := RegistryPath()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("registry: %s: %w", bin, ErrNotInstalled)
	}
	storage := filepath.Join(dir, "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, err
	}
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	r := &Registry{Username: "lifeboattest", Password: hex.EncodeToString(secret[:]), Dir: storage}
	// bcrypt is the only hash distribution's htpasswd accepts; cost 4 (the minimum) keeps every
	// authenticated request cheap on a busy test machine — the hash is not what is under test.
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(r.Username+":"+string(hash)+"\n"), 0o600); err != nil {
		return nil, err
	}
	return startWithRetry(context.Background(), func() (*Registry, error) {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		cfg := filepath.Join(dir, "config.yml")
		if err := os.WriteFile(cfg, []byte(registryConfig(addr, storage, htpasswd, hex.EncodeToString(secret[:8]))), 0o600); err != nil {
			return nil, err
		}
		// OTEL_TRACES_EXPORTER=none: v3 sets up OpenTelemetry tracing and would otherwise try to
		// export spans to localhost:4318.
		env := []string{"OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true"}
		p, err := startProcess("registry", bin, []string{"serve", cfg}, env, addr, 60*time.Second)
		if err != nil {
			return nil, err
		}
		c := *r
		c.Host, c.proc = addr, p
		return &c, nil
	})
}

// registryConfig is the registry's configuration: filesystem storage with deletes on (a repair
// may replace a blob), no upload purging during a test, htpasswd auth, quiet logs.
func registryConfig(addr, storage, htpasswd, secret string) string {
	return strings.Join([]string{
		"version: 0.1",
		"log:",
		"  level: warn",
		"  accesslog:",
		"    disabled: true",
		"storage:",
		"  filesystem:",
		"    rootdirectory: " + strconv.Quote(storage),
		"  delete:",
		"    enabled: true",
		"  maintenance:",
		"    uploadpurging:",
		"      enabled: false",
		"http:",
		"  addr: " + addr,
		"  secret: " + secret,
		"auth:",
		"  htpasswd:",
		"    realm: lifeboat-test",
		"    path: " + strconv.Quote(htpasswd),
		"",
	}, "\n")
}

// Stop stops the registry.
func (r *Registry) Stop() { r.proc.Stop() }

// Output returns the tail of the registry's log.
func (r *Registry) Output() string { return r.proc.Output() }

// Location returns oci://HOST/REPO, a repository on this registry.
func (r *Registry) Location(repo string) string { return "oci://" + r.Host + "/" + repo }

// BlobPath is the file that holds the blob with this digest ("sha256:HEX") on the registry's disk.
func (r *Registry) BlobPath(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	if len(hex) < 2 {
		hex = "00" // never a real blob; keeps the path well-formed
	}
	return filepath.Join(r.Dir, "docker", "registry", "v2", "blobs", "sha256", hex[:2], hex, "data")
}

// BasicAuth is the value of an Authorization header for this registry's user.
func (r *Registry) BasicAuth() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(r.Username+":"+r.Password))
}

// DockerConfig writes a Docker config.json holding this registry's credentials (and those of
// others, if given) into a fresh directory and returns that directory: set DOCKER_CONFIG to it,
// or pass --registry-config DIR/config.json to oras, the way a user's `docker login` would have
// left things.
func DockerConfig(t testing.TB, regs ...*Registry) string {
	t.Helper()
	auths := map[string]map[string]string{}
	for _, r := range regs {
		auths[r.Host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + r.Password))}
	}
	data, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// SharedRegistry returns the test binary's registry, starting it on first use.
func SharedRegistry(t testing.TB) *Registry {
	t.Helper()
	return sharedReg.get(t, "registry", StartRegistry)
}

// SharedRegistry2 returns a second registry of the test binary, distinct from SharedRegistry's,
// for replication across registries (where no cross-repository mount is possible).
func SharedRegistry2(t testing.TB) *Registry {
	t.Helper()
	return sharedReg2.get(t, "registry2", StartRegistry)
}

// NewRegistry starts a private registry for one test; it stops on t.Cleanup.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r, err := StartRegistry(t.TempDir())
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(r.Stop)
	return r
}
