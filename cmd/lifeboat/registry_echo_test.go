//go:build integration

package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// echoingRegistry is a registry on loopback that asks for Basic auth and then refuses what it
// got, echoing the credential back in its error body in every form a careless registry or proxy
// does: the header as sent, the bare base64, the decoded user:password, the password alone, and
// user:password@host.
func echoingRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		h := r.Header.Get("Authorization")
		if h == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="echo"`)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		user, pass, _ := r.BasicAuth()
		b64 := strings.TrimPrefix(h, "Basic ")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":"denied (%s) token %s for %s:%s","detail":"password %s rejected; retry as %s:%s@%s"}]}`,
			h, b64, user, pass, pass, user, pass, r.Host)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// A registry that echoes the credential Lifeboat sent (its Basic Authorization, from the Docker
// configuration) in its error body never gets it printed: not the header, not the bare base64,
// not user:password, not the password, in text, JSON, YAML or -v, by any command that reads a
// registry. The error still says what happened (permission denied).
func TestRegistryEchoedCredentialNeverPrinted(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	host := echoingRegistry(t)
	const user, pass = "robot", "Reg1stry-Passw0rd-4711"
	cfg := emulators.DockerConfig(t, &emulators.Registry{Host: host, Username: user, Password: pass})
	env := []string{"DOCKER_CONFIG=" + cfg}
	pair := user + ":" + pass
	secrets := map[string]string{
		"password":              pass,
		"user:password":         pair,
		"base64(user:password)": base64.StdEncoding.EncodeToString([]byte(pair)),
		"base64 unpadded":       base64.RawStdEncoding.EncodeToString([]byte(pair)),
	}
	ref := "oci://" + host + "/acme/llama:v1"
	runs := [][]string{
		{"verify", "--manifest", m, ref, "--timeout", "5s"},
		{"restore", "--manifest", m, "--from", ref, "--to", filepath.Join(t.TempDir(), "r")},
		{"manifest", "lint", m, "--bundle", ref},
		{"manifest", "push", m, "--from", l.Root, ref},
	}
	seen := false
	for _, a := range runs {
		for _, o := range [][]string{{"-o", "text"}, {"-o", "json"}, {"-o", "yaml"}, {"-v"}} {
			args := append(append([]string{}, a...), o...)
			r := cli(t, env, args...)
			if r.code == 0 {
				t.Errorf("%v: exit 0 against a registry that refuses", args)
			}
			out := r.stdout + r.stderr
			for what, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("%v: the %s reached the output:\n%s%s", args, what, r.stdout, r.stderr)
				}
			}
			if strings.Contains(out, "permission denied") && strings.Contains(out, "REDACTED") {
				seen = true
			}
		}
	}
	if !seen {
		t.Error("no run said permission denied with the echoed credential redacted: the registry's refusal was never shown")
	}
}
