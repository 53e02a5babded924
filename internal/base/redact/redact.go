package redact

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted replaces every secret Redact removes.
const Redacted = "REDACTED"

// Redaction works on values: a string is redacted before any encoder (HTML, JSON, XML, Markdown,
// terminal) sees it, and redaction never decodes anything — a %3C stays %3C, an &lt; stays &lt;.
// What Redact changes is only ever a secret-looking token replaced by Redacted; it never removes
// or adds a quote, a backslash, <, > or &, so a stray pass over finished output (the stderr
// safety net) cannot change its structure.

const (
	// secretWord is the last word of a name whose value is a secret: api_key, --api-key,
	// "token", hf_token, x-amz-security-token, client_secret, AccountKey, sig, Signature...
	// It must end the name (api-key-file, max_tokens and tokenizer are not secrets).
	secretWord = `(?:sig|signature|credential|accountkey|sharedaccesssignature|password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key)`
	// secretValue is the value after it: quoted (also inside a JSON string, \"…\"), a Python or
	// JSON list of quoted values, or a bare token. No alternative spans a quote, a backslash,
	// <, > or &.
	secretValue = `\\"[^"\\<>&\n]*\\"|"[^"\\<>&\n]*"|'[^'\\<>&\n]*'|\[[^\]\\<>&\n]*\]|[^\s&;,"'\\<>\[\]{}()` + "`" + `]+`
)

var (
	// urlInTextRE finds URLs in free text (error messages, server replies, log lines).
	urlInTextRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\\` + "`" + `]+`)
	// entityRE is an HTML/XML character reference: a URL found in encoded text ends before it.
	entityRE = regexp.MustCompile(`&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});`)
	// secretPairRE finds name=value and name: value pairs whose name says the value is a secret,
	// quoted or not: SAS sig=, SigV4 Signature= and Credential=, AccountKey=, api_key=,
	// "token": "…", 'api_key': ['…'] (vLLM's "non-default args" log line).
	secretPairRE = regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.-]*?` + secretWord + `\b)(\\?["']?)(\s*[=:]\s*)(` + secretValue + `)`)
	// secretFlagRE finds a secret-named command-line flag and its value: --api-key VALUE (vLLM's
	// own flag, echoed in its start-up log), --password=VALUE, --hf-token VALUE.
	secretFlagRE = regexp.MustCompile(`(?i)(--[A-Za-z0-9_.-]*?` + secretWord + `\b)(=|[ \t]+)(` + secretValue + `)`)
	// authHeaderRE finds an Authorization or Cookie header (to the end of its line or quote).
	authHeaderRE = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization|x-ms-authorization|cookie|set-cookie|x-api-key)(\\?["']?)(\s*:\s*)(\\"[^"\\<>&\n]*\\"|"[^"\\<>&\n]*"|'[^'\\<>&\n]*'|[^"'\n\r\\<>&]*)`)
	// bearerRE finds a bearer token.
	bearerRE = regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+`)
	// basicRE finds a Basic credential (RFC 7617: base64 of user:password), as a registry or a
	// proxy echoes the Authorization header it got; the token is redacted when it decodes to
	// something with a colon ("Basic realm" and "basic auth" are words, not credentials).
	basicRE = regexp.MustCompile(`(?i)\b(basic\s+)([A-Za-z0-9+/_-]{4,}={0,2})`)
	// userinfoRE finds user:password@host without a scheme (a registry reference such as
	// robot:pw@registry.example/acme/llama, or an echoed proxy URL): URLs with a scheme are
	// urlInTextRE's.
	userinfoRE = regexp.MustCompile(`(^|[\s"'(\[=,;<>` + "`" + `])([^\s:@/"'<>&\\` + "`" + `]+:[^\s@/"'<>&\\` + "`" + `]+)@([A-Za-z0-9\[])`)
	// numberRE is a bare number.
	numberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
	// quotedRE is one quoted element of a list value.
	quotedRE = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	// secretEnvRE names environment variables whose values are secrets.
	secretEnvRE = regexp.MustCompile(`(?i)(secret|password|passwd|token|connection_string|_key$|access_key|api_key|sas|credential)`)
)

// SecretEnvName reports whether an environment variable's name says its value is a secret
// (…_TOKEN, …_SECRET…, …_KEY, PASSWORD, CONNECTION_STRING, SAS, CREDENTIAL…).
func SecretEnvName(name string) bool {
	// The regexp's case-insensitive backtracking, run over every variable of the environment at
	// every redaction of stderr, was ~10 % of a registry push's CPU. An ASCII name (all of them,
	// in practice) is matched with the same words by lowercasing; any other keeps the regexp,
	// whose case folding also knows non-ASCII folds (ſ, K).
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			return secretEnvRE.MatchString(name)
		}
	}
	var low [128]byte
	l := low[:0]
	if len(name) > len(low) {
		l = make([]byte, 0, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		l = append(l, c)
	}
	if bytes.HasSuffix(l, []byte("_key")) {
		return true
	}
	for _, w := range secretEnvWords {
		if bytes.Contains(l, w) {
			return true
		}
	}
	return false
}

// secretEnvWords are secretEnvRE's words but "_key$", lowercase.
var secretEnvWords = [][]byte{[]byte("secret"), []byte("password"), []byte("passwd"), []byte("token"), []byte("connection_string"), []byte("access_key"), []byte("api_key"), []byte("sas"), []byte("credential")}

// SecretFlagName reports whether a command-line flag's name says its value is a secret
// (--api-key, --password, --token, --hf-token, --client-secret…), like SecretEnvName for flags.
func SecretFlagName(flag string) bool {
	name, _, _ := strings.Cut(flag, "=")
	return strings.HasPrefix(name, "--") && secretFlagRE.MatchString(name+"=x")
}

// SecretFlagValues are the values of argv's secret-named flags (--api-key VALUE,
// --password=VALUE…): a launcher's command line is treated like its secret env values, as vLLM
// echoes its argv and its "non-default args" in its log.
func SecretFlagValues(argv []string) []string {
	var out []string
	for i, a := range argv {
		if !SecretFlagName(a) {
			continue
		}
		if _, v, ok := strings.Cut(a, "="); ok {
			out = append(out, v)
		} else if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
			out = append(out, argv[i+1])
		}
	}
	return out
}

// RedactValues is Redact plus every occurrence of the given secret values (at least 8 bytes
// long; shorter ones would blank ordinary words).
func RedactValues(s string, values []string) string {
	s = Redact(s)
	for _, v := range values {
		if len(v) >= 8 {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s
}

// keptQuery are the query parameters of Lifeboat's own store URLs whose values are not secrets;
// their values are shown as written unless they hold a secret (an endpoint with userinfo).
// Every other query value is redacted.
var keptQuery = map[string]bool{"region": true, "endpoint": true}

// Redact removes secrets from a value meant for people, logs or reports, before it is encoded:
// in every URL the userinfo, the fragment and every query value (but region= and endpoint= of a
// store URL, unless they hold a secret themselves); credential-like name=value and name: value
// pairs, quoted or not ("token": "…", 'api_key': ['…'], sig=…, AccountKey=…); secret-named
// flags (--api-key VALUE, --password=VALUE); Authorization and Cookie headers and bearer tokens;
// and the values of secret-named environment variables wherever they appear. It never decodes:
// the result is s with some tokens replaced by Redacted.
func Redact(s string) string { return redact(s, false) }

// RedactStream is Redact for text that is already encoded (the stderr safety net): a secret
// environment value holding a quote, a backslash, <, > or & is not looked for, as replacing it
// could change the text's structure.
func RedactStream(s string) string { return redact(s, true) }

func redact(s string, encoded bool) string {
	if s == "" {
		return s
	}
	s = urlInTextRE.ReplaceAllStringFunc(s, redactURL)
	s = authHeaderRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := authHeaderRE.FindStringSubmatch(m)
		return sub[1] + sub[2] + sub[3] + redactValue(sub[4], true)
	})
	s = bearerRE.ReplaceAllString(s, "${1}"+Redacted)
	s = basicRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := basicRE.FindStringSubmatch(m)
		if !basicCredential(sub[2]) {
			return m
		}
		return sub[1] + Redacted
	})
	s = userinfoRE.ReplaceAllString(s, "${1}"+Redacted+"@${3}")
	s = secretFlagRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretFlagRE.FindStringSubmatch(m)
		if sub[2] != "=" && strings.HasPrefix(sub[3], "-") {
			return m // the next flag, not a value
		}
		return sub[1] + sub[2] + redactValue(sub[3], false)
	})
	s = secretPairRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretPairRE.FindStringSubmatch(m)
		return sub[1] + sub[2] + sub[3] + redactValue(sub[4], false)
	})
	for _, v := range envSecrets() {
		if encoded && strings.ContainsAny(v, `"'<>&\`) {
			continue
		}
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// basicCredential reports whether tok is a Basic credential: base64 (standard or URL alphabet,
// padded or not) of text with a colon, user:password.
func basicCredential(tok string) bool {
	raw := strings.TrimRight(tok, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(raw); err == nil && bytes.IndexByte(b, ':') >= 0 {
			return true
		}
	}
	return false
}

// redactValue replaces a secret value, keeping its quotes (and a list's brackets and quotes).
func redactValue(v string, header bool) string {
	switch {
	case v == "":
		return v
	case strings.HasPrefix(v, `\"`) && len(v) >= 4:
		return `\"` + Redacted + `\"`
	case v[0] == '"' || v[0] == '\'':
		if len(v) <= 2 {
			return v
		}
		return v[:1] + Redacted + v[len(v)-1:]
	case v[0] == '[':
		return quotedRE.ReplaceAllStringFunc(v, func(q string) string { return redactValue(q, false) })
	}
	if !header {
		switch strings.ToLower(v) {
		case "none", "null", "nil", "true", "false", Redacted, strings.ToLower(Redacted):
			return v
		}
		// A number is not a credential (a lock's fencing "token": 7) and, in a JSON document,
		// replacing it would break the document.
		if numberRE.MatchString(v) {
			return v
		}
	}
	if strings.TrimSpace(v) == "" {
		return v
	}
	return Redacted
}

func redactURL(raw string) string {
	// A URL found in encoded text ends before a character reference (&amp;, &#34;): the
	// reference is the encoding's, not the URL's, and is left whole.
	tail := ""
	if loc := entityRE.FindStringIndex(raw); loc != nil {
		raw, tail = raw[:loc[0]], raw[loc[0]:]
	}
	// Trailing punctuation of the sentence is not part of the URL.
	for len(raw) > 0 && strings.ContainsRune(".,;:)]}", rune(raw[len(raw)-1])) {
		tail = raw[len(raw)-1:] + tail
		raw = raw[:len(raw)-1]
	}
	base, frag, hasFrag := strings.Cut(raw, "#")
	base, query, hasQuery := strings.Cut(base, "?")
	if i := strings.Index(base, "://"); i >= 0 {
		rest := base[i+3:]
		host, path, _ := strings.Cut(rest, "/")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = Redacted + "@" + host[at+1:]
		}
		base = base[:i+3] + host
		if path != "" || strings.Contains(rest, "/") {
			base += "/" + path
		}
	}
	var b strings.Builder
	b.WriteString(base)
	if hasQuery {
		b.WriteByte('?')
		for j, kv := range strings.Split(query, "&") {
			if j > 0 {
				b.WriteByte('&')
			}
			k, v, hasV := strings.Cut(kv, "=")
			b.WriteString(k)
			if !hasV {
				continue
			}
			b.WriteByte('=')
			name := k
			if dk, err := url.QueryUnescape(k); err == nil {
				name = dk // only to recognise the parameter; the key is shown as written
			}
			switch {
			case v == "":
			case keptQuery[strings.ToLower(name)]:
				b.WriteString(redactKept(v))
			default:
				b.WriteString(Redacted)
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String() + tail
}

// redactKept is a kept query value as written, or Redacted when it holds a secret as written or
// once decoded (?endpoint=http%3A%2F%2Fuser%3Apass%40host). It is never shown decoded.
func redactKept(v string) string {
	if r := Redact(v); r != v {
		return Redacted
	}
	if dv, err := url.QueryUnescape(v); err == nil && dv != v && Redact(dv) != dv {
		return Redacted
	}
	return v
}

// envSecrets are the values of secret-named environment variables (and the key and signature
// fields of a connection string), longest first so that no part of one survives another.
func envSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !SecretEnvName(k) {
			continue
		}
		if strings.Contains(v, ";") && strings.Contains(v, "=") { // a connection string
			for field, val := range ConnectionStringFields(v) {
				if field == "accountkey" || field == "sharedaccesssignature" {
					out = appendSecret(out, val)
				}
			}
			continue
		}
		out = appendSecret(out, v)
	}
	// Longest first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func appendSecret(out []string, v string) []string {
	if len(v) < 8 { // too short to be a credential, and would blank common words
		return out
	}
	return append(out, v)
}

// RedactStrings applies Redact to every string reachable from ptr (struct fields, slice and
// array elements, map values, through pointers and interfaces), in place: a document's values
// are redacted before it is encoded. Map keys are left as they are.
func RedactStrings(ptr any) {
	mapStrings(reflect.ValueOf(ptr), Redact)
}

// SanitizeStrings applies Sanitize(s, max) to every string reachable from ptr, in place, as
// RedactStrings does Redact: a document of a peer's text (a lock's holder, a journal's reason
// and operation) is rendered one line per value in every format, as the text output renders it.
func SanitizeStrings(ptr any, max int) {
	mapStrings(reflect.ValueOf(ptr), func(s string) string { return Sanitize(s, max) })
}

func mapStrings(v reflect.Value, f func(string) string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Kind() == reflect.Interface {
			e := v.Elem()
			if e.Kind() == reflect.String && v.CanSet() {
				v.Set(reflect.ValueOf(f(e.String())).Convert(e.Type()))
				return
			}
			if e.Kind() != reflect.Pointer && e.Kind() != reflect.Map && e.Kind() != reflect.Slice {
				return // a struct held by value in an interface cannot be changed in place
			}
			mapStrings(e, f)
			return
		}
		mapStrings(v.Elem(), f)
	case reflect.String:
		if v.CanSet() {
			v.SetString(f(v.String()))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mapStrings(v.Field(i), f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			mapStrings(v.Index(i), f)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			mapStrings(c, f)
			v.SetMapIndex(k, c)
		}
	}
}

// unsafeRune reports whether a rune must not reach a terminal: C0 controls but for newline and
// tab, DEL, C1 controls (U+009B is CSI on some terminals), the line and paragraph separators
// U+2028/U+2029, and the bidirectional and zero-width format characters that reorder or hide
// text.
func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (0x80 <= r && r <= 0x9f):
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	case r == 0x061c || r == 0x200b || r == 0x200c || r == 0x200d || r == 0x200e || r == 0x200f || r == 0xfeff:
		return true
	case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// TerminalSafe is s with every rune a terminal could act on (ESC and every other control but
// newline and tab, C1, U+2028/U+2029, bidi overrides) and every invalid UTF-8 byte replaced by
// U+FFFD: the terminal encoder, last before bytes reach a terminal or a CI log.
func TerminalSafe(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unsafeRune(r) {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Sanitize is the one helper for a string that came from a peer (a router's or store's reply, a
// frontend's header, a lock's holder, a journal field): Redact, then every control and
// separator (newlines included, ESC, C1, U+2028/U+2029, bidi overrides) a space, runs of spaces
// one, invalid UTF-8 U+FFFD, at most max runes ("…" after a cut). A peer's text is never shown
// verbatim, whatever it holds.
func Sanitize(s string, max int) string {
	s = Redact(s)
	var b strings.Builder
	space := false
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			r = utf8.RuneError
		} else if unsafeRune(r) || unicode.IsControl(r) || unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		if n >= max {
			return strings.TrimRight(b.String(), " ") + "…"
		}
		space = false
		b.WriteRune(r)
		n++
	}
	return strings.TrimRight(b.String(), " ")
}

// ConnectionStringFields returns the fields of an Azure storage connection string
// (key=value;key=value), keys lower-cased.
func ConnectionStringFields(cs string) map[string]string {
	out := map[string]string{}
	for _, part := range strings.Split(cs, ";") {
		k, v, ok := strings.Cut(part, "=")
		if ok {
			out[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
		}
	}
	return out
}
