package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"lifeboat/internal/base/redact"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound: the object, bucket, container or root directory does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPreconditionFailed: a conditional write, read or delete lost the race (S3 412 and 409
	// ConditionalRequestConflict, GCS 412, Azure 409 and 412, an existing or changed local file).
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrPermission: the store refused the credentials or the operation (401, 403, EACCES).
	ErrPermission = errors.New("permission denied")
	// ErrUnreachable: the store could not be reached or kept failing (network errors, 5xx,
	// throttling) after the SDK's retries.
	ErrUnreachable = errors.New("store unreachable")
	// ErrContentMismatch: bytes given to Write did not match the declared size or checksums, or the
	// service rejected a checksum sent with them; nothing was committed.
	ErrContentMismatch = errors.New("content does not match its declared size or checksum")
	// ErrInvalidKey: a key is empty, absolute, has empty, "." or ".." elements or control
	// characters — given by a caller, or found in a listing.
	ErrInvalidKey = errors.New("invalid key")
)

// Error is the error every Store method returns for a failed call. Kind is one of the sentinels
// (or nil when none applies); Err is the underlying SDK or OS error, reachable with errors.As but
// summarised, not printed verbatim, by Error() so that no SDK dump (request headers, signatures)
// reaches logs.
type Error struct {
	Op    string // list, stat, read, write, delete
	Store string // the store's String()
	Key   string
	Kind  error
	Err   error
	// Endpoint is the address the store talks to (host:port); shown when the store was
	// unreachable and the cause does not already name it.
	Endpoint string
	// known are credentials the store sent, redacted from Error() like every pattern Redact knows.
	Known *redact.Known
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Store)
	b.WriteString(": ")
	b.WriteString(e.Op)
	if e.Key != "" {
		fmt.Fprintf(&b, " %q", e.Key)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if d := Describe(e.Err); d != "" && (e.Kind == nil || d != e.Kind.Error()) {
		b.WriteString(": ")
		b.WriteString(d)
	}
	var se *sourceError
	if errors.As(e.Err, &se) {
		return e.Known.Redact(b.String()) // the content's reader failed: neither this endpoint nor a hint for it
	}
	if k := KindOf(e); (k == KindUnreachable || k == KindTimeout) && e.Endpoint != "" && !strings.Contains(b.String(), e.Endpoint) {
		fmt.Fprintf(&b, " (endpoint %s)", e.Endpoint)
	}
	if h := Hint(schemeOf(e.Store), KindOf(e)); h != "" {
		b.WriteString(" (hint: ")
		b.WriteString(h)
		b.WriteString(")")
	}
	return e.Known.Redact(b.String())
}

func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// InvalidKeysError reports keys found in a listing that are not valid keys; they were not passed to
// the listing callback. It matches ErrInvalidKey.
type InvalidKeysError struct {
	Count    int
	Examples []string // the first few, quoted when printed
}

func (e *InvalidKeysError) Error() string {
	return fmt.Sprintf("%d invalid key(s) skipped in listing, e.g. %q", e.Count, e.Examples)
}

func (e *InvalidKeysError) Is(target error) bool { return target == ErrInvalidKey }

// InvalidKeys collects the invalid keys a listing skips; Result is its *InvalidKeysError or nil.
type InvalidKeys struct{ err *InvalidKeysError }

// Add counts one invalid key, keeping the first few as examples.
func (k *InvalidKeys) Add(key string) {
	if k.err == nil {
		k.err = &InvalidKeysError{}
	}
	k.err.Count++
	if len(k.err.Examples) < 5 {
		k.err.Examples = append(k.err.Examples, key)
	}
}

// Result is the listing's error for the keys added, nil for none.
func (k *InvalidKeys) Result() error {
	if k.err == nil {
		return nil
	}
	return k.err
}

// Describer lets provider code give a safe one-line summary of an SDK error.
type Describer func(error) (string, bool)

var describers []Describer

// AddDescriber adds a store's summary of its SDK's errors to Describe (at init).
func AddDescriber(d Describer) { describers = append(describers, d) }

// Describe is a one-line, credential-free summary of an underlying error.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	for _, d := range describers {
		if s, ok := d(err); ok {
			return s
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		var op *net.OpError
		if errors.As(err, &op) {
			if op.Addr != nil {
				return fmt.Sprintf("%s %s %s: %v", op.Op, op.Net, op.Addr, op.Err)
			}
			return fmt.Sprintf("%s %s: %v", op.Op, op.Net, op.Err)
		}
		if ne.Timeout() {
			var ue *url.Error
			if errors.As(err, &ue) {
				if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
					return fmt.Sprintf("%s %s: network timeout", ue.Op, u.Host)
				}
			}
			return "network timeout"
		}
	}
	return err.Error()
}

// ClassifyCommon recognises what every provider shares: cancellation (kept as is, no sentinel),
// network failures and local file errors.
func ClassifyCommon(err error) (kind error, ok bool) {
	var se *sourceError
	if errors.As(err, &se) {
		return nil, true // the caller's reader failed, not the store
	}
	switch {
	case err == nil:
		return nil, true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, true
	case errors.Is(err, ErrContentMismatch), errors.Is(err, ErrInvalidKey), errors.Is(err, ErrMisconfigured),
		errors.Is(err, ErrNotFound), errors.Is(err, ErrPreconditionFailed),
		errors.Is(err, ErrPermission), errors.Is(err, ErrUnreachable):
		return nil, true // already classified
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF):
		return ErrUnreachable, true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return ErrMisconfigured, true // no such host: a region or endpoint typo, not an outage
		}
		return ErrUnreachable, true
	}
	// Not net.Error: syscall.Errno satisfies it too, and ENOENT is no network failure.
	var op *net.OpError
	if errors.As(err, &op) {
		return ErrUnreachable, true
	}
	return nil, false
}

// sourceError is a failure of the reader given to Write, not of the store; it is not classified.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return "reading content: " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// SourceReader marks the errors of a Write's content reader as sourceErrors and stops when ctx ends.
type SourceReader struct {
	Ctx context.Context
	R   io.Reader
}

func (s SourceReader) Read(p []byte) (int, error) {
	if err := s.Ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.R.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// CASWriteError applies the rule every store shares for a failed write: a compare-and-swap
// (IfMatch) against an object that no longer exists lost its precondition, it did not find
// "nothing" — the caller's view of the object is stale either way.
func CASWriteError(e *Error, opts WriteOptions) *Error {
	if opts.IfMatch != "" && e.Kind == ErrNotFound {
		e.Kind = ErrPreconditionFailed
	}
	return e
}
