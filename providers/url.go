package providers

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrInvalidURL: a store URL is malformed or names an unknown scheme. The message says which part.
var ErrInvalidURL = errors.New("invalid store URL")

// Open returns the Store a URL names:
//
//	/abs/path, ./rel/path, file:///abs/path, file://./rel/path   a local directory
//	s3://BUCKET[/PREFIX][?region=R][&endpoint=URL]                S3 or, with endpoint, an S3-compatible store (path-style)
//	gs://BUCKET[/PREFIX]                                         Google Cloud Storage (honours STORAGE_EMULATOR_HOST)
//	az://ACCOUNT/CONTAINER[/PREFIX]                              Azure Blob Storage
//	oci://REGISTRY/REPO[:TAG|@sha256:HEX]                         an OCI registry (Distribution API; see ParseURL)
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

// Location is a parsed store URL.
type Location struct {
	Scheme   string // file, s3, gs, az
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

// String renders the location as a canonical URL.
func (l Location) String() string {
	switch l.Scheme {
	case "file":
		if !filepath.IsAbs(l.Path) {
			return "./" + filepath.ToSlash(l.Path) // file://./rel would also do; a plain path reads better
		}
		return (&url.URL{Scheme: "file", Path: l.Path}).String()
	case "az":
		return (&url.URL{Scheme: "az", Host: l.Account, Path: "/" + joinNonEmpty(l.Bucket, l.Prefix)}).String()
	case "oci":
		s := "oci://" + l.Registry + "/" + l.Repository
		if l.Digest != "" {
			return s + "@" + l.Digest
		}
		if l.Tag != "" {
			return s + ":" + l.Tag
		}
		return s
	}
	u := &url.URL{Scheme: l.Scheme, Host: l.Bucket, Path: "/" + l.Prefix}
	q := url.Values{}
	if l.Region != "" {
		q.Set("region", l.Region)
	}
	if l.Endpoint != "" {
		q.Set("endpoint", l.Endpoint)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + "/" + b
}

var (
	userinfoRE   = regexp.MustCompile(`//[^/?#@]*@`)
	schemeRE     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)
	azContainerR = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)
)

// Bucket and account names are checked by hand, not with the regular expressions they are
// written as below: their bounded repetitions compiled, at every start of every command, to
// 1,200 allocations and 210 KB — two thirds of this package's initialisation.

// bucketName reports whether name matches ^[a-z0-9][a-z0-9._-]{1,maxLen-2}[a-z0-9]$ (S3: 63,
// GCS: 222).
func bucketName(name string, maxLen int) bool {
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

// azAccountName reports whether name matches ^[a-z0-9]{3,24}$.
func azAccountName(name string) bool {
	if len(name) < 3 || len(name) > 24 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !lowerAlnum(name[i]) {
			return false
		}
	}
	return true
}

func lowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func badURL(raw, format string, args ...any) error {
	shown := Redact(userinfoRE.ReplaceAllString(raw, "//"))
	return fmt.Errorf("%w %q: %s", ErrInvalidURL, shown, fmt.Sprintf(format, args...))
}

// ParseURL parses and checks a store URL without opening it (see Open for the forms).
func ParseURL(raw string) (Location, error) {
	if strings.TrimSpace(raw) == "" {
		return Location{}, badURL(raw, "empty")
	}
	m := schemeRE.FindStringSubmatch(raw)
	if m == nil || (!strings.Contains(raw, "://") && !isKnownScheme(m[1])) {
		// A plain path (a path may contain ':' after its first element, e.g. ./a:b).
		if strings.ContainsRune(raw, 0) {
			return Location{}, badURL(raw, "path contains a NUL byte")
		}
		return Location{Scheme: "file", Path: filepath.Clean(raw)}, nil
	}
	scheme := strings.ToLower(m[1])
	if !isKnownScheme(scheme) {
		return Location{}, badURL(raw, "unknown scheme %q (want file, s3, gs, az or oci)", scheme)
	}
	if !strings.HasPrefix(raw[len(m[0]):], "//") {
		return Location{}, badURL(raw, "want %s://%s", scheme, usage[scheme])
	}
	u, err := parseStoreURL(raw, scheme)
	if err != nil {
		return Location{}, err
	}
	switch scheme {
	case "file":
		return fileLocation(raw, u)
	case "s3", "gs":
		return bucketLocation(raw, scheme, u)
	case "az":
		return azureLocation(raw, u)
	case "oci":
		return ociLocation(raw, u)
	}
	return Location{}, badURL(raw, "unknown scheme %q", scheme)
}

// parseStoreURL parses a store URL and refuses what never belongs in one: credentials, a
// fragment, unknown or repeated query parameters (only S3 takes region and endpoint).
func parseStoreURL(raw, scheme string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, badURL(raw, "%v", err)
	}
	if u.User != nil {
		if scheme == "oci" {
			return nil, badURL(raw, "credentials do not belong in the URL; log in with `docker login`/`oras login` (Docker config.json and its credential helpers) instead")
		}
		return nil, badURL(raw, "credentials do not belong in the URL; use the SDK's environment variables or default credential chain")
	}
	if u.Fragment != "" {
		return nil, badURL(raw, "unexpected #fragment")
	}
	allowed := map[string]bool{}
	if scheme == "s3" {
		allowed["region"], allowed["endpoint"] = true, true
	}
	for k, v := range u.Query() {
		if !allowed[k] {
			return nil, badURL(raw, "unknown query parameter %q", k)
		}
		if len(v) != 1 || v[0] == "" {
			return nil, badURL(raw, "query parameter %q needs exactly one non-empty value", k)
		}
	}
	return u, nil
}

// fileLocation is file:///abs/path or file://./rel/path.
func fileLocation(raw string, u *url.URL) (Location, error) {
	p := u.Path
	switch u.Host {
	case "", "localhost":
	case ".", "..":
		p = u.Host + p // file://./rel
	default:
		return Location{}, badURL(raw, "file URLs name a local path: file:///abs/path or file://./rel/path, not host %q", u.Host)
	}
	if p == "" {
		return Location{}, badURL(raw, "empty path")
	}
	return Location{Scheme: "file", Path: filepath.Clean(p)}, nil
}

// bucketLocation is s3://BUCKET/PREFIX[?region=R][&endpoint=URL] or gs://BUCKET/PREFIX.
func bucketLocation(raw, scheme string, u *url.URL) (Location, error) {
	if u.Host == "" {
		return Location{}, badURL(raw, "missing bucket: want %s://%s", scheme, usage[scheme])
	}
	if u.Port() != "" || strings.Contains(u.Host, ":") {
		return Location{}, badURL(raw, "bucket %q cannot have a port (use ?endpoint= for S3-compatible stores)", u.Host)
	}
	maxLen := 63
	if scheme == "gs" {
		maxLen = 222
	}
	if !bucketName(u.Host, maxLen) || strings.Contains(u.Host, "..") {
		return Location{}, badURL(raw, "bucket name %q is not valid (3-63 lower-case letters, digits, '.', '-', '_')", u.Host)
	}
	prefix, err := checkPrefix(u.Path)
	if err != nil {
		return Location{}, badURL(raw, "%v", err)
	}
	q := u.Query()
	loc := Location{Scheme: scheme, Bucket: u.Host, Prefix: prefix, Region: q.Get("region")}
	if ep := q.Get("endpoint"); ep != "" {
		if loc.Endpoint, err = endpointURL(raw, ep); err != nil {
			return Location{}, err
		}
	}
	return loc, nil
}

// endpointURL checks an S3 ?endpoint= value: http(s), a host, nothing else.
func endpointURL(raw, ep string) (string, error) {
	eu, err := url.Parse(ep)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return "", badURL(raw, "endpoint must be an http:// or https:// URL with a host")
	}
	if eu.User != nil {
		return "", badURL(raw, "credentials do not belong in the endpoint URL")
	}
	if eu.RawQuery != "" || eu.Fragment != "" {
		return "", badURL(raw, "endpoint must not have a query or fragment")
	}
	return strings.TrimSuffix(eu.String(), "/"), nil
}

// azureLocation is az://ACCOUNT/CONTAINER/PREFIX.
func azureLocation(raw string, u *url.URL) (Location, error) {
	if u.Host == "" {
		return Location{}, badURL(raw, "missing account: want az://%s", usage["az"])
	}
	if !azAccountName(u.Host) {
		return Location{}, badURL(raw, "storage account name %q is not valid (3-24 lower-case letters and digits)", u.Host)
	}
	cont, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if cont == "" {
		return Location{}, badURL(raw, "missing container: want az://%s", usage["az"])
	}
	if !azContainerR.MatchString(cont) || len(cont) < 3 || len(cont) > 63 {
		return Location{}, badURL(raw, "container name %q is not valid (3-63 lower-case letters, digits and single '-')", cont)
	}
	prefix, err := checkPrefix(prefix)
	if err != nil {
		return Location{}, badURL(raw, "%v", err)
	}
	return Location{Scheme: "az", Account: u.Host, Bucket: cont, Prefix: prefix}, nil
}

var usage = map[string]string{
	"file": "/abs/path",
	"s3":   "BUCKET/PREFIX?region=R&endpoint=URL",
	"gs":   "BUCKET/PREFIX",
	"az":   "ACCOUNT/CONTAINER/PREFIX",
	"oci":  "REGISTRY/REPO[:TAG|@sha256:HEX]",
}

// The grammar of distribution/reference: a repository is path components of lower-case letters
// and digits joined by '.', '_', '__' or runs of '-'; a tag is at most 128 word characters, '.'
// and '-', not starting with either; Lifeboat digests are SHA-256.
var (
	ociComponentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	ociHostRE      = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]+)?$`)
)

// ociTag reports whether t matches ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ (checked by hand, like
// bucketName, to keep bounded repetitions out of start-up).
func ociTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !lowerAlnum(c) && !('A' <= c && c <= 'Z') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// ociDigest reports whether d is "sha256:" and 64 lower-case hex digits.
func ociDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ociLocation is oci://REGISTRY/REPO[:TAG|@sha256:HEX].
func ociLocation(raw string, u *url.URL) (Location, error) {
	if u.Host == "" {
		return Location{}, badURL(raw, "missing registry: want oci://%s", usage["oci"])
	}
	if !ociHostRE.MatchString(u.Host) {
		return Location{}, badURL(raw, "registry %q is not a host name with an optional port", u.Host)
	}
	repo := strings.TrimPrefix(u.Path, "/")
	loc := Location{Scheme: "oci", Registry: strings.ToLower(u.Host)}
	if i := strings.Index(repo, "@"); i >= 0 {
		repo, loc.Digest = repo[:i], repo[i+1:]
		if !ociDigest(loc.Digest) {
			return Location{}, badURL(raw, "digest %q is not sha256: and 64 lower-case hex digits", loc.Digest)
		}
	} else if i := strings.LastIndex(repo, ":"); i >= 0 && !strings.Contains(repo[i:], "/") {
		repo, loc.Tag = repo[:i], repo[i+1:]
		if !ociTag(loc.Tag) {
			return Location{}, badURL(raw, "tag %q is not valid (up to 128 letters, digits, '_', '.', '-'; not starting with '.' or '-')", loc.Tag)
		}
	}
	if repo == "" {
		return Location{}, badURL(raw, "missing repository: want oci://%s", usage["oci"])
	}
	for _, c := range strings.Split(repo, "/") {
		if !ociComponentRE.MatchString(c) {
			return Location{}, badURL(raw, "repository %q is not valid: component %q (lower-case letters and digits, joined by '.', '_', '__' or '-')", repo, c)
		}
	}
	if len(loc.Registry)+1+len(repo) > 255 {
		return Location{}, badURL(raw, "repository name longer than 255 characters")
	}
	loc.Repository = repo
	return loc, nil
}

func isKnownScheme(s string) bool {
	_, ok := usage[strings.ToLower(s)]
	return ok
}

func checkPrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	if err := ValidatePath(p); err != nil {
		return "", fmt.Errorf("prefix %q: %s", p, err)
	}
	return p, nil
}
