//go:build integration

package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"lifeboat/internal/clitest"
)

// A run says, before each step_interval and each drain, what it waits for and until when: an
// operator watching a long wait knows it is not hung.
func TestFailoverRunSaysWhatItWaitsFor(t *testing.T) {
	clitest.Binary(t)
	failoverDir(t)
	os.WriteFile("fleet.yaml", []byte(strings.Replace(cliFleet, "step_interval: 10ms", "step_interval: 200ms", 1)), 0o644)
	r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", "t")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, re := range []string{
		`waiting step_interval 200ms until \d\d:\d\d:\d\dZ before step 2/\d+`,
		`draining eu-west-1 until \d\d:\d\d:\d\dZ \(drain_timeout 1s\) or until its in-flight requests fall under drain_running_below \d+, before step \d+`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("no line matching %s on stderr:\n%s", re, r.stderr)
		}
	}
}
