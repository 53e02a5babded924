//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	filerouter "lifeboat/failover/routers/file"
)

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// htmlCells parses report.html with a real HTML parser and returns the text of every <td>
// (by its data-key when it has one) and of every table row of the table with class cls.
func htmlDoc(t *testing.T, path string) *html.Node {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("report.html: %v", err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// find returns every element node for which ok holds.
func find(n *html.Node, ok func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && ok(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

// TestDrillEvidence: a drill run through the binary leaves an evidence block in every report
// format — the Lifeboat version, the manifest, drill-file and fleet digests (recomputed here from
// the files), the operator, the approval given by --approve-all, start, end, RTO and recovery —
// and SHA256SUMS beside them; the history records each report file's digest, so `drill history
// --verify` passes on the untouched report and fails, naming the file, after one byte of report.md
// changed or junit.xml is gone. The history's margin of a pass is time to spare, never negative.
func TestDrillEvidence(t *testing.T) {
	drill := drillFleet(t, "5m")
	dir := filepath.Dir(drill)
	fleet := filepath.Join(dir, "fleet.yaml")
	out := filepath.Join(dir, "report")
	r := cli(t, nil, "drill", "run", drill, "--report", out, "--approve-all")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Evidence struct {
			Version  string `json:"lifeboat_version"`
			Manifest struct {
				Path, Digest string
			} `json:"manifest"`
			DrillFile struct{ Path, Digest string } `json:"drill_file"`
			FleetFile struct{ Path, Digest string } `json:"fleet_file"`
			Operator  string                        `json:"operator"`
			Approvals []struct {
				Step     string `json:"step"`
				Approved bool   `json:"approved"`
				By       string `json:"by"`
				Via      string `json:"via"`
				At       string `json:"at"`
			} `json:"approvals"`
			Started  string   `json:"started"`
			Finished string   `json:"finished"`
			RTO      float64  `json:"rto_s"`
			Recovery *float64 `json:"recovery_s"`
			Verdict  string   `json:"verdict"`
		} `json:"evidence"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("report.json: %v", err)
	}
	ev := rep.Evidence
	manifestPath := ev.Manifest.Path
	if !filepath.IsAbs(manifestPath) {
		t.Fatalf("manifest path %q", manifestPath)
	}
	want := map[string]string{"manifest": sha256File(t, manifestPath), "drill": sha256File(t, drill), "fleet": sha256File(t, fleet)}
	host, _ := os.Hostname()
	if ev.Version == "" || ev.Version == "unknown" || ev.Manifest.Digest != want["manifest"] || ev.DrillFile.Digest != want["drill"] || ev.FleetFile.Digest != want["fleet"] ||
		!strings.HasSuffix(ev.Operator, "@"+host) || ev.Started == "" || ev.Finished == "" || ev.RTO != 300 || ev.Recovery == nil || ev.Verdict != "PASS" {
		t.Fatalf("evidence %+v, want digests %v", ev, want)
	}
	if len(ev.Approvals) != 1 || a0(ev.Approvals).Step != "evacuate" || !a0(ev.Approvals).Approved || a0(ev.Approvals).Via != "--approve-all" || a0(ev.Approvals).By != ev.Operator || a0(ev.Approvals).At == "" {
		t.Fatalf("approvals %+v", ev.Approvals)
	}
	approval := fmt.Sprintf("evacuate approved by %s via --approve-all at ", ev.Operator)

	// report.md
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, s := range []string{"## Evidence", want["manifest"], want["drill"], want["fleet"], ev.Operator, approval, "| Lifeboat version | " + ev.Version, "| RTO | 300 s |"} {
		if !strings.Contains(mdText(md), s) {
			t.Errorf("report.md has no %q", s)
		}
	}
	// report.html, parsed
	doc := htmlDoc(t, filepath.Join(out, "report.html"))
	cells := map[string]string{}
	for _, td := range find(doc, func(n *html.Node) bool { return n.Data == "td" && attr(n, "data-key") != "" }) {
		cells[attr(td, "data-key")] = text(td)
	}
	if !strings.HasPrefix(cells["lifeboat.manifest"], want["manifest"]) || !strings.HasPrefix(cells["lifeboat.drill_file"], want["drill"]) ||
		!strings.HasPrefix(cells["lifeboat.fleet_file"], want["fleet"]) || cells["lifeboat.operator"] != ev.Operator ||
		!strings.HasPrefix(cells["lifeboat.approval.1"], approval) || cells["lifeboat.version"] != ev.Version {
		t.Errorf("report.html evidence %v", cells)
	}
	// junit.xml properties
	var ju struct {
		Suites []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	jb, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err := xml.Unmarshal(jb, &ju); err != nil || len(ju.Suites) == 0 {
		t.Fatalf("junit.xml: %v", err)
	}
	props := map[string]string{}
	for _, p := range ju.Suites[0].Props {
		props[p.Name] = p.Value
	}
	if !strings.HasPrefix(props["lifeboat.manifest"], want["manifest"]) || !strings.HasPrefix(props["lifeboat.fleet_file"], want["fleet"]) ||
		!strings.HasPrefix(props["lifeboat.approval.1"], approval) || props["lifeboat.operator"] != ev.Operator {
		t.Errorf("junit.xml properties %v", props)
	}
	// SHA256SUMS, as sha256sum -c reads it
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "report.md", "report.html", "junit.xml"} {
		line := strings.TrimPrefix(sha256File(t, filepath.Join(out, name)), "sha256:") + "  " + name + "\n"
		if !strings.Contains(string(sums), line) {
			t.Errorf("SHA256SUMS has no line %q:\n%s", line, sums)
		}
	}
	// the history records the digests
	hj := cli(t, nil, "drill", "history", "--fleet", fleet, "-o", "json")
	var hv struct {
		Runs []struct {
			Reports []struct {
				Name, Digest string
			} `json:"reports"`
			Evidence *struct {
				Manifest struct{ Digest string } `json:"manifest"`
			} `json:"evidence"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(hj.stdout), &hv); err != nil || len(hv.Runs) != 1 || hv.Runs[0].Evidence == nil || hv.Runs[0].Evidence.Manifest.Digest != want["manifest"] ||
		len(hv.Runs[0].Reports) != 4 || hv.Runs[0].Reports[1].Name != "report.md" || hv.Runs[0].Reports[1].Digest != sha256File(t, filepath.Join(out, "report.md")) {
		t.Fatalf("history json %v: %s", err, hj.stdout)
	}
	// a pass's margin is time to spare
	h := cli(t, nil, "drill", "history", "--fleet", fleet)
	if h.code != 0 || !regexp.MustCompile(`PASS\s+\d+\.\d\ds\s+300s\s+\d+\.\d\ds spare`).MatchString(h.stdout) || strings.Contains(h.stdout, "-2") {
		t.Fatalf("history:\n%s", h.stdout)
	}

	// --verify: untouched
	v := cli(t, nil, "drill", "history", "--fleet", fleet, "--verify", out)
	if v.code != 0 || !strings.Contains(v.stdout, "Verified") {
		t.Fatalf("verify untouched: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	// one byte of report.md changed
	mdPath := filepath.Join(out, "report.md")
	md[len(md)/2] ^= 0x01
	if err := os.WriteFile(mdPath, md, 0o644); err != nil {
		t.Fatal(err)
	}
	v = cli(t, nil, "drill", "history", "--fleet", fleet, "--verify", out)
	if v.code != 1 || !strings.Contains(v.stderr, "report.md differs") || strings.Contains(v.stderr, "report.html") || strings.Contains(v.stderr, "junit.xml") {
		t.Fatalf("verify after a byte of report.md changed: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	// a file gone, and report.json rewritten (the run is still found by the others' digests)
	md[len(md)/2] ^= 0x01
	os.WriteFile(mdPath, md, 0o644)
	os.Remove(filepath.Join(out, "junit.xml"))
	os.WriteFile(filepath.Join(out, "report.json"), []byte(`{"drill":"lose-eu-west-1","started":"2020-01-01T00:00:00Z","ok":true}`), 0o644)
	v = cli(t, nil, "drill", "history", "--fleet", fleet, "--verify", out, "-o", "json")
	var vj struct {
		OK    bool `json:"ok"`
		Files []struct {
			Name, Status string
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(v.stdout), &vj); v.code != 1 || err != nil || vj.OK || !strings.Contains(v.stderr, "junit.xml missing") || !strings.Contains(v.stderr, "report.json differs") {
		t.Fatalf("verify with junit.xml gone: exit %d %v\n%s%s", v.code, err, v.stdout, v.stderr)
	}
	status := map[string]string{}
	for _, f := range vj.Files {
		status[f.Name] = f.Status
	}
	if status["report.md"] != "ok" || status["report.html"] != "ok" || status["junit.xml"] != "missing" || status["report.json"] != "differs" {
		t.Fatalf("files %v", status)
	}
}

func a0[T any](xs []T) T { return xs[0] }

// TestDrillMissedRecoveryNamesBlocker: when recovery is never reached, the summary names the
// class, region and weight that kept it from being reached (not only "no moment where every
// class was on warm receivers"), and the failed requests' reasons are in report.md and
// report.html (parsed), not only in report.json.
func TestDrillMissedRecoveryNamesBlocker(t *testing.T) {
	drill := drillFleet(t, "5m")
	dir := filepath.Dir(drill)
	// a batch class served by us-west-2 alone, at an endpoint that answers every request 503 with
	// a reason: the drill's sampled requests of that class fail
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error": "queue full | try later"}`)
	}))
	t.Cleanup(busy.Close)
	fleet := filepath.Join(dir, "fleet.yaml")
	fb, _ := os.ReadFile(fleet)
	fs := strings.Replace(string(fb), "tenants:\n", "  us-west-2: {replica: "+filepath.Join(dir, "replicas", "us-east-1")+", endpoint: \""+busy.URL+"\", capacity: {replicas: 4, prefill_tokens_per_s: 8000}}\ntenants:\n  batch: [us-west-2]\n", 1)
	if err := os.WriteFile(fleet, []byte(fs), 0o644); err != nil {
		t.Fatal(err)
	}
	router := &filerouter.Router{Path: filepath.Join(dir, "weights.json")}
	rs, err := router.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs.Weights["batch"] = map[string]int{"us-west-2": 100}
	if err := router.Apply(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	// us-east-1's candidate never comes up: the global class keeps its weight there
	if err := os.WriteFile(drill, []byte(`name: blocked
fleet: fleet.yaml
lose: eu-west-1
steps: [boot, evacuate, traffic, teardown]
lock_ttl: 2s
traffic: {requests: 3, interval: 200ms, max_tokens: 2, timeout: 5s}
faults:
  - {kind: boot-fails, region: us-east-1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	r := cli(t, nil, "drill", "run", drill, "--report", out)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	blocker := "class global had weight 50 on us-east-1, which is not a warm receiver (its candidate was judged EXITED)"
	var rep struct {
		Summary string `json:"summary"`
		SLA     struct {
			Blocked string `json:"blocked"`
		} `json:"sla"`
		Requests []struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"requests"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Summary, blocker) || !strings.Contains(rep.SLA.Blocked, blocker) || !strings.Contains(r.stderr, blocker) {
		t.Fatalf("the summary does not name the blocker %q:\nsummary: %s\nblocked: %s\nstderr: %s", blocker, rep.Summary, rep.SLA.Blocked, r.stderr)
	}
	var reasons []string
	for _, q := range rep.Requests {
		if !q.OK {
			reasons = append(reasons, q.Error)
		}
	}
	if len(reasons) == 0 {
		t.Fatalf("no failed request:\n%s", b)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "## Failed requests") || !strings.Contains(mdText(md), blocker) {
		t.Errorf("report.md has no failed requests section or no blocker:\n%s", md)
	}
	doc := htmlDoc(t, filepath.Join(out, "report.html"))
	var cells []string
	for _, td := range find(doc, func(n *html.Node) bool { return n.Data == "td" && attr(n, "class") == "reason" }) {
		cells = append(cells, text(td))
	}
	summary := find(doc, func(n *html.Node) bool { return n.Data == "p" && attr(n, "class") == "summary" })
	if len(summary) != 1 || !strings.Contains(text(summary[0]), blocker) {
		t.Errorf("report.html summary does not name the blocker")
	}
	for _, reason := range reasons {
		if !strings.Contains(mdText(md), reason) {
			t.Errorf("report.md lacks the reason %q", reason)
		}
		found := false
		for _, c := range cells {
			found = found || c == reason
		}
		if !found {
			t.Errorf("report.html lacks the reason %q (cells %q)", reason, cells)
		}
	}
}

// mdText is Markdown with its backslash escapes undone (what a reader sees).
func mdText(md []byte) string { return regexp.MustCompile(`\\(.)`).ReplaceAllString(string(md), "$1") }
