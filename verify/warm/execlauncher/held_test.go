package execlauncher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lifeboat/fleet/launch"
)

// TestLauncherCommandRunsNoShell keeps what the issue 9 audit found already holding: shell
// metacharacters in a launcher command are passed as literal argument bytes — no shell runs,
// so nothing they would do in one happens.
func TestLauncherCommandRunsNoShell(t *testing.T) {
	dir := t.TempDir()
	mark := func(n string) string { return filepath.Join(dir, n) }
	cmd := `/bin/echo "a; touch ` + mark("semi") + `" $(touch ` + mark("subst") + `) ` + "`touch " + mark("tick") + "`" +
		` '|' touch ` + mark("pipe") + ` '&&' touch ` + mark("and") + ` '>' ` + mark("redir")
	l := &Launcher{Command: cmd, Grace: time.Second}
	logPath := filepath.Join(dir, "replica.log")
	inst, err := l.Launch(context.Background(), launch.Spec{LogPath: logPath})
	if err != nil {
		t.Fatal(err)
	}
	<-inst.Exited()
	inst.Stop(context.Background())
	for _, n := range []string{"semi", "subst", "tick", "pipe", "and", "redir"} {
		if _, err := os.Stat(mark(n)); err == nil {
			t.Errorf("%s: a shell ran the command", n)
		}
	}
	out, _ := os.ReadFile(logPath)
	if !strings.Contains(string(out), "a; touch") || !strings.Contains(string(out), "$(touch") {
		t.Errorf("echo did not get the metacharacters literally: %q", out)
	}
}
