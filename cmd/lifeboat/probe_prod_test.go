//go:build integration

package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// The probe against production vLLM shapes (issue 27 item 4), through the built binary.

const testAPIKey = "sk-lifeboat-test-9f8e7d6c5b4a"

type probeProdJSON struct {
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
	Auth     string `json:"auth"`
	Requests struct {
		Sent        int      `json:"sent"`
		Failed      int      `json:"failed"`
		FailureRate *float64 `json:"failure_rate"`
	} `json:"requests"`
}

func decodeProbe(t *testing.T, r result) probeProdJSON {
	t.Helper()
	var pj probeProdJSON
	if err := json.Unmarshal([]byte(r.stdout), &pj); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return pj
}

// TestProbeBinaryAuth: a vLLM started with --api-key. The token named by --api-key-env or
// --api-key-file makes it WARM; none, or another, is AUTH_FAILED (not MODEL_MISSING); and the
// token appears in no output, text or JSON, verbose or not.
func TestProbeBinaryAuth(t *testing.T) {
	url := simURL(t, enginesim.ServerOptions{APIKey: testAPIKey})
	dir := t.TempDir()
	good, wrong := filepath.Join(dir, "good"), filepath.Join(dir, "wrong")
	if err := os.WriteFile(good, []byte(testAPIKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte("sk-not-the-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"LB_PROBE_KEY=" + testAPIKey, "LB_WRONG_KEY=sk-not-the-key"}
	base := []string{"probe", url, "--served-model-name", sample.DefaultServedName, "--ttft-budget", "5s", "--timeout", "60s"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"env", []string{"--api-key-env", "LB_PROBE_KEY"}, exitOK, "WARM"},
		{"file", []string{"--api-key-file", good}, exitOK, "WARM"},
		{"none", nil, exitProblem, "AUTH_FAILED"},
		{"wrong env", []string{"--api-key-env", "LB_WRONG_KEY"}, exitProblem, "AUTH_FAILED"},
		{"wrong file", []string{"--api-key-file", wrong}, exitProblem, "AUTH_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(append([]string{}, base...), tc.args...), "-o", "json")
			r := cli(t, env, args...)
			pj := decodeProbe(t, r)
			if r.code != tc.code || pj.Verdict != tc.want {
				t.Fatalf("exit %d verdict %s (%s), want %d %s\n%s", r.code, pj.Verdict, pj.Reason, tc.code, tc.want, r.stderr)
			}
			if tc.want == "AUTH_FAILED" && !strings.Contains(pj.Reason, "401") {
				t.Errorf("reason does not say 401: %s", pj.Reason)
			}
			text := cli(t, env, append(append([]string{"-v"}, base...), tc.args...)...)
			for _, out := range []string{r.stdout, r.stderr, text.stdout, text.stderr} {
				if strings.Contains(out, testAPIKey) {
					t.Fatalf("the token is in the output:\n%s", out)
				}
			}
			if !strings.HasPrefix(text.stdout, tc.want+" ") {
				t.Errorf("text: %s", text.stdout)
			}
		})
	}
	// An unset variable or an unreadable file is bad input, named, before any request.
	r := cli(t, nil, append(append([]string{}, base...), "--api-key-env", "LB_UNSET_VARIABLE_27")...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "LB_UNSET_VARIABLE_27 is not set") {
		t.Errorf("unset variable: exit %d\n%s", r.code, r.stderr)
	}
	r = cli(t, nil, append(append([]string{}, base...), "--api-key-file", filepath.Join(dir, "absent"))...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "absent") {
		t.Errorf("absent file: exit %d\n%s", r.code, r.stderr)
	}
}

// TestProbeBinaryTLSAndRefused: an https replica whose certificate this host does not trust is
// TLS_FAILED (not ENGINE_DEAD), plain http to it is TLS_FAILED too; a port nothing listens on
// is UNREACHABLE, exit 4, and never "store unreachable".
func TestProbeBinaryTLSAndRefused(t *testing.T) {
	l, err := sample.Generate(t.Context(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(t.Context(), l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(enginesim.NewServer(m, enginesim.ServerOptions{})) // a self-signed certificate
	t.Cleanup(srv.Close)
	args := []string{"probe", srv.URL, "--served-model-name", sample.DefaultServedName, "--timeout", "30s", "-o", "json"}
	r := cli(t, nil, args...)
	pj := decodeProbe(t, r)
	if r.code != exitProblem || pj.Verdict != "TLS_FAILED" || !strings.Contains(pj.Reason, "not trusted") {
		t.Errorf("untrusted certificate: exit %d %s (%s)", r.code, pj.Verdict, pj.Reason)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r = cli(t, nil, "probe", "http://"+addr, "--served-model-name", "x", "--timeout", "1s", "-o", "json")
	pj = decodeProbe(t, r)
	if r.code != exitUnreachable || pj.Verdict != "UNREACHABLE" || strings.Contains(r.stderr, "store") {
		t.Errorf("closed port: exit %d %s (%s)\n%s", r.code, pj.Verdict, pj.Reason, r.stderr)
	}
}

// TestProbeBinaryFailureRate: the JSON counts the requests and the failures of a replica that
// fails half of them (seeded: this seed fails some of the first 8), and it is not WARM.
func TestProbeBinaryFailureRate(t *testing.T) {
	url := simURL(t, enginesim.ServerOptions{FailRate: 0.5, Seed: 7})
	r := cli(t, nil, "probe", url, "--served-model-name", sample.DefaultServedName, "--timeout", "60s", "-o", "json")
	pj := decodeProbe(t, r)
	if r.code != exitProblem || pj.Verdict == "WARM" || pj.Requests.Sent != 8 || pj.Requests.Failed == 0 || pj.Requests.FailureRate == nil ||
		!strings.Contains(pj.Reason, "of 8 requests failed") {
		t.Fatalf("exit %d %+v\n%s", r.code, pj, r.stdout)
	}
	r = cli(t, nil, "probe", url, "--served-model-name", sample.DefaultServedName, "--requests", "0")
	if r.code != exitUsage {
		t.Errorf("--requests 0: exit %d", r.code)
	}
}

// TestBootBinaryAuth: boot of a candidate started with vLLM's --api-key (the launcher's env gives
// the engine its VLLM_API_KEY): the fleet's probe section names the variable the prober reads in
// Lifeboat's own environment — WARM; without it, AUTH_FAILED (not MODEL_MISSING). The token is in
// no output of either.
func TestBootBinaryAuth(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	exe := testbedBinary(t)
	dir := t.TempDir()
	write := func(name, probe string) string {
		fleet := "model:\n  name: llama-demo\n  manifest: " + m + "\n" + probe + `regions:
  local:
    replica: ` + l.Root + `
    launcher:
      kind: exec
      env: {VLLM_API_KEY: ` + testAPIKey + `}
      command: ` + exe + ` engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}} --sim-itl 1ms
tenants:
  eu-only: [local]
`
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(fleet), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := []string{"LB_BOOT_KEY=" + testAPIKey}
	for _, tc := range []struct {
		name, probe, want string
		code              int
	}{
		{"named", "probe: {api_key_env: LB_BOOT_KEY}\n", "WARM", exitOK},
		{"not named", "", "AUTH_FAILED", exitProblem},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fleet := write(tc.name+".yaml", tc.probe)
			r := cli(t, env, "boot", "--fleet", fleet, "--region", "local", "--workdir", t.TempDir(), "--timeout", "90s", "--ttft-budget", "10s", "-o", "json")
			var b struct {
				Verdict string `json:"verdict"`
				Reason  string `json:"reason"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &b); err != nil || r.code != tc.code || b.Verdict != tc.want {
				t.Fatalf("exit %d verdict %s (%s), want %d %s: %v\n%s", r.code, b.Verdict, b.Reason, tc.code, tc.want, err, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, testAPIKey) {
				t.Fatalf("the token is in boot's output:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}

func testbedBinary(t *testing.T) string { return testbed.LifeboatBinary(t) }
