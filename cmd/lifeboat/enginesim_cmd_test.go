//go:build integration

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
)

// engineSim runs the engine-sim command in-process (it is registered on the root command by the
// lead; this calls it directly so the test does not depend on that).
func engineSim(ctx context.Context, args ...string) result {
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}
	cmd := a.engineSimCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(ctx)
	code := exitOK
	if err != nil {
		code = exitUsage
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintf(&errb, "lifeboat: %v\n", err)
	}
	return result{code, out.String(), errb.String()}
}

func TestEngineSimBrokenRepoExitsWithVLLMMessage(t *testing.T) {
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(l.Path("model/loras/" + sample.LoRAName))
	r := engineSim(context.Background(), l.ModelDir, "--config", l.EngineFile, "--port", "0")
	if r.code != exitProblem || !strings.Contains(r.stderr, "Loading lora sql-lora failed") {
		t.Errorf("exit %d, stderr %s", r.code, r.stderr)
	}
	r = engineSim(context.Background(), l.ModelDir, "--config", absent(t)+"/nonexistent.yaml")
	if r.code != exitUsage {
		t.Errorf("missing --config file: exit %d, stderr %s", r.code, r.stderr)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestEngineSimProcess runs engine-sim as a real process: refused while loading, then /health and a
// streamed chat, then SIGTERM.
func TestEngineSimProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	l, err := sample.Generate(context.Background(), t.TempDir(), sample.Options{})
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	simArgs := []string{l.ModelDir, "--config", l.EngineFile, "--port", fmt.Sprint(port), "--sim-load-delay", "1s"}

	bin := testbed.LifeboatBinary(t)
	cmd := exec.Command(bin, append([]string{"engine-sim"}, simArgs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	// Loading takes at least 1 s: connects are refused, not answered.
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("port accepted a connection while the model was loading")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("engine-sim exited before listening: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("port never listened\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = client.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model": "llama-demo", "messages": [{"role": "user", "content": "Ready?"}], "max_tokens": 4, "stream": true}`))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() != "" {
			lines = append(lines, sc.Text())
		}
	}
	resp.Body.Close()
	if len(lines) != 1+4+1 || !strings.Contains(lines[0], `"role":"assistant"`) || !strings.Contains(lines[4], `"finish_reason":"length"`) || lines[5] != "data: [DONE]" {
		t.Errorf("stream:\n%s", strings.Join(lines, "\n"))
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("engine-sim did not exit after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "serving llama-demo") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
