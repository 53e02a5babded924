package redact

import (
	"encoding/base64"
	"net/url"
	"strings"
	"sync"
)

// Known is the set of credentials this process itself sent (a registry's Basic or Bearer
// Authorization, the user:password behind it): a peer that echoes one back in an error says it
// in no form Redact's patterns can tell from ordinary text ("user robot:pw denied",
// a bare base64 string), so these exact values, and their base64 and URL-escaped forms, are
// replaced wherever they appear. It is safe for concurrent use; a nil *Known redacts nothing
// more than Redact.
type Known struct {
	mu   sync.RWMutex
	vals []string // longest first, so that no part of one survives another
}

// minKnown is the shortest value replaced on its own: a shorter one would blank ordinary words.
// A short password is still replaced inside the longer forms it is sent in (user:password and
// its base64).
const minKnown = 6

// AddAuthorization records the credential of an Authorization header value this process sent
// ("Basic b64", "Bearer tok", or a bare token): the token, and for Basic what it decodes to —
// user:password and the password.
func (k *Known) AddAuthorization(h string) {
	if k == nil {
		return
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		k.add(scheme)
		return
	}
	tok = strings.TrimSpace(tok)
	k.add(tok)
	if strings.EqualFold(scheme, "basic") {
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(strings.TrimRight(tok, "=")); err == nil {
				if user, pass, ok := strings.Cut(string(b), ":"); ok {
					k.AddUserPassword(user, pass)
				}
				break
			}
		}
	}
}

// AddUserPassword records a username and password this process sent: the password, user:password,
// and the base64 forms a Basic header carries.
func (k *Known) AddUserPassword(user, pass string) {
	if k == nil || pass == "" {
		return
	}
	pair := user + ":" + pass
	k.add(pass)
	k.add(pair)
	for _, v := range []string{pair, pass} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			k.add(enc.EncodeToString([]byte(v)))
		}
	}
	k.add(url.QueryEscape(pass))
	k.add(url.PathEscape(pass))
}

func (k *Known) add(v string) {
	if len(v) < minKnown {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, have := range k.vals {
		if have == v {
			return
		}
	}
	k.vals = append(k.vals, v)
	for i := len(k.vals) - 1; i > 0 && len(k.vals[i]) > len(k.vals[i-1]); i-- {
		k.vals[i], k.vals[i-1] = k.vals[i-1], k.vals[i]
	}
}

// Redact is Redact(s) with every known credential replaced by Redacted.
func (k *Known) Redact(s string) string { return Redact(k.replace(s, false)) }

// RedactStream is RedactStream(s) with every known credential replaced, but one holding a quote,
// a backslash, <, > or & (replacing it could change an encoded document's structure).
func (k *Known) RedactStream(s string) string { return RedactStream(k.replace(s, true)) }

// Sanitize is Sanitize(s, max) with every known credential replaced first.
func (k *Known) Sanitize(s string, max int) string { return Sanitize(k.replace(s, false), max) }

func (k *Known) replace(s string, encoded bool) string {
	if k == nil || s == "" {
		return s
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, v := range k.vals {
		if encoded && strings.ContainsAny(v, `"'<>&\`) {
			continue
		}
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}
