//go:build integration

package drills

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"lifeboat/drills/junit"
	"lifeboat/internal/emulators"
)

// checkReports writes the four report files and checks each is well-formed: the JSON matches the
// committed schema, the JUnit parses with a case per step and per expected outcome, every SVG
// is valid XML, and the HTML renders in a real browser with its charts drawn.
func checkReports(t *testing.T, rep *Report) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := WriteReports(dir, rep); err != nil {
		t.Fatal(err)
	}
	// JSON against the schema
	sch, err := jsonschema.CompileString("report.schema.json", string(Schema))
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("report.json does not match report.schema.json: %#v", err)
	}
	// JUnit
	jb, _ := os.ReadFile(filepath.Join(dir, ReportJUnit))
	var js junit.Suites
	if err := xml.Unmarshal(jb, &js); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	cases := 0
	names := map[string]bool{}
	for _, s := range js.Suites {
		cases += len(s.Cases)
		for _, c := range s.Cases {
			names[c.Name] = true
		}
	}
	if want := len(rep.Steps) + len(rep.Expect) + 1; cases != want || js.Tests != want {
		t.Fatalf("junit: %d cases (tests=%d), want %d", cases, js.Tests, want)
	}
	for _, s := range rep.Steps {
		if !names[s.Name] {
			t.Fatalf("junit has no case for step %s", s.Name)
		}
	}
	if rep.OK != (js.Failures == 0) {
		t.Fatalf("junit failures %d, drill ok %v", js.Failures, rep.OK)
	}
	// SVGs are valid XML
	hb, _ := os.ReadFile(filepath.Join(dir, ReportHTML))
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAll(hb, -1)
	if len(svgs) < 3 {
		t.Fatalf("report.html has %d charts", len(svgs))
	}
	for _, s := range svgs {
		dec := xml.NewDecoder(bytes.NewReader(s))
		for {
			_, err := dec.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("an SVG is not valid XML: %v\n%.300s", err, s)
				}
				break
			}
		}
	}
	if loc := regexp.MustCompile(`(?i)(\s(src|href)\s*=|<link|@import|url\()`).FindIndex(hb); loc != nil {
		t.Fatalf("report.html loads something: %q (not self-contained)", hb[max(0, loc[0]-40):loc[1]+40])
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportMD))
	if !bytes.Contains(md, []byte("# DR drill `"+rep.Drill+"`: "+rep.Verdict)) {
		t.Fatalf("report.md: %.200s", md)
	}
	checkInBrowser(t, filepath.Join(dir, ReportHTML), len(svgs))
	return dir
}

// chromium returns Debian's chromium; the test skips without it only when
// LIFEBOAT_REQUIRE_BROWSER is unset (`make chromium` installs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LIFEBOAT_REQUIRE_BROWSER") != "" {
		t.Fatal("LIFEBOAT_REQUIRE_BROWSER is set and chromium is not installed (make chromium)")
	}
	t.Skip("chromium not installed (make chromium); set LIFEBOAT_REQUIRE_BROWSER=1 to make this a failure")
	return ""
}

func headless(t *testing.T, bin string, args ...string) ([]byte, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// checkInBrowser loads report.html in headless chromium: no console message at all (an error,
// a blocked external asset), every chart drawn (the page's own script measured each series'
// box), and a screenshot whose pixels show the chart colours. The PNG is kept under
// .artifacts/ at the repository root (gitignored).
func checkInBrowser(t *testing.T, page string, charts int) {
	t.Helper()
	bin := chromium(t)
	dom, stderr := headless(t, bin, "--virtual-time-budget=5000", "--dump-dom", "file://"+page)
	for _, line := range strings.Split(string(stderr), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Fatalf("console message while loading report.html: %s", line)
		}
	}
	m := regexp.MustCompile(`data-charts="(\d+)" data-charts-drawn="(\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not run: %.500s", dom)
	}
	total, _ := strconv.Atoi(string(m[1]))
	drawn, _ := strconv.Atoi(string(m[2]))
	if total != charts || drawn != total {
		t.Fatalf("charts: %d in the page, %d drawn by the browser, %d in the file", total, drawn, charts)
	}
	root, err := emulators.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(root, ".artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(art, strings.ReplaceAll(t.Name(), "/", "_")+"-report.png")
	headless(t, bin, "--hide-scrollbars", "--window-size=1200,2600", "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// the first series colour (#1f77b4) is in every chart: count its pixels
	n := 0
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if r>>8 == 0x1f && g>>8 == 0x77 && b>>8 == 0xb4 {
				n++
			}
		}
	}
	if n < 500 {
		t.Fatalf("screenshot %s shows %d pixels of the chart colour: charts not drawn", shot, n)
	}
	t.Logf("screenshot: %s (%d chart pixels)", shot, n)
}
