//go:build integration

package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"lifeboat/internal/enginesim"
	"lifeboat/internal/sample"
)

// probeRun runs the CLI's probe command.
func probeRun(t *testing.T, args ...string) result {
	t.Helper()
	return lifeboat(t, args...)
}

// simURL serves the sample repository with the in-process engine simulator.
func simURL(t *testing.T, so enginesim.ServerOptions) string {
	t.Helper()
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := enginesim.Load(context.Background(), l.ModelDir, l.EngineFile, enginesim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = enginesim.Serve(ctx, ln, enginesim.NewServer(m, so)); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

type probeJSON struct {
	Verdict string              `json:"verdict"`
	Reason  string              `json:"reason"`
	Timings map[string]*float64 `json:"timings"`
	Checks  []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

func TestProbeCmd(t *testing.T) {
	warm := simURL(t, enginesim.ServerOptions{})
	r := probeRun(t, "probe", warm+"/v1", "--served-model-name", sample.DefaultServedName, "--lora", sample.LoRAName, "-o", "json")
	var pj probeJSON
	if err := json.Unmarshal([]byte(r.stdout), &pj); err != nil || r.code != exitOK || pj.Verdict != "WARM" {
		t.Fatalf("exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	for _, k := range []string{"listen_s", "healthy_s", "ttft_s", "tokens_per_s", "warm_s"} {
		if v, ok := pj.Timings[k]; !ok || v == nil {
			t.Errorf("timings.%s missing: %v", k, pj.Timings)
		}
	}
	if len(pj.Checks) < 8 {
		t.Errorf("checks: %+v", pj.Checks)
	}

	r = probeRun(t, "probe", warm, "--served-model-name", sample.DefaultServedName)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "WARM  "+warm) || !strings.Contains(r.stdout, "ttft") {
		t.Errorf("text: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("text output:\n%s", r.stdout)

	sat := simURL(t, enginesim.ServerOptions{Saturate: true, SaturateWait: 1})
	r = probeRun(t, "probe", sat, "--served-model-name", sample.DefaultServedName, "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &pj); err != nil || r.code != exitProblem || pj.Verdict != "SATURATED" {
		t.Errorf("saturated: exit %d %v\n%s", r.code, err, r.stdout)
	}

	r = probeRun(t, "probe", warm, "--served-model-name", "nope")
	if r.code != exitProblem || !strings.HasPrefix(r.stdout, "MODEL_MISSING") {
		t.Errorf("missing model: exit %d\n%s", r.code, r.stdout)
	}
	// --model, the flag's old name, still works (hidden from --help: --model is a directory
	// everywhere else).
	r = probeRun(t, "probe", warm, "--model", sample.DefaultServedName)
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "WARM  ") {
		t.Errorf("--model alias: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = probeRun(t, "probe", warm, "--model", "nope", "--served-model-name", sample.DefaultServedName)
	if r.code != exitProblem || !strings.HasPrefix(r.stdout, "MODEL_MISSING") {
		t.Errorf("--model and --served-model-name: both names must be listed: exit %d\n%s", r.code, r.stdout)
	}
	h := probeRun(t, "probe", "--help")
	if !strings.Contains(h.stdout, "--served-model-name") || strings.Contains(h.stdout, "--model ") || !strings.Contains(h.stdout, "total time the probe may take") {
		t.Errorf("probe --help:\n%s", h.stdout)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String()
	ln.Close()
	r = probeRun(t, "probe", closed, "--served-model-name", "m", "--timeout", "300ms", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &pj); err != nil || r.code != exitUnreachable || pj.Verdict != "UNREACHABLE" { // nothing Lifeboat started: UNREACHABLE (issue 27)
		t.Errorf("never listens: exit %d %v\n%s", r.code, err, r.stdout)
	}
}

func TestProbeCmdUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"probe", "--served-model-name", "m"}, "exactly one replica URL"},
		{[]string{"probe", "localhost:8000", "--served-model-name", "m"}, "did you mean http://localhost:8000?"},
		{[]string{"probe", "http://h:1"}, "needs --served-model-name"},
		{[]string{"probe", "http://h:1", "--served-model-name", "m", "--max-kv-usage", "2"}, "--max-kv-usage"},
		{[]string{"probe", "http://h:1", "--served-model-name", "m", "--ttft-budget", "0s"}, "--ttft-budget"},
		{[]string{"probe", "http://h:1", "--served-model-name", "m", "-o", "junit"}, "-o junit"},
		{[]string{"probe", "http://h:1", "--served-model-name", "m", "--timeout", "soon"}, "invalid argument"},
	} {
		r := probeRun(t, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%v: exit %d, stderr %q, want 2 with %q", c.args, r.code, r.stderr, c.msg)
		}
	}
}
