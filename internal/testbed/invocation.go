package testbed

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// InvocationProblem says what is wrong with a command line of the built binary that a file
// people copy writes down (a CI template's script, a Kubernetes container's args), or "" when
// args (without the program name) name one of its commands, not a group, with flags it takes.
// It runs the binary with args and --help: cobra parses every flag before it prints the help,
// so an unknown flag or command exits 2, and the help's usage line names the command args
// resolved to. Flag values and positional arguments are not checked.
func InvocationProblem(t testing.TB, args []string) string {
	t.Helper()
	if len(args) == 0 {
		return "no command"
	}
	out, err := exec.Command(LifeboatBinary(t), append(slices.Clone(args), "--help")...).CombinedOutput()
	if err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return fmt.Sprintf("%v: %s", err, first)
	}
	_, usage, ok := strings.Cut(string(out), "Usage:\n")
	if !ok {
		return "the help has no usage line"
	}
	usage, _, _ = strings.Cut(strings.TrimSpace(usage), "\n")
	var path []string // the command's path: the usage line's words up to the first placeholder or flag
	for _, w := range strings.Fields(usage)[1:] {
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz-") != "" || strings.HasPrefix(w, "-") {
			break
		}
		path = append(path, w)
	}
	if len(path) > len(args) || !slices.Equal(args[:len(path)], path) {
		return fmt.Sprintf("resolves to `lifeboat %s`, not a prefix of the command line", strings.Join(path, " "))
	}
	if bytes.Contains(out, []byte("\nAvailable Commands:")) {
		return fmt.Sprintf("`lifeboat %s` is a group of commands: the next word is not one of them", strings.Join(path, " "))
	}
	return ""
}
