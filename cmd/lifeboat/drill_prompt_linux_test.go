//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"lifeboat/internal/testbed"
)

// openPTY opens a pseudo-terminal pair (Linux /dev/ptmx): what the binary gets as its stdin
// (the terminal a person would type on) and the master side the test types into.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pseudo-terminal number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal's tty: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// The drill's approval prompt, on a real terminal, names the step, the drill, the region it
// loses and the fleet (file, model, router, state), as the failover prompts do: a drill on
// prod cannot be approved for one on staging. Answered "n", the step is not approved: the drill
// fails (exit 1) and the evidence records the refusal, given on the terminal.
func TestDrillApprovalPromptNamesTheFleet(t *testing.T) {
	drill := drillFleet(t, "1m")
	dir := filepath.Dir(drill)
	body := readFile(t, drill)
	if err := os.WriteFile(drill, []byte(strings.Replace(body, "approve: [evacuate]", "approve: [verify]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	weights := readFile(t, filepath.Join(dir, "weights.json"))
	master, tty := openPTY(t)
	out := filepath.Join(dir, "report")
	cmd := exec.Command(testbed.LifeboatBinary(t), "drill", "run", drill, "--report", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	tty.Close()
	go func() { _, _ = io.Copy(io.Discard, master) }() // the terminal's echo
	// the terminal keeps the line until the binary reads it
	if _, err := master.Write([]byte("n\n")); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	prompt := fmt.Sprintf("approve step verify of drill lose-eu-west-1 (losing eu-west-1) on fleet %s (model llama-demo, router file, state file://%s)? [y/N] ", filepath.Join(dir, "fleet.yaml"), filepath.Join(dir, "state"))
	if !strings.Contains(stderr.String(), prompt) {
		t.Errorf("the approval prompt does not name the drill and the fleet; want %q in:\n%s", prompt, stderr.String())
	}
	if code != 1 || !strings.Contains(stderr.String(), "not approved") {
		t.Errorf("answered n: exit %d, want 1 and the step not approved\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep struct {
		Evidence struct {
			Approvals []struct {
				Step     string `json:"step"`
				Approved bool   `json:"approved"`
				Via      string `json:"via"`
			} `json:"approvals"`
		} `json:"evidence"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	if a := rep.Evidence.Approvals; len(a) != 1 || a[0].Step != "verify" || a[0].Approved || a[0].Via != "terminal" {
		t.Errorf("evidence approvals %+v, want verify refused on the terminal", a)
	}
	if got := readFile(t, filepath.Join(dir, "weights.json")); got != weights {
		t.Errorf("a refused drill changed the router:\n%s\nwas\n%s", got, weights)
	}
}
