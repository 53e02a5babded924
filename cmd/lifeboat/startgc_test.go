package main

import (
	"regexp"
	"testing"
)

// The binary starts with the collector off (internal/base/startgc): its packages' ~5 MB of
// initialisation cost two collections in every command before. No collection in a `version`;
// with GOGC set in the environment, the environment rules: collections.
func TestStartUpRunsNoCollectionAndKeepsGOGC(t *testing.T) {
	gc := regexp.MustCompile(`(?m)^gc \d+ @`)
	r := cli(t, []string{"GODEBUG=gctrace=1", "GOGC="}, "version")
	if r.code != 0 {
		t.Fatalf("version: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(gc.FindAllString(r.stderr, -1)); n != 0 {
		t.Errorf("%d collection(s) in a start-up:\n%s", n, r.stderr)
	}
	r = cli(t, []string{"GODEBUG=gctrace=1", "GOGC=1"}, "manifest", "lint", "--list-rules")
	if n := len(gc.FindAllString(r.stderr, -1)); r.code != 0 || n == 0 {
		t.Errorf("GOGC=1 from the environment: exit %d, %d collection(s); it was not put back\n%s", r.code, n, r.stderr)
	}
}
