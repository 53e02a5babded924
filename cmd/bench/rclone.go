package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"lifeboat/internal/childproc"
)

// rcloneInstall is rclone, the comparison tool: already in place, or being built in the
// background (`go install` takes minutes) while the bench does its untimed set-up. Nothing is
// timed while it builds, so the build never competes with a measurement.
type rcloneInstall struct {
	path    string
	already bool
	cmd     *exec.Cmd
	logName string
	done    chan struct{}
	err     error
	took    time.Duration
}

// startRcloneInstall runs `GOBIN=DIR go install pkg` in its own process group when path is not
// an executable yet. It installs into a scratch GOBIN first and renames the binary into place, so
// an interrupted build never leaves a half-written ./bin/rclone that a later run would trust.
func startRcloneInstall(goTool, pkg, path, logName string) *rcloneInstall {
	r := &rcloneInstall{path: path, logName: logName, done: make(chan struct{})}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		r.already = true
		close(r.done)
		return r
	}
	scratch := filepath.Join(filepath.Dir(path), ".rclone-install")
	fail := func(err error) *rcloneInstall {
		r.err = err
		close(r.done)
		return r
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return fail(err)
	}
	log, err := os.Create(logName)
	if err != nil {
		return fail(err)
	}
	r.cmd = exec.Command(goTool, "install", pkg)
	r.cmd.Env = append(os.Environ(), "GOBIN="+scratch)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	r.cmd.SysProcAttr = childproc.Attr(true)
	start := time.Now()
	if err := r.cmd.Start(); err != nil {
		log.Close()
		return fail(fmt.Errorf("starting go install: %w", err))
	}
	fmt.Fprintf(os.Stderr, "rclone is missing: building %s in the background (log: %s) …\n", pkg, logName)
	go func() {
		defer close(r.done)
		err := r.cmd.Wait()
		log.Close()
		r.took = time.Since(start)
		if err != nil {
			out, _ := os.ReadFile(logName)
			r.err = fmt.Errorf("go install %s: %v\n%s", pkg, err, tail(string(out), 15))
			return
		}
		if err := os.Rename(filepath.Join(scratch, "rclone"), path); err != nil {
			r.err = err
			return
		}
		_ = os.RemoveAll(scratch)
	}()
	return r
}

// wait waits for the build; it returns why rclone cannot be used, or nil.
func (r *rcloneInstall) wait(ctx context.Context) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.err
}

// stop ends a build still running (the bench is exiting early): its whole process group.
func (r *rcloneInstall) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// version is the first line of `rclone version`.
func (r *rcloneInstall) version() string {
	out, err := exec.Command(r.path, "version").Output()
	if err != nil {
		return "rclone (version unknown)"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(line)
}

func (r *rcloneInstall) describe() string {
	switch {
	case r.already:
		return "already installed in ./bin (not rebuilt)"
	case r.err != nil:
		return "install failed"
	default:
		return fmt.Sprintf("built by this run with go install in %.0fs (in the background, during the untimed set-up)", r.took.Seconds())
	}
}
