package main

import (
	"encoding/json"
	"lifeboat/internal/testbed"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README matches the binary: every command of the Commands section's example block runs,
// as written, in an empty directory, and exits with the code its "# exit N" says.
func TestReadmeCommandsRunAsWritten(t *testing.T) {
	doc := readme(t)
	_, rest, ok := strings.Cut(doc, "<!-- commands-example")
	if !ok {
		t.Fatal("README has no commands-example block")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	dir := t.TempDir()
	bin := filepath.Dir(testbed.LifeboatBinary(t))
	exitRE := regexp.MustCompile(`\s+# exit (\d+)\s*$`)
	var cmd string
	n := 0
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		m := exitRE.FindStringSubmatch(line)
		if m == nil {
			cmd += strings.TrimSuffix(strings.TrimSpace(line), "\\") + " "
			continue
		}
		cmd += strings.TrimSpace(line[:len(line)-len(m[0])])
		want, _ := strconv.Atoi(m[1])
		c := exec.Command("bash", "-c", cmd)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, _ := c.CombinedOutput()
		if got := c.ProcessState.ExitCode(); got != want {
			t.Errorf("README: %s\nexit %d, the README says %d\n%s", cmd, got, want, out)
		}
		cmd = ""
		n++
	}
	if n < 15 {
		t.Fatalf("only %d commands found in the README block", n)
	}
}

// The README's rule table gives every rule with the severity the binary gives it.
func TestReadmeRuleTableMatchesTheBinary(t *testing.T) {
	r := cli(t, nil, "manifest", "lint", "--list-rules", "-o", "json")
	var rules []struct{ ID, Severity string }
	if err := json.Unmarshal([]byte(r.stdout), &rules); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| (error|warning)\\b")
	inDoc := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(readme(t), -1) {
		inDoc[m[1]] = m[2]
	}
	for _, ru := range rules {
		if got, ok := inDoc[ru.ID]; !ok {
			t.Errorf("rule %s is not in the README's rule table", ru.ID)
		} else if got != ru.Severity {
			t.Errorf("rule %s: the README says %s, the binary %s", ru.ID, got, ru.Severity)
		}
	}
}
