//go:build integration

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"

	"lifeboat/internal/base/redact"
	"lifeboat/internal/sample"
)

// escapePayload is every escape form a hostile peer could hope an encoder or a redaction pass
// turns back into structure: percent-encoded (once and twice) and entity-encoded tags, a live
// script that would paint the badge green, a JSON string end with forged keys, a CDATA end with
// a forged element, Markdown and HTML specials, terminal escapes (clear screen, set title, C1
// CSI), line and paragraph separators, bidi override, and the &#34; a plain error once became
// &#REDACTED; through.
// It fits the 200 runes a peer's line is cut to.
const escapePayload = "<script>document.body.textContent='PASS'</script><b id=pwn>%3Cscript%3E %253Cscript%253E &lt;i&gt; &#34; " +
	"\", \"pwnkey\": \"x ]]><pwn/><![CDATA[ \x1b[2J\x1b]0;t\x07 \u009b1m \u2028\u2029\u202e | * _ ~~s~~ `c` [l](javascript:x) \\"

// xmlSafePayload is escapePayload without the characters XML 1.0 cannot carry (an S3 endpoint's
// <Message> must parse as XML for the client to read it).
var xmlSafePayload = strings.NewReplacer("\x1b", "", "\x07", "").Replace(escapePayload)

// hostilePeer is a loopback HTTP server answering every request with status and body.
func hostilePeer(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A hostile HTTP router (its 500 body, also as a hostile replica for probe), a hostile S3
// endpoint (its error <Message>), a hostile frontend (503 body, X-Served-By) and a dead router
// reach every command and output format that prints them — check, failover plan and status,
// verify, probe, drill run (-o text, json, yaml, junit) and the drill's report.html, report.json,
// report.md and junit.xml — and no peer text becomes structure: no ESC or other control reaches
// the terminal, every JSON and YAML document parses as one document with no forged key (and, in
// YAML, no anchor, alias or tag a peer wrote), every JUnit document is
// well-formed with no forged element, report.html (parsed by an HTML parser) runs only
// Lifeboat's own script and keeps its FAIL badge, report.md has no live tag, link or cell break.
func TestNoPeerTextBecomesStructure(t *testing.T) {
	l, m := fixture(t, sample.Options{})
	dir := t.TempDir()
	router := hostilePeer(t, 500, "text/plain", escapePayload+"\n"+escapePayload)
	// A hostile frontend: its 503 body and its X-Served-By header carry the payload.
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Served-By", strings.NewReplacer("\x1b", "", "\x07", "", "\u2028", "", "\u2029", "", "\u009b", "").Replace(escapePayload))
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, escapePayload)
	}))
	t.Cleanup(frontend.Close)
	// A well-behaved http router (so that the drill's traffic reaches the hostile frontend).
	goodRouter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.Header().Set("ETag", `"2"`)
			return
		}
		w.Header().Set("ETag", `"1"`)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/eu") {
			io.WriteString(w, `{"weights": {"eu-west-1": 50, "eu-central-1": 50}}`)
			return
		}
		io.WriteString(w, `{"weights": {"us-east-1": 50, "eu-west-1": 30, "eu-central-1": 20}}`)
	}))
	t.Cleanup(goodRouter.Close)
	var msg bytes.Buffer
	xml.EscapeText(&msg, []byte(xmlSafePayload))
	s3 := hostilePeer(t, 403, "application/xml", "<Error><Code>AccessDenied</Code><Message>"+msg.String()+"</Message><RequestId>1</RequestId></Error>")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	env := []string{"AWS_ACCESS_KEY_ID=AKIAESCAPETEST", "AWS_SECRET_ACCESS_KEY=escape-test-secret-key", "AWS_EC2_METADATA_DISABLED=true"}
	s3URL := func(prefix string) string { return "s3://bucket/" + prefix + "?region=us-east-1&endpoint=" + s3 }

	replicas := map[string]string{}
	for _, n := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
		replicas[n] = filepath.Join(dir, "replicas", n)
		if r := lifeboat(t, "replicate", "--manifest", m, "--from", l.Root, "--to", replicas[n]); r.code != 0 {
			t.Fatalf("replicate: %s", r.stderr)
		}
	}
	fleet := func(name, routerURL, state string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "model: {name: llama-demo, manifest: %s}\nregions:\n", m)
		for _, n := range []string{"us-east-1", "eu-west-1", "eu-central-1"} {
			fmt.Fprintf(&b, "  %s: {replica: %s, capacity: {replicas: 4, prefill_tokens_per_s: 8000}}\n", n, replicas[n])
		}
		fmt.Fprintf(&b, `tenants: {eu-only: [eu-west-1, eu-central-1], global: [us-east-1, eu-west-1, eu-central-1]}
router: {driver: http, url: %q, backends: {eu-only: eu, global: global}, frontends: {eu-only: %q, global: %q}, timeout: 2s}
state: %q
sla: {rto: 30m}
`, routerURL, frontend.URL, frontend.URL, state)
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, name+"-drill.yaml")
		if err := os.WriteFile(d, []byte("name: lose-eu\nfleet: "+name+".yaml\nlose: eu-west-1\nlock_ttl: 2s\nsteps: [traffic, evacuate]\ntraffic: {requests: 2, interval: 0s, max_tokens: 2, timeout: 5s}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostileRouter := fleet("router", router, filepath.Join(dir, "state"))
	deadRouter := fleet("dead", dead, filepath.Join(dir, "state"))
	hostileFrontend := fleet("front", goodRouter.URL, filepath.Join(dir, "state"))
	if err := os.WriteFile(strings.TrimSuffix(hostileFrontend, ".yaml")+"-drill.yaml", []byte("name: lose-eu\nfleet: front.yaml\nlose: eu-west-1\nlock_ttl: 2s\nsteps: [traffic]\ntraffic: {requests: 2, interval: 0s, max_tokens: 2, timeout: 5s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	report2 := filepath.Join(dir, "report-frontend")
	replicas["eu-central-1"] = s3URL("llama/")
	hostileStore := fleet("store", router, s3URL("state"))
	report := filepath.Join(dir, "report")

	runs := [][]string{
		{"check", "--fleet", hostileStore},
		{"failover", "plan", "--fleet", hostileRouter, "--evacuate", "eu-west-1"},
		{"failover", "plan", "--fleet", deadRouter, "--evacuate", "eu-west-1"},
		{"failover", "status", "--fleet", hostileStore},
		{"verify", "--manifest", m, s3URL("llama/")},
		{"probe", router, "--served-model-name", "x", "--timeout", "2s"},
		{"drill", "run", strings.TrimSuffix(deadRouter, ".yaml") + "-drill.yaml", "--approve-all"},
		{"drill", "run", strings.TrimSuffix(hostileRouter, ".yaml") + "-drill.yaml", "--report", report, "--approve-all"},
		{"drill", "run", strings.TrimSuffix(hostileFrontend, ".yaml") + "-drill.yaml", "--report", report2, "--approve-all"},
	}
	if n := utf8.RuneCountInString(escapePayload); n > 199 {
		t.Fatalf("the payload is %d runes: a peer's line is cut at 200", n)
	}
	junitOK := map[string]bool{"check": true, "verify": true, "drill": true}
	sawPayload := false
	for _, args := range runs {
		formats := []string{"text", "json", "yaml"}
		if junitOK[args[0]] {
			formats = append(formats, "junit")
		}
		for _, o := range formats {
			a := append(append([]string{}, args...), "-o", o)
			r := cli(t, env, a...)
			if r.code == 0 {
				t.Errorf("%v: exit 0 against hostile peers", a)
			}
			all := r.stdout + r.stderr
			if os.Getenv("LIFEBOAT_ESCAPE_DEBUG") != "" {
				t.Logf("%v: exit %d\n%s", a, r.code, all)
			}
			sawPayload = sawPayload || strings.Contains(all, "pwnkey")
			checkTerminal(t, fmt.Sprint(a), all)
			switch o {
			case "json":
				checkJSON(t, fmt.Sprint(a), []byte(r.stdout))
			case "yaml":
				checkYAML(t, fmt.Sprint(a), []byte(r.stdout))
			case "junit":
				checkXML(t, fmt.Sprint(a), []byte(r.stdout))
			}
			if strings.Contains(strings.Join(args, " "), "dead") && strings.Contains(all, "REDACTED") {
				t.Errorf("%v: a plain unreachable router's output was redacted:\n%s", a, all)
			}
		}
	}
	if !sawPayload {
		t.Fatal("no command showed any of the hostile peers' text: the test proves nothing")
	}

	// The drill's report files (of its last run), with the hostile frontend's text. (A drill
	// whose router cannot be read refuses to start, so the hostile router's drill writes none;
	// if it does, it is checked too.)
	checkReportDir(t, report2)
	if _, err := os.Stat(filepath.Join(report, "report.json")); err == nil {
		checkReportDir(t, report)
	}
}

func checkReportDir(t *testing.T, report string) {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(report, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rj := read("report.json")
	if !bytes.Contains(rj, []byte("pwnkey")) {
		t.Fatalf("the peer's text is not in %s/report.json: the test proves nothing\n%s", report, rj)
	}
	checkJSON(t, "report.json", rj)
	var rep struct {
		OK      bool   `json:"ok"`
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal(rj, &rep); err != nil || rep.OK || rep.Verdict == "PASS" {
		t.Errorf("report.json: ok %v verdict %q (%v)", rep.OK, rep.Verdict, err)
	}
	checkXML(t, "junit.xml", read("junit.xml"))
	checkHTML(t, read("report.html"), rep.Verdict)
	checkMarkdown(t, read("report.md"))
	for _, name := range []string{"report.json", "junit.xml", "report.html", "report.md"} {
		checkTerminal(t, name, string(read(name)))
	}
}

// checkTerminal: nothing a terminal acts on.
func checkTerminal(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u2028", "\u2029", "\u202e", "\r"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s: %q reached the output", what, bad)
		}
	}
}

// checkJSON: one document, no forged key.
func checkJSON(t *testing.T, what string, b []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: not JSON: %v\n%s", what, err, b)
		return
	}
	if dec.More() {
		t.Errorf("%s: more than one JSON document:\n%s", what, b)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "pwnkey" || strings.Contains(k, "script") {
					t.Errorf("%s: a peer's text became the JSON key %q", what, k)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}

// checkYAML: one YAML document, a mapping with exit_code, no forged key, and nothing but plain
// data — no anchor, alias, or tag beyond the core schema's (a peer's "&a", "*a" or "!!binary"
// stays text).
func checkYAML(t *testing.T, what string, b []byte) *yaml.Node {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		t.Errorf("%s: not YAML: %v\n%s", what, err, b)
		return nil
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		t.Errorf("%s: more than one YAML document (%v):\n%s", what, err, b)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		t.Errorf("%s: not a YAML mapping:\n%s", what, b)
		return nil
	}
	core := map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}
	var walk func(n *yaml.Node, key bool)
	walk = func(n *yaml.Node, key bool) {
		switch {
		case n.Kind == yaml.AliasNode || n.Anchor != "":
			t.Errorf("%s: an anchor or alias in the output (line %d)", what, n.Line)
		case !core[n.ShortTag()]:
			t.Errorf("%s: tag %s at line %d", what, n.ShortTag(), n.Line)
		case key && (n.Value == "pwnkey" || n.Value == "forged" || strings.Contains(n.Value, "script")):
			t.Errorf("%s: a peer's text became the YAML key %q", what, n.Value)
		}
		for i, c := range n.Content {
			walk(c, n.Kind == yaml.MappingNode && i%2 == 0)
		}
	}
	walk(doc.Content[0], false)
	var top map[string]any
	if err := doc.Decode(&top); err != nil || top["exit_code"] == nil {
		t.Errorf("%s: no exit_code in the YAML document (%v)", what, err)
	}
	return doc.Content[0]
}

// yamlPayload is text YAML would read as structure if it were written as it is: a newline and
// a forged key, a document start and end, a sequence entry, an anchor and its alias, a tag, a
// comment, a complex key, a flow mapping and sequence, a directive, quotes, block indicators, a
// trailing space and a terminal escape.
const yamlPayload = "INC-9\nforged: pwned\n--- \n- &a x\n*a\n!!binary aGk= #c\n? k\n: v\n{pwnkey: 1} [x] @at `bt` %YAML 1.2\n... 'q' \"dq\" | > \x1b[2J "

// A reason is the operator's text, kept whole in the journal (newlines too) and shown in status
// -o yaml on one line, as all text read back from the state store is (docs/security.md):
// YAML-special text in it stays one string — it reads back as the journal's reason rendered on
// one line (redact.Sanitize), with no forged key, document, anchor or tag — in the latest run
// and in the list of recent runs; -o json and the text table are safe too.
func TestYAMLKeepsHostileReasonText(t *testing.T) {
	faultDir(t)
	if r := cli(t, nil, "failover", "run", "--fleet", "fleet.yaml", "--region", "eu-west-1", "--signals", "warm.json", "--yes", "--reason", yamlPayload); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	want := redact.Sanitize(yamlPayload, maxPeerText)
	if strings.ContainsAny(want, "\n\x1b") || !strings.Contains(want, "forged: pwned") {
		t.Fatalf("the one-line rendering of the payload is %q", want)
	}
	r := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "yaml")
	root := checkYAML(t, "status -o yaml", []byte(r.stdout))
	var doc struct {
		Reason string `yaml:"reason"`
		Runs   []struct {
			Reason string `yaml:"reason"`
		} `yaml:"runs"`
	}
	if root == nil || root.Decode(&doc) != nil {
		t.Fatalf("status -o yaml:\n%s", r.stdout)
	}
	if doc.Reason != want || len(doc.Runs) != 1 || doc.Runs[0].Reason != want {
		t.Errorf("the reason does not read back as the one string it was: %q, runs %+v, want %q\n%s", doc.Reason, doc.Runs, want, r.stdout)
	}
	checkTerminal(t, "status -o yaml", r.stdout)
	j := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml", "-o", "json")
	checkJSON(t, "status -o json", []byte(j.stdout))
	checkTerminal(t, "status -o json", j.stdout)
	txt := cli(t, nil, "failover", "status", "--fleet", "fleet.yaml")
	checkTerminal(t, "status", txt.stdout)
	if strings.Contains(txt.stdout, "\nforged: pwned") {
		t.Errorf("the reason's newline reached the text output:\n%s", txt.stdout)
	}
}

// checkXML: well-formed, no forged element.
func checkXML(t *testing.T, what string, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("%s: not well-formed XML: %v\n%s", what, err, b)
			return
		}
		if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "pwn" || se.Name.Local == "script") {
			t.Errorf("%s: a peer's text became the element <%s>", what, se.Name.Local)
		}
	}
}

// checkHTML parses report.html: one script, Lifeboat's, allowed by its hash and nothing else;
// no element a peer wrote; the badge says the verdict.
func checkHTML(t *testing.T, b []byte, verdict string) {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("report.html: %v", err)
	}
	var scripts []string
	csp, badge := "", ""
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			attr := map[string]string{}
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
			}
			switch {
			case n.Data == "script":
				var s strings.Builder
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					s.WriteString(c.Data)
				}
				scripts = append(scripts, s.String())
			case n.Data == "meta" && attr["http-equiv"] == "Content-Security-Policy":
				csp = attr["content"]
			case attr["id"] == "pwn" || n.Data == "pwn" || (n.Data == "b" && attr["id"] != ""):
				t.Errorf("report.html: a peer's text became the element <%s id=%q>", n.Data, attr["id"])
			case attr["class"] == "verdict" && n.FirstChild != nil:
				badge = n.FirstChild.Data
			}
			for k := range attr {
				if strings.HasPrefix(k, "on") {
					t.Errorf("report.html: event handler attribute %s on <%s>", k, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(scripts) != 1 {
		t.Fatalf("report.html has %d scripts, want Lifeboat's one", len(scripts))
	}
	sum := sha256.Sum256([]byte(scripts[0]))
	src := regexp.MustCompile(`script-src ([^;]*)`).FindStringSubmatch(csp)
	if src == nil || strings.TrimSpace(src[1]) != "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'" {
		t.Errorf("report.html: CSP %q does not allow exactly Lifeboat's script", csp)
	}
	if badge != verdict {
		t.Errorf("report.html: badge %q, verdict %q", badge, verdict)
	}
}

// checkMarkdown: no live tag, entity, link or image, and a table row keeps its cells.
func checkMarkdown(t *testing.T, b []byte) {
	t.Helper()
	s := string(b)
	for _, re := range []string{`(^|[^\\])<[A-Za-z/!]`, `(^|[^\\])&#?[A-Za-z0-9]+;`, `(^|[^\\])\]\(`, "(^|[^\\\\])~~"} {
		if m := regexp.MustCompile(re).FindString(s); m != "" {
			t.Errorf("report.md: live markup %q (%s)", m, re)
		}
	}
	pipe := regexp.MustCompile(`(^|[^\\])\|`)
	header := -1 // the unescaped | of the current table's header row
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = -1
			continue
		}
		n := len(pipe.FindAllString(strings.ReplaceAll(line, "||", "| |"), -1))
		if header < 0 {
			header = n
		} else if n != header {
			t.Errorf("report.md: a row with %d cell borders in a table of %d (a peer's | split it): %s", n, header, line)
		}
	}
}
