package modelrepo

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// SecretFinding is a secret value found in a deployment file: where it is and what kind of
// secret it looks like, never the value itself (a finding is printed, logged and reported).
type SecretFinding struct {
	Line  int    // 1-based line of the value
	Field string // where, e.g. "Secret hf-token-secret, stringData.token"
	Why   string // what it looks like, e.g. "a Hugging Face token (hf_…)"
}

// String is "line N: WHY (FIELD)". No "FIELD: …" pair: the output's redaction would take a
// field named like a credential (stringData.token, HF_TOKEN) for one and blank the reason.
func (f SecretFinding) String() string {
	return fmt.Sprintf("line %d: %s", f.Line, f.Describe())
}

// Describe is the finding without its line: "WHY (FIELD)".
func (f SecretFinding) Describe() string {
	if f.Field == "" {
		return f.Why
	}
	return f.Why + " (" + f.Field + ")"
}

// FindSecrets reports the secret values a deployment file holds. Secrets must never enter a DR
// manifest: a deployment file is embedded in the manifest and copied to every replica store and
// into the Kubernetes launcher's ConfigMap. It reports
//
//   - every key of a Kubernetes Secret's data or stringData (in any document of a multi-document
//     file, and in the items of a kind: List), whatever its value;
//   - a container env value: whose name says it is a credential (…_TOKEN, …_SECRET, …_PASSWORD,
//     …_API_KEY, …_ACCESS_KEY, …_PRIVATE_KEY, …_CREDENTIALS) and whose value is a literal of
//     8 or more characters (not a $(VAR) reference, not a path), or whose value looks like a
//     generated token whatever its name (see looksGenerated);
//   - anywhere in the file, YAML or not (a Dockerfile ENV, an --api-key argument, a Helm
//     template), a literal of a well-known token format (see tokenFormats).
//
// A file that is not YAML is scanned line by line for the token formats only. Findings are
// sorted by line, one per line and field.
func FindSecrets(data []byte) []SecretFinding {
	var out []SecretFinding
	seen := map[int]bool{}
	add := func(f SecretFinding) {
		if !seen[f.Line] {
			seen[f.Line] = true
			out = append(out, f)
		}
	}
	for _, f := range yamlSecrets(data) {
		add(f)
	}
	lines, _ := ScanSecretLines(bytes.NewReader(data))
	for _, f := range lines {
		add(f)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// ScanSecretLines reads r line by line for literals of the well-known token formats — the scan
// FindSecrets runs on every file, for files too large to parse whole. A line longer than
// MaxDeployFileBytes is an error.
func ScanSecretLines(r io.Reader) ([]SecretFinding, error) {
	var out []SecretFinding
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxDeployFileBytes+1)
	for line := 1; sc.Scan(); line++ {
		if why := tokenFormat(sc.Text()); why != "" {
			out = append(out, SecretFinding{Line: line, Why: why})
		}
	}
	return out, sc.Err()
}

// yamlSecrets walks every document of a YAML (or JSON) file; nil when it does not parse (the
// line scan still runs; lint reports the syntax error).
func yamlSecrets(data []byte) (out []SecretFinding) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	if len(data) > MaxDeployFileBytes {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return out // at io.EOF, or a syntax error: the documents before it were still read
		}
		w := secretWalker{}
		w.walk(&n, "", 0)
		out = append(out, w.found...)
	}
}

type secretWalker struct {
	found []SecretFinding
}

// walk visits every mapping; obj is the innermost Kubernetes object ("Kind name") around it.
func (w *secretWalker) walk(n *yaml.Node, obj string, depth int) {
	n = deref(n)
	if n == nil || depth > 100 {
		return
	}
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			w.walk(c, obj, depth+1)
		}
	case yaml.MappingNode:
		kind := scalarValue(n, "kind")
		if kind != "" {
			obj = kind
			if _, meta := mapGet(n, "metadata"); meta != nil {
				if name := scalarValue(meta, "name"); name != "" {
					obj += " " + name
				}
			}
		}
		if kind == "Secret" {
			w.secretData(n, obj)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], deref(n.Content[i+1])
			if k.Kind == yaml.ScalarNode && k.Value == "env" && v != nil && v.Kind == yaml.SequenceNode {
				w.env(v, obj)
			}
			w.walk(v, obj, depth+1)
		}
	}
}

// secretData reports every key of a Secret's data and stringData: their values are the secret,
// whatever they look like (a placeholder today is a token after the next edit).
func (w *secretWalker) secretData(n *yaml.Node, obj string) {
	for _, field := range []string{"data", "stringData"} {
		k, v := mapGet(n, field)
		if k == nil || v == nil {
			continue
		}
		if v.Kind != yaml.MappingNode {
			if kd, _ := resolveScalar(v); v.Kind == yaml.ScalarNode && (kd == kNull || v.Value == "") {
				continue
			}
			w.found = append(w.found, SecretFinding{Line: v.Line, Field: obj + ", " + field, Why: "a Secret's " + field})
			continue
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			key := v.Content[i]
			if val := deref(v.Content[i+1]); val != nil && val.Kind == yaml.ScalarNode {
				if kd, _ := resolveScalar(val); kd == kNull || val.Value == "" {
					continue
				}
			}
			w.found = append(w.found, SecretFinding{Line: key.Line, Field: obj + ", " + field + "." + key.Value, Why: "a Secret's " + field + " value"})
		}
	}
}

// env reports the literal env values that are credentials.
func (w *secretWalker) env(seq *yaml.Node, obj string) {
	for _, e := range seq.Content {
		e = deref(e)
		if e == nil || e.Kind != yaml.MappingNode {
			continue
		}
		name := scalarValue(e, "name")
		_, v := mapGet(e, "value")
		if v == nil || v.Kind != yaml.ScalarNode || v.Value == "" {
			continue
		}
		field := "env " + name + " value"
		if obj != "" {
			field = obj + ", " + field
		}
		switch {
		case tokenFormat(v.Value) != "":
			w.found = append(w.found, SecretFinding{Line: v.Line, Field: field, Why: tokenFormat(v.Value)})
		case CredentialName(name) && literalCredential(v.Value):
			w.found = append(w.found, SecretFinding{Line: v.Line, Field: field, Why: "a literal value of a credential variable (" + name + ")"})
		case looksGenerated(v.Value):
			w.found = append(w.found, SecretFinding{Line: v.Line, Field: field, Why: "a high-entropy literal that looks like a generated token"})
		}
	}
}

func scalarValue(m *yaml.Node, key string) string {
	_, v := mapGet(m, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// credentialLast are the last words of an environment variable name that say its value is a
// credential; credentialKeyBefore the words before a last word KEY that do. MAX_TOKENS,
// TOKENIZERS_PARALLELISM and HF_HUB_ENABLE_HF_TRANSFER are not credentials; HF_TOKEN,
// VLLM_API_KEY and AWS_SECRET_ACCESS_KEY are.
var (
	credentialLast      = map[string]bool{"TOKEN": true, "SECRET": true, "PASSWORD": true, "PASSWD": true, "APIKEY": true, "CREDENTIALS": true, "CREDENTIAL": true}
	credentialKeyBefore = map[string]bool{"API": true, "ACCESS": true, "SECRET": true, "PRIVATE": true, "AUTH": true, "SIGNING": true, "ENCRYPTION": true, "ACCOUNT": true}
)

// CredentialName reports whether an environment variable's name says it holds a credential.
func CredentialName(name string) bool {
	words := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	if credentialLast[last] {
		return true
	}
	return last == "KEY" && len(words) > 1 && credentialKeyBefore[words[len(words)-2]]
}

// varRef is a reference to another variable: $(VAR) as the kubelet expands it, ${VAR} and $VAR as
// envsubst and the LeaderWorkerSet docs' manifests leave them for a template step.
var varRef = regexp.MustCompile(`^\$(?:[({][A-Za-z_][A-Za-z0-9_]*[)}]|[A-Za-z_][A-Za-z0-9_]*)$`)

// literalCredential reports whether a credential variable's value is the credential itself:
// 8 characters or more, not a $(VAR), ${VAR} or $VAR reference, not a path or URL to where it is kept, not a
// boolean or number (USE_AUTH_TOKEN: "true").
func literalCredential(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 8 || varRef.MatchString(v) || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.Contains(v, "://") {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "enabled", "disabled":
		return false
	}
	return true
}

// looksGenerated reports whether a value has the shape of a generated token: 32 characters or
// more of one word in the base64/base62 alphabets, upper- and lower-case letters and digits mixed,
// and at least 4.0 bits of entropy per character. Hex strings (commit hashes, digests), UUIDs,
// model ids, image references, paths and URLs ("/" or ".") and words in prose are not.
func looksGenerated(v string) bool {
	if len(v) < 32 || len(v) > 4096 || strings.ContainsAny(v, "/. \t\n:") {
		return false
	}
	var up, low, dig bool
	for _, r := range v {
		switch {
		case r >= 'A' && r <= 'Z':
			up = true
		case r >= 'a' && r <= 'z':
			low = true
		case r >= '0' && r <= '9':
			dig = true
		case r == '+' || r == '=' || r == '_' || r == '-':
		default:
			return false
		}
	}
	return up && low && dig && entropy(v) >= 4.0
}

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h
}

// tokenFormat is one well-known credential format: a prefix its issuer puts on every token, so
// an ordinary value does not match. Each needs letters of both cases and digits in its body where
// the real tokens have them, so placeholders ("hf_xxxx…", "sk-your-key-here") do not match.
type tokenFormatRule struct {
	re    *regexp.Regexp
	mixed bool // the body must mix upper- and lower-case letters
	what  string
}

var tokenFormats = sync.OnceValue(func() []tokenFormatRule {
	b := `(?:^|[^A-Za-z0-9_])` // a token starts at a word boundary
	return []tokenFormatRule{
		{regexp.MustCompile(b + `(hf_[A-Za-z0-9]{30,})`), true, "a Hugging Face token (hf_…)"},
		{regexp.MustCompile(b + `(sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})`), true, "an OpenAI/Anthropic-style API key (sk-…)"},
		{regexp.MustCompile(`(?:^|[^A-Z0-9])((?:AKIA|ASIA)[A-Z0-9]{16})(?:$|[^A-Z0-9])`), false, "an AWS access key id (AKIA…/ASIA…)"},
		{regexp.MustCompile(b + `(gh[pousr]_[A-Za-z0-9]{36,})`), false, "a GitHub token (ghp_…)"},
		{regexp.MustCompile(b + `(github_pat_[A-Za-z0-9_]{40,})`), false, "a GitHub token (github_pat_…)"},
		{regexp.MustCompile(b + `(glpat-[A-Za-z0-9_-]{20,})`), false, "a GitLab token (glpat-…)"},
		{regexp.MustCompile(b + `(xox[abposr]-[A-Za-z0-9-]{10,})`), false, "a Slack token (xox…-)"},
		{regexp.MustCompile(b + `(AIza[0-9A-Za-z_-]{35})`), false, "a Google API key (AIza…)"},
		{regexp.MustCompile(`(-----BEGIN [A-Z ]*PRIVATE KEY-----)`), false, "a private key (-----BEGIN … PRIVATE KEY-----)"},
		{regexp.MustCompile(b + `(eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})`), false, "a JSON Web Token (eyJ….eyJ….…)"},
		{regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9])bearer\s+([A-Za-z0-9._~+/-]{20,}=*)`), true, "a bearer token (Bearer …)"},
	}
})

// tokenFormat says which well-known token format s contains, or "".
func tokenFormat(s string) string {
	for _, r := range tokenFormats() {
		for _, m := range r.re.FindAllStringSubmatch(s, -1) {
			if !r.mixed || mixedCase(m[1]) {
				return r.what
			}
		}
	}
	return ""
}

func mixedCase(s string) bool {
	var up, low bool
	for _, r := range s {
		up = up || (r >= 'A' && r <= 'Z')
		low = low || (r >= 'a' && r <= 'z')
	}
	return up && low
}
