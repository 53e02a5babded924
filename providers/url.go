package providers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidURL: a store URL is malformed or names an unknown scheme. The message says which part.
var ErrInvalidURL = errors.New("invalid store URL")

// Open returns the Store a URL names. A plain path, file:///abs/path or file://./rel/path is a
// local directory (this package's own scheme); every other scheme is a store package's, which
// registers its grammar and constructor (see Scheme) — cmd/lifeboat/kinds.go links them all:
//
//	s3://BUCKET[/PREFIX][?region=R][&endpoint=URL]                S3 or, with endpoint, an S3-compatible store (providers/s3)
//	gs://BUCKET[/PREFIX]                                         Google Cloud Storage (providers/gcs)
//	az://ACCOUNT/CONTAINER[/PREFIX]                              Azure Blob Storage (providers/azure)
//	oci://REGISTRY/REPO[:TAG|@sha256:HEX]                         an OCI registry (providers/oci)
//
// Credentials come only from each SDK's default chain and its standard environment variables
// (AWS_ACCESS_KEY_ID…/AWS_PROFILE/IMDS; GOOGLE_APPLICATION_CREDENTIALS/ADC;
// AZURE_STORAGE_CONNECTION_STRING, else azidentity's DefaultAzureCredential against
// https://ACCOUNT.blob.core.windows.net) — never from the URL, which is refused if it carries any.
// Open does not contact the store; the first call does. Errors for bad URLs wrap ErrInvalidURL.
func Open(ctx context.Context, rawURL string, opts Options) (Store, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	sch, ok := lookupScheme(loc.Scheme)
	if !ok {
		return nil, fmt.Errorf("opening %s: %w", loc, errNotLinked(loc.Scheme))
	}
	s, err := sch.Open(ctx, loc, opts)
	if err != nil {
		if KindOf(err) == KindOther {
			// What fails before any request (no region, a malformed connection string, an account
			// the credentials are not for) is the configuration, not the store.
			err = fmt.Errorf("%w: %w", ErrMisconfigured, err)
		}
		return nil, fmt.Errorf("opening %s: %w (hint: %s)", loc, err, Hint(loc.Scheme, KindMisconfigured))
	}
	// The retry wrapper is outside the stall guard: each attempt gets a fresh watchdog.
	return WithRetry(WithStallGuard(s, opts.Retry.StallTimeout), opts.Retry, opts.Log), nil
}

// Location is a parsed store URL. Its fields are shared by the schemes; each scheme's Parse says
// which it sets and its Format renders them.
type Location struct {
	Scheme   string // file, s3, gs, az, oci
	Path     string // file: the directory
	Account  string // az: the storage account
	Bucket   string // s3/gs: the bucket; az: the container
	Prefix   string // key prefix without leading or trailing "/"
	Region   string // s3
	Endpoint string // s3
	// oci: Registry is HOST[:PORT], Repository the repository path, and at most one of Tag and
	// Digest ("sha256:HEX") the reference; neither means the tag "latest", as for docker and oras.
	Registry   string
	Repository string
	Tag        string
	Digest     string
}

// Reference is an oci:// location's reference: its digest, else its tag, else "latest".
func (l Location) Reference() string {
	switch {
	case l.Digest != "":
		return l.Digest
	case l.Tag != "":
		return l.Tag
	}
	return "latest"
}

// String renders the location as a canonical URL: its scheme's Format, else (a scheme this
// program does not link) SCHEME://BUCKET/PREFIX.
func (l Location) String() string {
	if s, ok := lookupScheme(l.Scheme); ok && s.Format != nil {
		return s.Format(l)
	}
	return (&url.URL{Scheme: l.Scheme, Host: l.Bucket, Path: "/" + l.Prefix}).String()
}

var (
	userinfoRE = regexp.MustCompile(`//[^/?#@]*@`)
	schemeRE   = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)
)

// BadURL is the error for a malformed store URL: it wraps ErrInvalidURL and shows raw without
// any user information or other secret. A scheme's Parse reports every problem through it.
func BadURL(raw, format string, args ...any) error {
	shown := Redact(userinfoRE.ReplaceAllString(raw, "//"))
	return fmt.Errorf("%w %q: %s", ErrInvalidURL, shown, fmt.Sprintf(format, args...))
}

// ParseURL parses and checks a store URL without opening it (see Open for the forms). The generic
// rules are checked here — a registered scheme followed by "//", no credentials, no fragment,
// only the scheme's query parameters, each once — and the rest by the scheme's Parse. A URL of a
// scheme whose store this program does not link is refused as an unknown scheme that says so;
// without "//" such a name is a plain path, as "a:b" is.
func ParseURL(raw string) (Location, error) {
	if strings.TrimSpace(raw) == "" {
		return Location{}, BadURL(raw, "empty")
	}
	m := schemeRE.FindStringSubmatch(raw)
	var sch Scheme
	known := false
	if m != nil {
		sch, known = lookupScheme(strings.ToLower(m[1]))
	}
	if m == nil || (!strings.Contains(raw, "://") && !known) {
		// A plain path (a path may contain ':' after its first element, e.g. ./a:b).
		if strings.ContainsRune(raw, 0) {
			return Location{}, BadURL(raw, "path contains a NUL byte")
		}
		return Location{Scheme: "file", Path: filepath.Clean(raw)}, nil
	}
	scheme := strings.ToLower(m[1])
	if !known {
		return Location{}, BadURL(raw, "unknown scheme %q: no store registered for scheme %s:// (this program links %s; a program links a store by blank-importing its package under lifeboat/providers, as cmd/lifeboat/kinds.go does)",
			scheme, scheme, orList(Schemes(), "and"))
	}
	if !strings.HasPrefix(raw[len(m[0]):], "//") {
		return Location{}, BadURL(raw, "want %s://%s", scheme, sch.Usage)
	}
	u, err := parseStoreURL(raw, sch)
	if err != nil {
		return Location{}, err
	}
	return sch.Parse(raw, u)
}

// parseStoreURL parses a store URL and refuses what never belongs in one: credentials, a
// fragment, unknown or repeated query parameters (sch.Query are the known ones).
func parseStoreURL(raw string, sch Scheme) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, BadURL(raw, "%v", err)
	}
	if u.User != nil {
		advice := sch.Credentials
		if advice == "" {
			advice = "use the SDK's environment variables or default credential chain"
		}
		return nil, BadURL(raw, "credentials do not belong in the URL; %s", advice)
	}
	if u.Fragment != "" {
		return nil, BadURL(raw, "unexpected #fragment")
	}
	for k, v := range u.Query() {
		if !slices.Contains(sch.Query, k) {
			return nil, BadURL(raw, "unknown query parameter %q", k)
		}
		if len(v) != 1 || v[0] == "" {
			return nil, BadURL(raw, "query parameter %q needs exactly one non-empty value", k)
		}
	}
	return u, nil
}

// orList joins names as "a, b or c" (conj "or") or "a, b and c".
func orList(names []string, conj string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// BucketURL is the grammar s3:// and gs:// share: SCHEME://BUCKET/PREFIX, the bucket without a
// port, of 3 to maxLen lower-case letters, digits, '.', '_' and '-' (starting and ending with a
// letter or digit, no ".."). want is the usage the "missing bucket" error shows.
func BucketURL(raw string, u *url.URL, want string, maxLen int) (bucket, prefix string, err error) {
	if u.Host == "" {
		return "", "", BadURL(raw, "missing bucket: want %s", want)
	}
	if u.Port() != "" || strings.Contains(u.Host, ":") {
		return "", "", BadURL(raw, "bucket %q cannot have a port (use ?endpoint= for S3-compatible stores)", u.Host)
	}
	if !BucketName(u.Host, maxLen) || strings.Contains(u.Host, "..") {
		return "", "", BadURL(raw, "bucket name %q is not valid (3-63 lower-case letters, digits, '.', '-', '_')", u.Host)
	}
	if prefix, err = CheckPrefix(u.Path); err != nil {
		return "", "", BadURL(raw, "%v", err)
	}
	return u.Host, prefix, nil
}

// BucketName reports whether name matches ^[a-z0-9][a-z0-9._-]{1,maxLen-2}[a-z0-9]$, checked by
// hand: that expression's bounded repetition compiles, at every start of every command, to
// hundreds of allocations.
func BucketName(name string, maxLen int) bool {
	if len(name) < 3 || len(name) > maxLen || !lowerAlnum(name[0]) || !lowerAlnum(name[len(name)-1]) {
		return false
	}
	for i := 1; i < len(name)-1; i++ {
		if c := name[i]; !lowerAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// CheckPrefix checks the key prefix of a store URL (its path below the bucket, container or
// directory) and returns it without leading or trailing "/".
func CheckPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	if err := ValidatePath(p); err != nil {
		return "", fmt.Errorf("prefix %q: %s", p, err)
	}
	return p, nil
}
