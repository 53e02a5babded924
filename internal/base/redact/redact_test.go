package redact_test

import (
	"encoding/json"
	"strings"
	"testing"

	"lifeboat/internal/base/redact"
)

// vllmStartup is vLLM's own start-up log (0.10/0.11 "vllm serve"): the argv echo and the
// "non-default args" line, both carrying the --api-key value.
const vllmStartup = `(APIServer pid=62232) INFO 10-24 12:53:50 [api_server.py:1896] vLLM API server version 0.11.0
(APIServer pid=62232) INFO 10-24 12:53:50 [utils.py:233] non-default args: {'model_tag': '/models/llama', 'host': '0.0.0.0', 'port': 8000, 'api_key': ['sk-live-4f9a8b7c6d5e'], 'model': '/models/llama', 'max_num_batched_tokens': 8192, 'tokenizer': '/models/llama'}
argv: vllm serve /models/llama --port 8000 --api-key sk-live-4f9a8b7c6d5e --max-num-batched-tokens 8192 --max-tokens 64
`

func TestRedactForms(t *testing.T) {
	const secret = "sk-live-4f9a8b7c6d5e"
	for _, tc := range []struct{ in, want string }{
		{vllmStartup, ""},
		{"--api-key " + secret, "--api-key REDACTED"},
		{"--api-key=" + secret, "--api-key=REDACTED"},
		{"--password " + secret + " --port 1", "--password REDACTED --port 1"},
		{"--token " + secret, "--token REDACTED"},
		{"--hf-token\t" + secret, "--hf-token\tREDACTED"},
		{`{"token": "` + secret + `", "n": 1}`, `{"token": "REDACTED", "n": 1}`},
		{`msg="got {\"api_key\": \"` + secret + `\"}"`, `msg="got {\"api_key\": \"REDACTED\"}"`},
		{`'api_key': '` + secret + `'`, `'api_key': 'REDACTED'`},
		{`'api_key': ['` + secret + `', 'sk-other-12345678']`, `'api_key': ['REDACTED', 'REDACTED']`},
		{"api_key=" + secret + "&x=1", "api_key=REDACTED&x=1"},
		{"HF_TOKEN=" + secret, "HF_TOKEN=REDACTED"},
		{"Authorization: Bearer " + secret, "Authorization: REDACTED"},
		{"s3://b/k?sig=" + secret + "&region=eu", "s3://b/k?sig=REDACTED&region=eu"},
		// Basic credentials (base64 of user:password) and user:password@host without a scheme.
		{"denied (Basic cm9ib3Q6c2VjcmV0cGFzcw==) for you", "denied (Basic REDACTED) for you"},
		{`"basic cm9ib3Q6c2VjcmV0cGFzcw"`, `"basic REDACTED"`},
		{"pull robot:s3cret-pass@registry.example:5000/acme/llama", "pull REDACTED@registry.example:5000/acme/llama"},
		{`{"ref": "robot:s3cret@127.0.0.1/a"}`, `{"ref": "REDACTED@127.0.0.1/a"}`},
		{`WWW-Authenticate: Basic realm="lifeboat-test" and basic auth required`, ""},
		{"at 10:30 @ noon, mail ops@example.com", ""},
		// Not secrets.
		{"max_num_batched_tokens=8192 --max-tokens 64 tokenizer: x --api-key-file /k", ""},
		{"'hf_token': None", ""},
		{`{"token": 7, "lock": {"token": 12, "renewal": 3}}`, ""},
		// Never decodes, never breaks a character reference.
		{"router http://127.0.0.1:9/&#34;x&#34; unreachable", ""},
		{"http://h/p?endpoint=%3Cscript%3E&region=%253C", ""},
		{"http://h/%3Cscript%3E/&lt;b&gt;", ""},
		{"s3://b/k?endpoint=http%3A%2F%2Fadmin%3Apw%40h%3A9000", "s3://b/k?endpoint=REDACTED"},
		{"s3://b/k?endpoint=http://admin:pw@h:9000/", "s3://b/k?endpoint=REDACTED"},
	} {
		want := tc.want
		if want == "" && tc.in != vllmStartup {
			want = tc.in
		}
		got := redact.Redact(tc.in)
		if tc.in == vllmStartup {
			if strings.Contains(got, secret) || strings.Contains(got, "sk-other") || !strings.Contains(got, "'max_num_batched_tokens': 8192") || !strings.Contains(got, "--max-num-batched-tokens 8192") {
				t.Errorf("vLLM start-up log redacted to:\n%s", got)
			}
			continue
		}
		if got != want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", tc.in, got, want)
		}
	}
}

// Redaction only ever replaces a token: the markup-significant characters of its input come out
// in the same order, so a stray pass over an encoded document cannot change its structure.
func TestRedactKeepsMarkup(t *testing.T) {
	markup := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if strings.ContainsRune(`"'<>&\;`, r) {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	for _, in := range []string{
		`<td>token=&lt;script&gt; password: &quot;x&quot; http://u:p@h/?a=%3C&amp;sig=1#f</td>`,
		`{"error": "HTTP 500: \"token\": \"abc\" <script>alert(1)</script> %253C &#34;"}`,
		`<failure message="Authorization: Bearer abc &#34;x&#34;">]]&gt; cookie: a=b</failure>`,
		"--api-key \"sk-1234567890\" 'api_key': ['a<b', \"c&d\"]",
		`{"token": 7, "password": "x", "sig": -1.5e3}`,
	} {
		got := redact.RedactStream(in)
		if json.Valid([]byte(in)) && !json.Valid([]byte(got)) {
			t.Errorf("RedactStream broke the JSON document\n %s\nto\n %s", in, got)
		}
		if markup(got) != markup(in) {
			t.Errorf("RedactStream changed the markup of\n %s\nto\n %s", in, got)
		}
	}
}

func TestTerminalSafe(t *testing.T) {
	in := "a\x1b[2J\x1b]0;pwned\x07b\u2028c\u202ed\u009be\r\nf\tg\xff"
	got := redact.TerminalSafe(in)
	for _, bad := range []string{"\x1b", "\x07", "\u2028", "\u202e", "\u009b", "\r", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("TerminalSafe kept %q: %q", bad, got)
		}
	}
	if !strings.Contains(got, "\nf\tg") {
		t.Errorf("TerminalSafe lost newline or tab: %q", got)
	}
	if s := redact.Sanitize(in, 100); strings.ContainsAny(s, "\x1b\n\u2028\u202e\u009b") {
		t.Errorf("Sanitize kept a control: %q", s)
	}
}

// Known replaces the exact credentials this process sent, in every form a peer echoes them:
// the Authorization value, its bare base64, user:password and the password alone — where no
// pattern would see them — and leaves short values (ordinary words) alone.
func TestKnownCredentials(t *testing.T) {
	var k redact.Known
	k.AddAuthorization("Basic cm9ib3Q6UmVnMXN0cnktUGFzc3cwcmQ=") // robot:Reg1stry-Passw0rd
	k.AddAuthorization("Bearer opaque-registry-token-77")
	for _, in := range []string{
		"token cm9ib3Q6UmVnMXN0cnktUGFzc3cwcmQ= refused",
		"token cm9ib3Q6UmVnMXN0cnktUGFzc3cwcmQ refused",
		"user robot:Reg1stry-Passw0rd refused",
		"password Reg1stry-Passw0rd refused",
		"bad token opaque-registry-token-77",
	} {
		got := k.Redact(in)
		if strings.Contains(got, "Reg1stry") || strings.Contains(got, "cm9ib3Q6") || strings.Contains(got, "opaque-registry") || !strings.Contains(got, redact.Redacted) {
			t.Errorf("Known.Redact(%q) = %q", in, got)
		}
		if got := k.RedactStream(in); strings.Contains(got, "Reg1stry") || strings.Contains(got, "opaque-registry") {
			t.Errorf("Known.RedactStream(%q) = %q", in, got)
		}
	}
	var short redact.Known
	short.AddUserPassword("bob", "pw")
	if got := short.Redact("pw is a word; bob:pw is not"); got != "pw is a word; REDACTED is not" {
		t.Errorf("a short password: %q", got)
	}
	var none *redact.Known
	if got := none.Redact("Basic cm9ib3Q6c2VjcmV0cGFzcw=="); got != "Basic REDACTED" {
		t.Errorf("a nil Known: %q", got)
	}
}
