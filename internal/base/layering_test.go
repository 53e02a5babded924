package base

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "lifeboat"

// layers is the order of the product layers, lowest first (doc.go says why).
var layers = []string{"internal/base", "providers", "manifest", "verify", "failover", "drills", "cmd"}

// layerOverrides place a package in a layer other than its folder's: extension kinds sit in the
// layer of the registry they register with.
var layerOverrides = map[string]string{
	"verify/warm/kube": "failover", // a launcher kind: failover.RegisterLauncher, failover.FleetDecoder
}

// productInternal are the internal/ packages a product package may import outside internal/base,
// each with the reason.
var productInternal = map[string]map[string]string{
	"cmd/lifeboat": {
		"internal/enginesim": "the `engine-sim` command (the demo's and tests' vLLM stand-in)",
		"internal/sample":    "the `demo init` command (the embedded sample model)",
	},
}

// pkg is what the check needs of one `go list` entry.
type pkg struct {
	ImportPath   string
	Imports      []string // non-test imports
	TestImports  []string // imports of the package's own _test.go files
	XTestImports []string // imports of its external (package x_test) test files
}

// rel is path without the module prefix ("" for a path outside the module).
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

// layerOf is the index of r's layer in layers, or -1 for a package in none (internal/ test and
// demo helpers, examples).
func layerOf(r string) int {
	for p, l := range layerOverrides {
		if under(r, p) {
			r = l
		}
	}
	for i, l := range layers {
		if under(r, l) {
			return i
		}
	}
	return -1
}

// violations lists every import that breaks the layer rules, one line each.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		fromLayer := layerOf(from)
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				to, ok := rel(imp)
				if !ok || to == from {
					continue
				}
				switch {
				case under(from, "internal/base"):
					if under(to, "internal/base") {
						continue // the ground floor may build on itself (kubeclient uses redact)
					}
					out = append(out, fmt.Sprintf("%s imports %s: internal/base imports nothing of Lifeboat's (stdlib and third-party only)", from, to))
				case test:
					// Test files may use any test helper; the layer order binds product code.
				case fromLayer >= 0 && under(to, "internal") && !under(to, "internal/base"):
					if _, ok := productInternal[from][firstTwo(to)]; ok {
						continue
					}
					out = append(out, fmt.Sprintf("%s imports %s: product code imports only internal/base from internal/ (test and demo code lives there)", from, to))
				case fromLayer >= 0 && layerOf(to) > fromLayer:
					out = append(out, fmt.Sprintf("%s (layer %s) imports %s (layer %s): a layer imports only its own and lower ones (%s)",
						from, layers[fromLayer], to, layers[layerOf(to)], strings.Join(layers, " < ")))
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		if !under(from, "internal/base") {
			check(p.XTestImports, true)
		}
	}
	sort.Strings(out)
	return out
}

// firstTwo is the first two elements of a path: internal/enginesim/tokenizer → internal/enginesim.
func firstTwo(r string) string {
	parts := strings.SplitN(r, "/", 3)
	if len(parts) < 2 {
		return r
	}
	return parts[0] + "/" + parts[1]
}

func goList(t *testing.T) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages: wrong directory?", len(pkgs))
	}
	return pkgs
}

// TestLayering fails when any Lifeboat package imports upward, a product package imports test
// or demo code, or a ground-floor package imports Lifeboat.
func TestLayering(t *testing.T) {
	for _, v := range violations(goList(t)) {
		t.Error(v)
	}
}

// TestLayeringCatches proves each rule can fail.
func TestLayeringCatches(t *testing.T) {
	cases := []struct {
		name string
		pkg  pkg
		want string // substring of the one violation; "" for none
	}{
		{"base imports lifeboat", pkg{ImportPath: "lifeboat/internal/base/kubeclient", Imports: []string{"lifeboat/providers"}}, "internal/base imports nothing"},
		{"base test imports lifeboat", pkg{ImportPath: "lifeboat/internal/base/yamlnode", TestImports: []string{"lifeboat/failover"}}, "internal/base imports nothing"},
		{"base imports base", pkg{ImportPath: "lifeboat/internal/base/kubeclient", Imports: []string{"lifeboat/internal/base/redact", "k8s.io/client-go/rest"}}, ""},
		{"manifest imports internal", pkg{ImportPath: "lifeboat/manifest/modelrepo", Imports: []string{"lifeboat/internal/editdistance"}}, "product code imports only internal/base"},
		{"test file imports internal", pkg{ImportPath: "lifeboat/verify", XTestImports: []string{"lifeboat/internal/testbed"}}, ""},
		{"cmd imports the demo sample", pkg{ImportPath: "lifeboat/cmd/lifeboat", Imports: []string{"lifeboat/internal/sample", "lifeboat/internal/enginesim"}}, ""},
		{"cmd imports the emulators", pkg{ImportPath: "lifeboat/cmd/lifeboat", Imports: []string{"lifeboat/internal/emulators"}}, "product code imports only internal/base"},
		{"drills imports failover's helper", pkg{ImportPath: "lifeboat/drills", Imports: []string{"lifeboat/failover/yamlnode"}}, ""},
		{"verify imports failover", pkg{ImportPath: "lifeboat/verify/warm", Imports: []string{"lifeboat/failover"}}, "(layer verify) imports failover (layer failover)"},
		{"kube launcher imports failover", pkg{ImportPath: "lifeboat/verify/warm/kube", Imports: []string{"lifeboat/failover"}}, ""},
		{"failover imports the kube launcher", pkg{ImportPath: "lifeboat/failover", Imports: []string{"lifeboat/verify/warm/kube"}}, ""},
		{"providers imports manifest", pkg{ImportPath: "lifeboat/providers", Imports: []string{"lifeboat/manifest"}}, "(layer providers) imports manifest"},
		{"failover imports drills", pkg{ImportPath: "lifeboat/failover/gatewayapi", Imports: []string{"lifeboat/drills"}}, "imports drills (layer drills)"},
		{"drills imports cmd", pkg{ImportPath: "lifeboat/drills", Imports: []string{"lifeboat/cmd/lifeboat"}}, "(layer drills) imports cmd/lifeboat (layer cmd)"},
		{"internal helper imports anything", pkg{ImportPath: "lifeboat/internal/testbed", Imports: []string{"lifeboat/cmd/lifeboat"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := violations([]pkg{tc.pkg})
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no violation, got %q", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("want one violation containing %q, got %q", tc.want, got)
			}
		})
	}
}
