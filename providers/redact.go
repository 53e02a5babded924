package providers

import (
	"net/url"
	"os"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Redacted replaces every secret Redact removes.
const Redacted = "REDACTED"

var (
	// urlInTextRE finds URLs in free text (error messages, server replies, log lines).
	urlInTextRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\\]+`)
	// secretPairRE finds credential-like name=value or name: value pairs outside URLs: SAS and
	// SigV4 query parameters, connection-string fields, echoed request headers.
	secretPairRE = regexp.MustCompile(`(?i)\b(sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|credential|accountkey|sharedaccesssignature|password|passwd|secret|client_secret|token|access_token|refresh_token|session_token|aws_secret_access_key|aws_session_token|x-goog-signature|x-goog-credential)(\s*[=:]\s*)("[^"]*"|[^\s&;,"\\]+)`)
	// authHeaderRE finds an Authorization header or a bearer token, up to the end of its line.
	authHeaderRE = regexp.MustCompile(`(?i)\b(authorization|proxy-authorization|x-ms-authorization|cookie|set-cookie)(\s*:\s*)[^"\n\r\\]*|\bbearer\s+[A-Za-z0-9._~+/=-]+`)
	// secretEnvRE names environment variables whose values are secrets.
	secretEnvRE = regexp.MustCompile(`(?i)(secret|password|passwd|token|connection_string|_key$|access_key|sas|credential)`)
)

// SecretEnvName reports whether an environment variable's name says its value is a secret
// (…_TOKEN, …_SECRET…, …_KEY, PASSWORD, CONNECTION_STRING, SAS, CREDENTIAL…).
func SecretEnvName(name string) bool { return secretEnvRE.MatchString(name) }

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
// their values are shown (decoded, and themselves redacted). Every other query value is redacted.
var keptQuery = map[string]bool{"region": true, "endpoint": true}

// Redact removes secrets from text meant for people or logs: in every URL the userinfo, the
// fragment and every query value (but region= and endpoint= of a store URL, whose decoded value is
// redacted in turn, so ?endpoint=http://user:pass@host loses user:pass); credential-like
// name=value pairs (SAS sig=, SigV4 Signature= and Credential=, AccountKey=…); Authorization and
// Cookie headers and bearer tokens; and the values of secret-named environment variables
// (AWS_SECRET_ACCESS_KEY, AZURE_STORAGE_CONNECTION_STRING's AccountKey…) wherever they appear.
// URLs come out unescaped (?endpoint=http://…, not %3A%2F%2F).
func Redact(s string) string {
	if s == "" {
		return s
	}
	s = urlInTextRE.ReplaceAllStringFunc(s, redactURL)
	s = authHeaderRE.ReplaceAllStringFunc(s, func(m string) string {
		if sub := authHeaderRE.FindStringSubmatch(m); sub[1] != "" {
			return sub[1] + sub[2] + Redacted
		}
		return "Bearer " + Redacted
	})
	s = secretPairRE.ReplaceAllString(s, "${1}${2}"+Redacted)
	for _, v := range envSecrets() {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

func redactURL(raw string) string {
	// Trailing punctuation of the sentence is not part of the URL.
	trail := ""
	for len(raw) > 0 && strings.ContainsRune(".,;:)]}", rune(raw[len(raw)-1])) {
		trail = raw[len(raw)-1:] + trail
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
			if dk, err := url.QueryUnescape(k); err == nil {
				k = dk
			}
			b.WriteString(k)
			if !hasV {
				continue
			}
			b.WriteByte('=')
			if keptQuery[strings.ToLower(k)] {
				if dv, err := url.QueryUnescape(v); err == nil {
					v = dv
				}
				b.WriteString(Redact(v))
			} else if v != "" {
				b.WriteString(Redacted)
			}
		}
	}
	if hasFrag && frag != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String() + trail
}

// envSecrets are the values of secret-named environment variables (and the key and signature
// fields of a connection string), longest first so that no part of one survives another.
func envSecrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !secretEnvRE.MatchString(k) {
			continue
		}
		if strings.Contains(v, ";") && strings.Contains(v, "=") { // a connection string
			for field, val := range parseConnectionString(v) {
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

// Sanitize makes a server's message safe to show on one line: Redact, then every control
// character (newlines included) a space, runs of spaces one, at most max runes ("…" after a cut).
// A server's body is never shown verbatim, whatever it holds.
func Sanitize(s string, max int) string {
	s = Redact(s)
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) {
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
