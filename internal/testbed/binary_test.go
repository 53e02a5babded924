package testbed

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The tests' lifeboat is built once and as `make build` builds it: static, -trimpath.
func TestLifeboatBinary(t *testing.T) {
	p := LifeboatBinary(t)
	if again := LifeboatBinary(t); again != p {
		t.Fatalf("built twice: %s, %s", p, again)
	}
	bi, err := buildinfo.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	if set["CGO_ENABLED"] != "0" || set["-trimpath"] != "true" || bi.Path != "lifeboat/cmd/lifeboat" {
		t.Fatalf("not built as make build builds: %s %v", bi.Path, set)
	}
	out, err := exec.Command(p, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "lifeboat ") {
		t.Fatalf("lifeboat version: %v %s", err, out)
	}
}
