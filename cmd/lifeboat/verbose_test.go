//go:build integration

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// -v logs every request to a store (method, host, key, status, attempt) and says each retry as
// the SDK schedules it; --quiet prints nothing on stderr but errors.
func TestVerboseLogsRequestsAndRetries(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	gw := emulators.NewVersityGW(t)
	if err := gw.Bucket(context.Background(), "verbose"); err != nil {
		t.Fatal(err)
	}
	env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	u := gw.URL("verbose", "llama")
	if r := cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", u, "--quiet"); r.code != 0 || r.stderr != "" {
		t.Fatalf("replicate --quiet: exit %d, stderr %q", r.code, r.stderr)
	}
	r := cli(t, env, "verify", "--manifest", m, u, "-v")
	host := strings.TrimPrefix(gw.Endpoint, "http://")
	req := regexp.MustCompile(`msg=request method=GET host=` + regexp.QuoteMeta(host) + ` key=/verbose/? attempt=1 max_attempts=3 ms=\d+ status=200`)
	if r.code != 0 || !req.MatchString(r.stderr) {
		t.Fatalf("verify -v: exit %d; no request lines with method, host, key, attempt and status:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, gw.SecretKey) || strings.Contains(r.stderr, "Authorization") {
		t.Fatal("a credential reached the log")
	}

	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(busy.Close)
	r = cli(t, env, "verify", "--manifest", m, "s3://verbose/llama?region=us-east-1&endpoint="+busy.URL, "-v")
	for _, want := range []string{"retry 2/3 in ", "retry 3/3 in ", "status=503 attempt=3"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("verify -v against a store answering 503: exit %d, no %q in\n%s", r.code, want, r.stderr)
		}
	}
}
