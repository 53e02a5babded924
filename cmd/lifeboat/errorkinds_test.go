//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
	"lifeboat/providers"
)

// Every error kind of every provider, on the emulators, through the binary: the replica status
// and the exit code verify gives, and the hint it prints. Configuration (not found, denied,
// misconfigured) is exit 2 with a hint; only a store that kept failing is exit 4 and names the
// address; bytes that differ are exit 1.
func TestErrorKindsOfEveryProviderMapToStatusAndExitCode(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	ctx := context.Background()
	gw := emulators.NewVersityGW(t)
	az := emulators.NewAzurite(t)
	g := emulators.SharedFakeGCS(t)
	for _, err := range []error{gw.Bucket(ctx, "kinds"), az.Container(ctx, "kinds")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	g.Bucket("kinds")
	dead, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := fmt.Sprintf("127.0.0.1:%d", dead)
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(403)
		fmt.Fprint(w, `{"error":{"code":403,"message":"caller does not have storage.objects.list access"}}`)
	}))
	t.Cleanup(forbidden.Close)

	s3env := []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=" + gw.SecretKey, "AWS_EC2_METADATA_DISABLED=true"}
	azenv := []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString(az.Key)}
	noAWS := []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(t.TempDir(), "none")}

	// Seed a good replica on each store, then plant one wrong file of the same size in it.
	good := map[string]string{"file": filepath.Join(t.TempDir(), "replica"), "s3": gw.URL("kinds", "good"),
		"gs": "gs://kinds/good", "az": az.URL("kinds", "good")}
	cfg, _ := os.ReadFile(l.Path("model/config.json"))
	cfg[5] ^= 1
	for name, u := range good {
		env := append(append([]string{}, s3env...), azenv...)
		if r := cli(t, env, "replicate", "--manifest", m, "--from", l.Root, "--to", u); r.code != 0 {
			t.Fatalf("seed %s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
		}
		s, err := providers.Open(ctx, u, providers.Options{S3Credentials: credentials.NewStaticCredentialsProvider(gw.AccessKey, gw.SecretKey, ""),
			AzureConnectionString: az.ConnectionString(az.Key)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, "model/config.json", bytes.NewReader(cfg), providers.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}

	for _, c := range []struct {
		provider, kind, url string
		env                 []string
		status              string
		code                int
		hint                string
	}{
		{"file", "not_found", filepath.Join(t.TempDir(), "nope"), nil, "NOT_FOUND", 2, "check the path"},
		{"file", "content_mismatch", good["file"], nil, "FAILED", 1, ""},

		{"s3", "not_found", gw.URL("no-such-bucket", "x"), s3env, "NOT_FOUND", 2, "check the bucket name"},
		{"s3", "denied", gw.URL("kinds", "good"), []string{"AWS_ACCESS_KEY_ID=" + gw.AccessKey, "AWS_SECRET_ACCESS_KEY=wrong-secret-key"}, "DENIED", 2, "AWS_ACCESS_KEY_ID"},
		{"s3", "misconfigured", gw.URL("kinds", "good"), noAWS, "MISCONFIGURED", 2, "AWS_PROFILE"},
		{"s3", "unreachable", "s3://kinds/x?region=us-east-1&endpoint=http://" + deadAddr, s3env, "UNREACHABLE", 4, deadAddr},
		{"s3", "content_mismatch", good["s3"], s3env, "FAILED", 1, ""},

		{"gs", "not_found", "gs://no-such-bucket/x", nil, "NOT_FOUND", 2, "check the bucket name"},
		{"gs", "denied", "gs://kinds/good", []string{"STORAGE_EMULATOR_HOST=" + strings.TrimPrefix(forbidden.URL, "http://")}, "DENIED", 2, "GOOGLE_APPLICATION_CREDENTIALS"},
		{"gs", "misconfigured", "gs://kinds/good", []string{"STORAGE_EMULATOR_HOST=", "GOOGLE_APPLICATION_CREDENTIALS=" + filepath.Join(t.TempDir(), "none", "key.json")}, "", 2, "GOOGLE_APPLICATION_CREDENTIALS"},
		{"gs", "unreachable", "gs://kinds/good", []string{"STORAGE_EMULATOR_HOST=" + deadAddr}, "UNREACHABLE", 4, deadAddr},
		{"gs", "content_mismatch", good["gs"], nil, "FAILED", 1, ""},

		{"az", "not_found", az.URL("no-such-container", "x"), azenv, "NOT_FOUND", 2, "container name"},
		{"az", "denied", az.URL("kinds", "good"), []string{"AZURE_STORAGE_CONNECTION_STRING=" + az.ConnectionString("d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")}, "DENIED", 2, "AZURE_STORAGE_CONNECTION_STRING"},
		{"az", "misconfigured", az.URL("kinds", "good"), []string{"AZURE_STORAGE_CONNECTION_STRING=AccountName=devstoreaccount1;garbage"}, "", 2, "AZURE_STORAGE_CONNECTION_STRING"},
		{"az", "unreachable", az.URL("kinds", "good"), []string{"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + az.Key + ";BlobEndpoint=http://" + deadAddr + "/devstoreaccount1;"}, "UNREACHABLE", 4, deadAddr},
		{"az", "content_mismatch", good["az"], azenv, "FAILED", 1, ""},
	} {
		t.Run(c.provider+"/"+c.kind, func(t *testing.T) {
			args := []string{"verify", "--manifest", m, c.url, "--timeout", "5s", "-o", "json"}
			if c.provider == "file" {
				args = append(args, "--deep") // a directory keeps no checksums: only bytes prove a mismatch
			}
			r := cli(t, c.env, args...)
			var v struct {
				Replicas []struct {
					Status    string `json:"status"`
					ErrorKind string `json:"error_kind"`
					Error     string `json:"error"`
				} `json:"replicas"`
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s%s", err, r.stdout, r.stderr)
			}
			status, msg := "", v.Error
			if len(v.Replicas) == 1 {
				status = v.Replicas[0].Status
				msg += " " + v.Replicas[0].Error
			}
			if r.code != c.code || v.ExitCode != c.code || status != c.status || !strings.Contains(msg, c.hint) {
				t.Errorf("%s %s: exit %d (json %d), status %q, message %q; want exit %d, status %q, mentioning %q",
					c.provider, c.kind, r.code, v.ExitCode, status, msg, c.code, c.status, c.hint)
			}
		})
	}
}
