//go:build integration

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"lifeboat/internal/emulators"
	"lifeboat/internal/sample"
)

// hostileServer answers every request with the request's own headers and URL in its error body
// and message — what a misbehaving proxy or S3-compatible store may do — as a 403 S3 error, or a
// 500 with a raw multi-line body.
func hostileServer(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var hdr []string
		for k, v := range r.Header {
			hdr = append(hdr, k+": "+strings.Join(v, ","))
		}
		sort.Strings(hdr)
		echo := r.Method + " " + r.URL.String() + "\n" + strings.Join(hdr, "\n")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if status == 403 {
			fmt.Fprintf(w, "<Error><Code>SignatureDoesNotMatch</Code><Message>you sent\n%s\u0007</Message></Error>", echo)
			return
		}
		io.WriteString(w, "upstream exploded\r\n"+echo+"\n"+strings.Repeat("x", 5000))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Secrets planted in every channel — the environment, URLs (userinfo, query values, fragments,
// inside a decoded ?endpoint=), an Azure connection string with a SAS sig=, a hostile server that
// echoes the request headers (Authorization with the access key id, the session token), a
// launcher's env printed by the replica — never reach stdout, stderr or JSON of any command.
func TestNoSecretInAnyOutput(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	secrets := map[string]string{
		"access key id":   "AKIASECRETKEYID4711",
		"secret key":      "SecretKeyValue-9f8e7d6c5b4a",
		"session token":   "SessionTokenValue-0a1b2c3d4e5f",
		"azure key":       "QXp1cmVBY2NvdW50S2V5U2VjcmV0MTIzNDU2Nzg5MA==",
		"sas signature":   "SasSignatureValue0123456789abcdef",
		"url password":    "UrlPassw0rdValue",
		"url query":       "QueryTokenValue-77",
		"url fragment":    "FragmentValue-66",
		"endpoint passwd": "EndpointPassValue-55",
		"launcher token":  "hf_LauncherTokenValue-44",
	}
	env := []string{
		"AWS_ACCESS_KEY_ID=" + secrets["access key id"],
		"AWS_SECRET_ACCESS_KEY=" + secrets["secret key"],
		"AWS_SESSION_TOKEN=" + secrets["session token"],
		"AWS_EC2_METADATA_DISABLED=true",
		"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + secrets["azure key"] +
			";SharedAccessSignature=sv=2024-01-01&sig=" + secrets["sas signature"] + ";BlobEndpoint=" + hostileServer(t, 403) + "/devstoreaccount1;",
	}
	port, err := emulators.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	deny, boom := hostileServer(t, 403), hostileServer(t, 500)
	s3 := func(endpoint string) string { return "s3://bucket/llama?region=us-east-1&endpoint=" + endpoint }
	replicas := []string{
		s3(deny), s3(boom), s3(fmt.Sprintf("http://127.0.0.1:%d", port)),
		s3("http://user:" + secrets["endpoint passwd"] + "@127.0.0.1:1"),
		s3("http%3A%2F%2Fuser%3A" + secrets["endpoint passwd"] + "%40127.0.0.1%3A1"),
		"s3://user:" + secrets["url password"] + "@bucket/llama",
		"az://devstoreaccount1/models/llama?sig=" + secrets["url query"],
		"az://devstoreaccount1/models/llama",
		"gs://bucket/llama#" + secrets["url fragment"],
		// a registry: a robot account's password in the userinfo, a bearer token in the query
		"oci://robot:" + secrets["url password"] + "@127.0.0.1:1/acme/llama:v1",
		"oci://" + secrets["url password"] + "@127.0.0.1:1/acme/llama",
		"oci://127.0.0.1:1/acme/llama:v1?token=" + secrets["url query"],
		"oci://127.0.0.1:1/acme/llama:v1#" + secrets["url fragment"],
	}

	// A launcher whose replica prints its environment and exits: the log tail is shown.
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.yaml")
	os.WriteFile(fleet, []byte(fmt.Sprintf(`model: {name: llama-demo, manifest: %s}
regions:
  local:
    geo: eu
    replica: %s
    capacity: {replicas: 1, prefill_tokens_per_s: 4000}
    launcher:
      kind: exec
      command: /bin/sh -c "env; echo token is $HF_TOKEN; exit 3"
      env: {HF_TOKEN: %q}
tenants: {eu-only: [local]}
`, m, l.Root, secrets["launcher token"])), 0o644)

	var runs [][]string
	for _, u := range replicas {
		runs = append(runs,
			[]string{"verify", "--manifest", m, u, "--timeout", "5s"},
			[]string{"replicate", "--manifest", m, "--from", l.Root, "--to", u},
			[]string{"restore", "--manifest", m, "--from", u, "--to", filepath.Join(t.TempDir(), "r")},
			[]string{"manifest", "build", "--model", u, "--out", filepath.Join(t.TempDir(), "m.json")},
			[]string{"manifest", "lint", m, "--bundle", u},
		)
	}
	runs = append(runs,
		[]string{"boot", "--fleet", fleet, "--region", "local", "--workdir", t.TempDir(), "--timeout", "20s"},
		[]string{"probe", "http://user:" + secrets["url password"] + "@127.0.0.1:1/?token=" + secrets["url query"], "--served-model-name", "x", "--timeout", "200ms"},
	)
	for _, r := range runEachOutput(t, env, runs, "a hostile or missing store", secrets) {
		for _, line := range strings.Split(r.stderr, "\n") {
			if len(line) > 4000 {
				t.Errorf("%v: a %d-byte line: a server body was shown verbatim", r.args, len(line))
			}
		}
	}
}

// The same for failover, drill and check: secrets in the environment reach stores and a router
// that echo every request header, and secrets in a fleet's replica, state and router URLs are
// refused; neither reaches stdout, stderr, JSON or a drill's report files.
func TestNoSecretInFailoverDrillCheckOutput(t *testing.T) {
	_, m := fixture(t, sample.Options{})
	secrets := map[string]string{
		"access key id": "AKIAFLEETKEYID0815",
		"secret key":    "FleetSecretKeyValue-1a2b3c",
		"session token": "FleetSessionToken-4d5e6f",
		"url password":  "FleetUrlPassw0rd",
		"url query":     "FleetQueryToken-88",
		"router token":  "FleetRouterToken-99",
	}
	env := []string{
		"AWS_ACCESS_KEY_ID=" + secrets["access key id"], "AWS_SECRET_ACCESS_KEY=" + secrets["secret key"],
		"AWS_SESSION_TOKEN=" + secrets["session token"], "AWS_EC2_METADATA_DISABLED=true",
	}
	deny, boom := hostileServer(t, 403), hostileServer(t, 500)
	s3 := func(endpoint, prefix string) string {
		return "s3://bucket/" + prefix + "?region=us-east-1&endpoint=" + endpoint
	}
	const fleetYAML = `model: {name: llama-demo, manifest: %s}
regions:
  us-east-1: {replica: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-west-1: {replica: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
  eu-central-1: {replica: %q, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}
tenants: {eu-only: [eu-west-1, eu-central-1], global: [us-east-1, eu-west-1]}
router: {driver: http, url: %q, backends: {eu-only: eu, global: global}, timeout: 2s}
state: %q
sla: {rto: 30m}
`
	dir := t.TempDir()
	// hostile: valid, but every store and the router answer with the request's headers.
	hostile := filepath.Join(dir, "hostile.yaml")
	os.WriteFile(hostile, []byte(fmt.Sprintf(fleetYAML, m, s3(deny, "llama"), s3(boom, "llama"), s3(deny, "eu"), boom, s3(deny, "state"))), 0o644)
	// refused: credentials in the URLs, which the fleet parser must refuse without echoing them.
	refused := filepath.Join(dir, "refused.yaml")
	os.WriteFile(refused, []byte(fmt.Sprintf(fleetYAML, m, s3(deny, "llama"), s3(boom, "llama"),
		"s3://u:"+secrets["url password"]+"@bucket/llama?sig="+secrets["url query"],
		strings.Replace(boom, "http://", "http://lifeboat:"+secrets["router token"]+"@", 1),
		s3(deny, "state?token="+secrets["url query"]))), 0o644)

	var runs [][]string
	for _, fleet := range []string{hostile, refused} {
		drill := strings.TrimSuffix(fleet, ".yaml") + "-drill.yaml"
		os.WriteFile(drill, []byte("name: lose-eu\nfleet: "+filepath.Base(fleet)+"\nlose: eu-west-1\n"), 0o644)
		runs = append(runs,
			[]string{"check", "--fleet", fleet},
			[]string{"failover", "plan", "--fleet", fleet, "--evacuate", "eu-west-1"},
			[]string{"failover", "run", "--fleet", fleet, "--evacuate", "eu-west-1", "--yes"},
			[]string{"failover", "status", "--fleet", fleet},
			[]string{"failover", "resume", "--fleet", fleet},
			[]string{"failover", "abort", "--fleet", fleet, "--yes"},
			[]string{"failover", "unlock", "--fleet", fleet, "--id", "nope"},
			[]string{"drill", "run", drill, "--report", filepath.Join(dir, "report"), "--approve-all"},
			[]string{"drill", "history", "--fleet", fleet},
		)
	}
	runEachOutput(t, env, runs, "hostile stores and router", secrets)
	filepath.WalkDir(filepath.Join(dir, "report"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		for what, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("the %s reached the report %s", what, p)
			}
		}
		return nil
	})
}

// ranOutput is one run of runEachOutput: the arguments with the output option added.
type ranOutput struct {
	result
	args []string
}

// runEachOutput runs each command line with -o text, -o json and -v, and fails the test where
// one exits 0 (against what) or a secret reaches its stdout or stderr.
func runEachOutput(t *testing.T, env []string, runs [][]string, against string, secrets map[string]string) []ranOutput {
	t.Helper()
	var out []ranOutput
	for _, args := range runs {
		for _, o := range []string{"text", "json", "-v"} {
			a := append([]string{}, args...)
			if o == "-v" {
				a = append(a, "-v")
			} else {
				a = append(a, "-o", o)
			}
			r := cli(t, env, a...)
			if r.code == 0 {
				t.Errorf("%v: exit 0 against %s", a, against)
			}
			for what, s := range secrets {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("%v: the %s reached the output:\n%s%s", a, what, r.stdout, r.stderr)
				}
			}
			out = append(out, ranOutput{r, a})
		}
	}
	return out
}
