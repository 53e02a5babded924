package base

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "lifeboat"

// layers is the order of the product layers, lowest first (doc.go says why).
var layers = []string{"internal/base", "providers", "manifest", "fleet", "verify", "failover", "drills", "cmd"}

// productInternal are the internal/ packages a package of the layers may import outside
// internal/base, each with the reason. The tools under cmd/ beside the CLI (isTool) are in the top
// layer but ship nothing: they run the servers and samples the tests use.
var productInternal = map[string]map[string]string{
	"cmd/lifeboat": {
		"internal/enginesim": "the `engine-sim` command (the demo's and tests' vLLM stand-in)",
		"internal/sample":    "the `demo init` command (the embedded sample model)",
	},
	"cmd/bench": {
		"internal/emulators":  "`make bench` measures against versitygw, fake-gcs-server, Azurite, the registry and kube-apiserver",
		"internal/faultproxy": "`make bench`'s WAN section: the latency-adding proxies",
		"internal/enginesim":  "`make bench`'s engine-sim section: the real tokenizer files per family",
		"internal/sample":     "`make bench` generates its model repositories",
		"internal/childproc":  "`make bench` starts servers that die with it, as the test harness does",
	},
	"cmd/bench/maxrss": {
		"internal/childproc": "the bench's memory shim starts each measured command as the bench starts its servers",
	},
	"cmd/democlouds": {
		"internal/emulators": "`make demo`'s three clouds are the test emulators",
	},
}

// isTool reports whether r is a development tool under cmd/ (cmd/bench, cmd/democlouds,
// cmd/release): a main package beside the CLI that `make` runs. Tools ship nothing, so the one
// sleep does not bind them, and nothing outside a tool imports it.
func isTool(r string) bool { return under(r, "cmd") && !under(r, "cmd/lifeboat") && r != "cmd" }

// pkg is what the check needs of one `go list` entry.
type pkg struct {
	ImportPath   string
	Imports      []string // non-test imports
	TestImports  []string // imports of the package's own _test.go files
	XTestImports []string // imports of its external (package x_test) test files

	Dir            string   // where its files are
	Name           string   // its package name
	GoFiles        []string // non-test files built with go list's tags
	IgnoredGoFiles []string // non-test files those tags leave out
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
				case isTool(to) && firstTwo(to) != firstTwo(from):
					out = append(out, fmt.Sprintf("%s imports %s: a tool under cmd/ is run by make, never imported", from, to))
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

// goList lists the module's packages with the integration tag, so the imports of the test files
// that start servers (//go:build integration) are checked too.
func goList(t *testing.T) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-e", "-tags", "integration", "-json=ImportPath,Imports,TestImports,XTestImports,Dir,Name,GoFiles,IgnoredGoFiles", module+"/...")
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
		{"kube launcher imports failover", pkg{ImportPath: "lifeboat/verify/warm/kube", Imports: []string{"lifeboat/failover"}}, "(layer verify) imports failover (layer failover)"},
		{"kube launcher imports fleet", pkg{ImportPath: "lifeboat/verify/warm/kube", Imports: []string{"lifeboat/fleet", "lifeboat/fleet/launch"}}, ""},
		{"fleet imports verify", pkg{ImportPath: "lifeboat/fleet", Imports: []string{"lifeboat/verify/warm"}}, "(layer fleet) imports verify/warm (layer verify)"},
		{"a router driver imports failover", pkg{ImportPath: "lifeboat/failover/routers/caddy", Imports: []string{"lifeboat/failover"}}, ""},
		{"failover imports the kube launcher", pkg{ImportPath: "lifeboat/failover", Imports: []string{"lifeboat/verify/warm/kube"}}, ""},
		{"providers imports manifest", pkg{ImportPath: "lifeboat/providers", Imports: []string{"lifeboat/manifest"}}, "(layer providers) imports manifest"},
		{"failover imports drills", pkg{ImportPath: "lifeboat/failover/routers/gatewayapi", Imports: []string{"lifeboat/drills"}}, "imports drills (layer drills)"},
		{"drills imports cmd", pkg{ImportPath: "lifeboat/drills", Imports: []string{"lifeboat/cmd/lifeboat"}}, "(layer drills) imports cmd/lifeboat (layer cmd)"},
		{"internal helper imports anything", pkg{ImportPath: "lifeboat/internal/testbed", Imports: []string{"lifeboat/cmd/lifeboat"}}, ""},
		{"bench imports the emulators", pkg{ImportPath: "lifeboat/cmd/bench", Imports: []string{"lifeboat/internal/emulators", "lifeboat/internal/faultproxy", "lifeboat/failover"}}, ""},
		{"bench runs its maxrss", pkg{ImportPath: "lifeboat/cmd/bench/maxrss", Imports: []string{"lifeboat/internal/childproc"}}, ""},
		{"release imports the emulators", pkg{ImportPath: "lifeboat/cmd/release", Imports: []string{"lifeboat/internal/emulators"}}, "product code imports only internal/base"},
		{"the CLI imports a tool", pkg{ImportPath: "lifeboat/cmd/lifeboat", Imports: []string{"lifeboat/cmd/bench"}}, "a tool under cmd/ is run by make"},
		{"a test imports a tool", pkg{ImportPath: "lifeboat/examples", XTestImports: []string{"lifeboat/cmd/release"}}, "a tool under cmd/ is run by make"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := violations([]pkg{tc.pkg})
			wantOne(t, "violation", got, tc.want)
		})
	}
}

// docLines is how many lines the first paragraph of a package comment may take: what the package
// holds, said so that a newcomer reading `go doc` or the doc.go knows whether to look further.
const docLines = 3

// goFileRef is a Go file a package comment names ("runner_*.go", "internal/base/layering_test.go").
var goFileRef = regexp.MustCompile(`[A-Za-z0-9_*][A-Za-z0-9_./*-]*\.go\b`)

// docProblems lists what is wrong with the package comment of the package in dir (package name,
// non-test files), one line each: it must be in doc.go, begin "Package name" ("Command name" for a
// main package, named after its directory), say what the package holds in at most docLines lines
// before its first blank line, be the only package comment, and name only Go files that exist
// (relative to dir, or to root when the name has a slash; a * matches as in a glob).
func docProblems(root, dir, name string, files []string) []string {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		rel = dir
	}
	var out []string
	bad := func(format string, args ...any) { out = append(out, rel+": "+fmt.Sprintf(format, args...)) }
	var doc string
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			bad("%v", err)
			continue
		}
		switch {
		case f == "doc.go" && af.Doc == nil:
			bad("doc.go has no package comment (the comment right above its package clause)")
		case f == "doc.go":
			doc = af.Doc.Text()
		case af.Doc != nil:
			bad("%s has a package comment: the package comment belongs in doc.go alone", f)
		}
	}
	if !slices.Contains(files, "doc.go") {
		bad("no doc.go: every package says what it holds in a doc.go (its package comment)")
	}
	if doc == "" {
		return out
	}
	want := "Package " + name + " "
	if name == "main" {
		want = "Command " + filepath.Base(dir) + " "
	}
	if !strings.HasPrefix(doc, want) {
		bad("the package comment begins %q, want %q", firstLine(doc), want+"…")
	}
	first, _, _ := strings.Cut(doc, "\n\n")
	if n := strings.Count(strings.TrimSpace(first), "\n") + 1; n > docLines {
		bad("the package comment's first paragraph takes %d lines: say what the package holds in at most %d, then a blank line before the details", n, docLines)
	}
	for _, loc := range goFileRef.FindAllStringIndex(doc, -1) {
		ref := doc[loc[0]:loc[1]]
		if loc[1] < len(doc)-1 && doc[loc[1]] == '.' && isLetter(doc[loc[1]+1]) {
			continue // a host name (pkg.go.dev), not a file
		}
		base := dir
		if strings.Contains(ref, "/") {
			base = root
		}
		if m, _ := filepath.Glob(filepath.Join(base, ref)); len(m) == 0 {
			bad("the package comment names %s, which does not exist", ref)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// TestPackageDocs fails when a package of the module (test-only ones aside) has no doc.go with its
// package comment, keeps a package comment in another file, or has one that does not say in
// docLines lines what it holds or names a file that is gone.
func TestPackageDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range goList(t) {
		files := append(slices.Clone(p.GoFiles), p.IgnoredGoFiles...)
		if len(files) == 0 || p.Dir == "" {
			continue // test files only (examples/kubernetes): no package to document
		}
		n++
		for _, v := range docProblems(root, p.Dir, p.Name, files) {
			t.Error(v)
		}
	}
	if n < 10 {
		t.Fatalf("checked only %d packages: wrong directory?", n)
	}
}

// TestPackageDocsCatches proves each rule of docProblems can fail, on packages written to a
// temporary directory.
func TestPackageDocsCatches(t *testing.T) {
	good := "// Package p holds one thing.\n//\n// p.go is where it is.\npackage p\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string // substring of the one problem; "" for none
	}{
		{"good", map[string]string{"doc.go": good, "p.go": "package p\n"}, ""},
		{"main", map[string]string{"doc.go": "// Command pkg runs.\npackage main\n", "main.go": "package main\n"}, ""},
		{"glob and root path", map[string]string{"doc.go": "// Package p holds p_*.go, and pkg/doc.go.\npackage p\n", "p_a.go": "package p\n"}, ""},
		{"host name", map[string]string{"doc.go": "// Package p is on pkg.go.dev.\npackage p\n"}, ""},
		{"file comment apart", map[string]string{"doc.go": good, "p.go": "// What p.go is for.\n\npackage p\n"}, ""},
		{"no doc.go", map[string]string{"p.go": "package p\n"}, "no doc.go"},
		{"doc.go without a comment", map[string]string{"doc.go": "package p\n"}, "doc.go has no package comment"},
		{"comment detached", map[string]string{"doc.go": "// Package p holds one thing.\n\npackage p\n"}, "doc.go has no package comment"},
		{"comment in another file", map[string]string{"doc.go": good, "p.go": "// Package p again.\npackage p\n"}, "p.go has a package comment"},
		{"wrong start", map[string]string{"doc.go": "// This package holds one thing.\npackage p\n"}, `want "Package p …"`},
		{"main not named", map[string]string{"doc.go": "// Package main runs.\npackage main\n"}, `want "Command pkg …"`},
		{"first paragraph too long", map[string]string{"doc.go": "// Package p holds\n// one\n// thing\n// at length.\npackage p\n"}, "takes 4 lines"},
		{"names a missing file", map[string]string{"doc.go": "// Package p holds runner.go.\npackage p\n"}, "names runner.go"},
		{"names a missing glob", map[string]string{"doc.go": "// Package p holds p_*.go.\npackage p\n"}, "names p_*.go"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "pkg")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			var files []string
			for name, src := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, name)
			}
			sort.Strings(files)
			pkgName := "p"
			if strings.Contains(tc.files["doc.go"]+tc.files["main.go"], "package main") {
				pkgName = "main"
			}
			got := docProblems(root, dir, pkgName, files)
			wantOne(t, "problem", got, tc.want)
		})
	}
}

// sleepHome is the one context-aware sleep (wait.Sleep); sleepAllowed are the product files that
// may sleep another way, each with the reason. None does today.
const sleepHome = "internal/base/wait"

var sleepAllowed = map[string]string{}

// sleepProblems lists the sleeps in one parsed file other than wait.Sleep, one line each:
// time.Sleep (deaf to the context), a bare <-time.After(d), and a select that only waits a timer
// or the context — <-time.After(…) or <-t.C of a t := time.NewTimer(…), beside nothing but
// <-x.Done() cases — which is wait.Sleep written again. A select where the timer races another
// channel (a process exiting, a grace period) is a wait for that channel, not a sleep.
func sleepProblems(fset *token.FileSet, f *ast.File) []string {
	timePkg := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timePkg = "time"
			if imp.Name != nil {
				timePkg = imp.Name.Name
			}
		}
	}
	if timePkg == "" || timePkg == "_" {
		return nil
	}
	isTime := func(e ast.Expr, fn string) bool {
		c, ok := e.(*ast.CallExpr)
		if !ok {
			return false
		}
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != fn {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == timePkg
	}
	var out []string
	bad := func(n ast.Node, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		timers := map[string]bool{}  // names given a time.NewTimer in this function
		comms := map[ast.Stmt]bool{} // the cases of selects, judged with their select
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, r := range n.Rhs {
					if id, ok := n.Lhs[min(i, len(n.Lhs)-1)].(*ast.Ident); ok && isTime(r, "NewTimer") {
						timers[id.Name] = true
					}
				}
			case *ast.ValueSpec:
				for i, v := range n.Values {
					if i < len(n.Names) && isTime(v, "NewTimer") {
						timers[n.Names[i].Name] = true
					}
				}
			case *ast.CommClause:
				if n.Comm != nil {
					comms[n.Comm] = true
				}
			}
			return true
		})
		// received is the channel a select case or statement receives from, nil for a send or none.
		received := func(s ast.Stmt) ast.Expr {
			var e ast.Expr
			switch s := s.(type) {
			case *ast.ExprStmt:
				e = s.X
			case *ast.AssignStmt:
				if len(s.Rhs) == 1 {
					e = s.Rhs[0]
				}
			}
			if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
				return u.X
			}
			return nil
		}
		isTimer := func(ch ast.Expr) bool {
			if isTime(ch, "After") {
				return true
			}
			sel, ok := ch.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "C" {
				return false
			}
			id, ok := sel.X.(*ast.Ident)
			return ok && timers[id.Name]
		}
		isDone := func(ch ast.Expr) bool {
			c, ok := ch.(*ast.CallExpr)
			if !ok || len(c.Args) != 0 {
				return false
			}
			sel, ok := c.Fun.(*ast.SelectorExpr)
			return ok && sel.Sel.Name == "Done"
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if isTime(n, "Sleep") {
					bad(n, "time.Sleep does not end with the context: use wait.Sleep(ctx, d) (%s)", sleepHome)
				}
			case *ast.ExprStmt:
				if ch := received(n); !comms[n] && ch != nil && isTime(ch, "After") {
					bad(n, "<-time.After(d) does not end with the context: use wait.Sleep(ctx, d) (%s)", sleepHome)
				}
			case *ast.SelectStmt:
				timer, done, other := 0, 0, 0
				for _, c := range n.Body.List {
					ch := received(c.(*ast.CommClause).Comm)
					switch {
					case ch == nil:
						other++ // default, or a send
					case isTimer(ch):
						timer++
					case isDone(ch):
						done++
					default:
						other++
					}
				}
				if timer == 1 && done > 0 && other == 0 {
					bad(n, "a select that only waits a timer or the context is a sleep: use wait.Sleep(ctx, d) (%s)", sleepHome)
				}
			}
			return true
		})
	}
	return out
}

// TestOneSleep fails when product code (the layers; not test files, internal/ helpers or the tools
// under cmd/) sleeps other than through wait.Sleep: a copy of it, or a time.Sleep Ctrl-C waits out.
func TestOneSleep(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, p := range goList(t) {
		r, ok := rel(p.ImportPath)
		if !ok || layerOf(r) < 0 || under(r, sleepHome) || isTool(r) {
			continue
		}
		for _, name := range append(slices.Clone(p.GoFiles), p.IgnoredGoFiles...) {
			path := filepath.Join(p.Dir, name)
			key, err := filepath.Rel(root, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := sleepAllowed[key]; ok {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Error(err)
				continue
			}
			files++
			for _, v := range sleepProblems(fset, f) {
				if rp, err := filepath.Rel(root, v); err == nil && !strings.HasPrefix(rp, "..") {
					v = rp
				}
				t.Error(v)
			}
		}
	}
	if files < 50 {
		t.Fatalf("checked only %d files: wrong directory?", files)
	}
	for key := range sleepAllowed {
		if _, err := os.Stat(filepath.Join(root, key)); err != nil {
			t.Errorf("sleepAllowed names %s: %v", key, err)
		}
	}
}

// TestOneSleepCatches proves each sleep sleepProblems knows is found, and that the waits which are
// not sleeps are left alone.
func TestOneSleepCatches(t *testing.T) {
	cases := []struct {
		name, body string
		want       string // substring of the one problem; "" for none
	}{
		{"time.Sleep", `time.Sleep(time.Second)`, "time.Sleep does not end"},
		{"bare time.After", `<-time.After(time.Second)`, "<-time.After(d) does not end"},
		{"select on time.After", `select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}`, "only waits a timer or the context"},
		{"select on a NewTimer", `t := time.NewTimer(time.Second)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}`, "only waits a timer or the context"},
		{"select on a NewTimer, assigned", `var t *time.Timer
			t = time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
			case _ = <-t.C:
			}`, "only waits a timer or the context"},
		{"renamed import", `tm.Sleep(1)`, "time.Sleep does not end"},
		{"wait.Sleep", `_ = wait.Sleep(ctx, time.Second)`, ""},
		{"timer races a channel", `select {
			case <-exited:
			case <-ctx.Done():
			case <-time.After(time.Second):
			}`, ""},
		{"timeout without a context", `select {
			case <-exited:
			case <-time.After(time.Second):
			}`, ""},
		{"NewTimer races a channel", `t := time.NewTimer(time.Second)
			select {
			case <-t.C:
			case <-exited:
			}`, ""},
		{"ticker", `t := time.NewTicker(time.Second)
			select {
			case <-ctx.Done():
			case <-t.C:
			}`, ""},
		{"with default", `select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			default:
			}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			imp := `"time"`
			if strings.Contains(tc.body, "tm.") {
				imp = `tm "time"`
			}
			src := "package p\n\nimport (\n\t\"context\"\n\t" + imp + "\n)\n\nfunc f(ctx context.Context, exited chan struct{}) {\n\t" + tc.body + "\n}\n"
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			got := sleepProblems(fset, f)
			wantOne(t, "problem", got, tc.want)
		})
	}
}

// wantOne fails unless got is one finding (a violation, a problem) that contains want, or none
// when want is "".
func wantOne(t *testing.T, what string, got []string, want string) {
	t.Helper()
	if want == "" {
		if len(got) != 0 {
			t.Fatalf("want no %s, got %q", what, got)
		}
		return
	}
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("want one %s containing %q, got %q", what, want, got)
	}
}
