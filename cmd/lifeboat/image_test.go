package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makeIn runs make (found on the test's PATH) in the repository root with the given PATH and
// extra environment.
func makeIn(t *testing.T, path string, env []string, args ...string) (string, int) {
	t.Helper()
	bin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make: %v", err)
	}
	c := exec.Command(bin, append([]string{"-s", "--no-print-directory"}, args...)...)
	c.Dir = "../.."
	c.Env = append(os.Environ(), "PATH="+path)
	c.Env = append(c.Env, env...)
	out, _ := c.CombinedOutput()
	return string(out), c.ProcessState.ExitCode()
}

// `make image` without Docker says so in one line and fails: it must not look as if an image
// was built (a CI job would go on to push nothing).
func TestMakeImageWithoutDocker(t *testing.T) {
	// no docker on PATH at all (the Makefile's shell is /bin/bash, so an empty PATH still runs it)
	out, code := makeIn(t, t.TempDir(), nil, "image")
	if code == 0 || !strings.Contains(out, "make image: docker is not installed") {
		t.Fatalf("make image without docker: exit %d\n%s", code, out)
	}
	// the docker CLI but no daemon: the real CLI, pointed at a socket nobody listens on
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Logf("no docker CLI here: only the not-installed case ran")
		return
	}
	dir := t.TempDir()
	if err := os.Symlink(docker, filepath.Join(dir, "docker")); err != nil {
		t.Fatal(err)
	}
	out, code = makeIn(t, dir, []string{"DOCKER_HOST=unix://" + filepath.Join(dir, "no-daemon.sock")}, "image")
	if code == 0 || !strings.Contains(out, "make image: the docker daemon is not reachable") {
		t.Fatalf("make image with no daemon: exit %d\n%s", code, out)
	}
}

// The image's binary is built as `make build` builds the CLI: static (CGO_ENABLED=0), -trimpath,
// without GCS's unused gRPC DirectPath modules (-tags disable_grpc_modules), and the version
// stamped with -X main.version (the variable versionInfo reads), which
// `make image` passes in as the build argument VERSION.
func TestImageBuildMatchesMakeBuild(t *testing.T) {
	out, code := makeIn(t, os.Getenv("PATH"), nil, "-n", "build", "image", "VERSION=v9.9.9-test")
	if code != 0 {
		t.Fatalf("make -n build image: exit %d\n%s", code, out)
	}
	var build string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " build ") && strings.Contains(l, "./cmd/lifeboat") {
			build = l
		}
	}
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	run := regexp.MustCompile(`(?m)^RUN (.*go build .*)$`).FindStringSubmatch(string(df))
	if build == "" || run == nil {
		t.Fatalf("no go build in `make -n build` (%q) or in the Dockerfile", out)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-tags disable_grpc_modules", "-X main.version="} {
		if !strings.Contains(build, want) || !strings.Contains(run[1], want) {
			t.Errorf("%s: make build: %s\nDockerfile: %s", want, build, run[1])
		}
	}
	if !strings.Contains(build, "-X main.version=v9.9.9-test") {
		t.Errorf("make build does not stamp VERSION: %s", build)
	}
	if !strings.Contains(out, "--build-arg VERSION=v9.9.9-test") || !strings.Contains(string(df), "ARG VERSION") || !strings.Contains(run[1], "main.version=${VERSION}") {
		t.Errorf("make image does not pass VERSION to the Dockerfile's build:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^FROM gcr.io/distroless/static`).Match(df) {
		t.Error("the image's base is not distroless/static (a static binary needs no libc)")
	}
}
