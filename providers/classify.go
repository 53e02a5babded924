package providers

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
)

// ErrMisconfigured: the store cannot be used as configured — no credentials anywhere in the SDK's
// default chain, no region, a malformed connection string, a host name that does not exist. No
// retry can fix it; the error's Hint says what to set.
var ErrMisconfigured = errors.New("misconfigured")

// MaxServerMessage bounds how much of a server's own error message is shown.
const MaxServerMessage = 200

// Kind is the one classification of errors every layer shares, in the spirit of rclone's
// fs/fserrors: what it means for the user (and for the exit code), and whether another attempt
// may succeed. Kinds are derived from the sentinels, so errors.Is keeps working too.
type Kind string

const (
	KindNone            Kind = ""
	KindCanceled        Kind = "canceled"         // the caller's context was cancelled
	KindTimeout         Kind = "timeout"          // a deadline passed waiting for the store
	KindNotFound        Kind = "not_found"        // ErrNotFound
	KindDenied          Kind = "denied"           // ErrPermission
	KindMisconfigured   Kind = "misconfigured"    // ErrMisconfigured
	KindInvalid         Kind = "invalid"          // ErrInvalidURL, ErrInvalidKey: bad input
	KindPrecondition    Kind = "precondition"     // ErrPreconditionFailed: lost a race
	KindContentMismatch Kind = "content_mismatch" // ErrContentMismatch
	KindUnreachable     Kind = "unreachable"      // ErrUnreachable, broken connections
	KindOther           Kind = "other"
)

// KindOf classifies err. Cancellation wins over everything (an interrupted call's other errors
// are its consequence), then the sentinels in order of how final they are.
func KindOf(err error) Kind {
	switch {
	case err == nil:
		return KindNone
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, ErrMisconfigured):
		return KindMisconfigured
	case errors.Is(err, ErrPermission):
		return KindDenied
	case errors.Is(err, ErrNotFound):
		return KindNotFound
	case errors.Is(err, ErrInvalidURL), errors.Is(err, ErrInvalidKey):
		return KindInvalid
	case errors.Is(err, ErrPreconditionFailed):
		return KindPrecondition
	case errors.Is(err, ErrContentMismatch):
		return KindContentMismatch
	case errors.Is(err, ErrUnreachable), errors.Is(err, io.ErrUnexpectedEOF):
		return KindUnreachable
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	}
	var se *sourceError
	if errors.As(err, &se) {
		// A Write whose content reader broke (a source store's body reset mid-copy): the store
		// did not classify it, being not its own failure; what broke it is what counts here.
		err = se.err
	}
	if k, ok := ClassifyCommon(err); ok && k == ErrUnreachable {
		return KindUnreachable
	}
	return KindOther
}

// Retryable reports whether another attempt at the same operation may succeed: a broken or short
// body, a store that was unreachable, bytes that changed in transit, or an unknown failure. What
// the user must fix (not found, denied, misconfigured, invalid), a lost race and an ended context
// are final.
func Retryable(ctx context.Context, err error) bool {
	if err == nil || (ctx != nil && ctx.Err() != nil) {
		return false
	}
	switch KindOf(err) {
	case KindUnreachable, KindContentMismatch, KindOther:
		return true
	}
	return false
}

// Hint says what to set or check for an error of kind k on a store of a scheme, as the scheme
// registered it (see Scheme.Hint); "" when there is nothing to suggest or no such scheme is linked.
func Hint(scheme string, k Kind) string {
	if s, ok := lookupScheme(scheme); ok && s.Hint != nil {
		return s.Hint(k)
	}
	return ""
}

// HostOf is the host[:port] of a URL, or s itself when it has no scheme.
func HostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return u.Host
	}
	return s
}

// schemeOf is the scheme of a store's String(): s3, gs, az, or file for a path.
func schemeOf(store string) string {
	if i := strings.Index(store, "://"); i > 0 {
		return store[:i]
	}
	return "file"
}
