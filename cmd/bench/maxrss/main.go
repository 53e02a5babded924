package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lifeboat/internal/childproc"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: maxrss RESULT_FILE COMMAND [ARG...]")
		os.Exit(2)
	}
	result, argv := os.Args[1], os.Args[2:]
	floor := selfHWM()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childproc.Attr(false) // dies with us (the bench kills us)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	code, rss, cpu := 127, int64(0), time.Duration(0)
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
	}
	if code < 0 { // killed by a signal
		code = 128 + int(cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
	}
	line := fmt.Sprintf("%d %d %d %d %d\n", rss, floor, wall.Nanoseconds(), code, cpu.Nanoseconds())
	if err := os.WriteFile(result, []byte(line), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(125)
	}
	os.Exit(code)
}

// selfHWM is this process's peak resident memory so far, in kB (VmHWM).
func selfHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
