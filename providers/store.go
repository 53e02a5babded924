package providers

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"lifeboat/internal/base/redact"
	"lifeboat/providers/checksum"
)

// Store is one location in an object store or on local disk: a bucket (or container, or directory)
// plus a key prefix. Every key a Store takes or returns is relative to that prefix and valid in the
// sense of ValidateKey.
//
// The shape follows restic's backend: a handful of methods, listing by callback, reads by callback,
// and capabilities that are reported rather than assumed. Cross-cutting behaviour (fault injection,
// logging, extra retries) belongs in wrappers that implement Store around another Store.
//
// All methods are safe for concurrent use, honour ctx for cancellation, and keep memory bounded by
// Options.PartSize × (Options.Concurrency+1) per Write regardless of object size.
//
// Errors can be told apart with errors.Is: ErrNotFound, ErrPreconditionFailed, ErrPermission,
// ErrUnreachable (the SDK's own retries are exhausted), ErrContentMismatch, ErrInvalidKey. The error
// text names the store and key but never a credential.
type Store interface {
	// List calls fn for every object below dir, that is whose key starts with dir+"/" ("" lists
	// the whole store), in no particular order. Pages are fetched as fn consumes them (Options.PageSize entries per
	// request), so memory does not grow with the listing. Each entry carries what the listing itself
	// proves (see Object); fetching more would need a Stat per object.
	//
	// An error returned by fn stops the listing and is returned as is. Keys in the store that are not
	// valid keys (a hostile or foreign bucket may hold "a/../../x" or "a//b") are never passed to fn:
	// the listing goes on, and at its end List returns an error wrapping ErrInvalidKey
	// (an *InvalidKeysError naming them) so that nothing is silently hidden. Zero-byte "folder/"
	// markers made by consoles are skipped without error. A missing bucket, container or root
	// directory is ErrNotFound; a missing dir inside it lists nothing.
	List(ctx context.Context, dir string, fn func(Object) error) error

	// Stat returns everything the store knows about one object without reading its content.
	Stat(ctx context.Context, key string) (Object, error)

	// Read streams bytes [opts.Offset, opts.Offset+opts.Length) of an object to fn; Length 0 means
	// "to the end". A range that starts at or beyond the end yields an empty reader, one that runs
	// past the end is cut at the end. With opts.IfMatch set the read fails with
	// ErrPreconditionFailed unless the object is still at that Revision, which lets parallel ranged
	// reads of one big object be sure they all read the same version.
	//
	// Why a callback rather than returning an io.ReadCloser (restic's Load does the same): the
	// store owns the response body and always drains and closes it, even when fn panics or returns
	// early, so no connection leaks; and fn must be idempotent — it may be called again from the
	// start of the range if a retrying wrapper sees the connection break mid-body — so callers
	// that hash inside fn reset their hashers at its top. A truncated body is reported to fn as
	// io.ErrUnexpectedEOF, never as a clean io.EOF.
	Read(ctx context.Context, key string, opts ReadOptions, fn func(io.Reader) error) error

	// Write stores the content of r under key, streaming it: objects larger than Options.PartSize
	// go up in parts (S3 multipart upload, Azure staged blocks, GCS resumable chunks) with at most
	// Options.Concurrency parts in flight. Nothing is ever visible under key until the whole
	// content has arrived and matched opts (no partial objects under the final name).
	//
	// The checksums in opts.Checksums are computed over the bytes as they stream; if any differs
	// (or opts.Size does), Write commits nothing and returns ErrContentMismatch. The store also
	// records a native full-object checksum where the provider can keep one, so that the object is
	// quick-verifiable forever after: S3 CRC64NVME (FULL_OBJECT, on single PUT and multipart
	// alike), GCS CRC32C (sent with the upload), Azure Content-MD5 (set on commit). The
	// Capabilities of the store say which.
	//
	// opts.IfNotExists and opts.IfMatch make the write conditional (lock files, journals): the
	// loser of a race gets ErrPreconditionFailed.
	//
	// The returned Object is built from the write's own response (never a later Stat, which could
	// see someone else's write): Key, Size, ETag, Revision, Generation and the native checksums
	// the store recorded; ModTime may be zero.
	Write(ctx context.Context, key string, r io.Reader, opts WriteOptions) (Object, error)

	// Delete removes an object. Deleting a missing object is not an error, unless opts.IfMatch is
	// set: then a missing object is ErrNotFound and one at another revision ErrPreconditionFailed.
	Delete(ctx context.Context, key string, opts DeleteOptions) error

	// Capabilities reports what the store can prove about its objects.
	Capabilities() Capabilities

	// String returns the store's URL, without any credential.
	String() string

	// Close releases the clients' resources.
	Close() error
}

// Object describes one object as a listing entry or a Stat result.
type Object struct {
	Key     string // relative to the store's prefix
	Size    int64
	ModTime time.Time
	// ETag is the provider's entity tag as reported, quotes included. On S3 it is the content
	// MD5 only for single-part uploads that are not SSE-KMS/SSE-C encrypted (see Checksums and
	// Encryption); on GCS and Azure it is opaque.
	ETag string
	// Generation is the GCS object generation or the S3/Azure version id, when the store has one.
	Generation string
	// Revision is the token for compare-and-swap: pass it as WriteOptions.IfMatch,
	// DeleteOptions.IfMatch or ReadOptions.IfMatch. It is the ETag on S3 and Azure, the generation
	// on GCS and an inode/mtime/size token on local disk. Opaque; compare only with ==.
	Revision string
	// Checksums are the native checksums the store reported, each in the encoding the manifest
	// records (base64 of the big-endian digest for MD5 and the CRCs, lower-case hex for SHA-256 and
	// SHA-1) so that a full-object value compares to manifest.Checksums as a plain string.
	Checksums []Checksum
	// Encryption is what the store said about server-side encryption; EncryptionUnknown in S3
	// listings, which do not say.
	Encryption Encryption
	// Confirmed, in the listing of a store that lists from an index (Capabilities.ListFromIndex:
	// a registry's manifest), says the store itself answered for this object since it was opened
	// — a write it committed, a HEAD that found it — so that the entry is not the index's word
	// alone and needs no Stat to be believed.
	Confirmed bool
}

// Checksum returns the full-object value of one algorithm, if the object has one. Values that
// come from an S3 ETag are included (see Checksum.FromETag).
func (o Object) Checksum(alg Algorithm) (Checksum, bool) {
	for _, c := range o.Checksums {
		if c.Algorithm == alg && !c.Composite {
			return c, true
		}
	}
	return Checksum{}, false
}

// Algorithm names a checksum algorithm, as the manifest does. The names live in package checksum;
// they are repeated here because every Store speaks them.
type Algorithm = checksum.Algorithm

const (
	SHA256    = checksum.SHA256
	SHA1      = checksum.SHA1
	MD5       = checksum.MD5
	CRC32C    = checksum.CRC32C
	CRC32     = checksum.CRC32
	CRC64NVME = checksum.CRC64NVME
)

// Checksum is one native checksum of an object.
type Checksum struct {
	Algorithm Algorithm
	// Value is base64 of the big-endian digest for MD5 and the CRCs and lower-case hex for
	// SHA-256/SHA-1 — the manifest's encodings. Composite values are kept exactly as the provider
	// reported them (S3: "base64-N").
	Value string
	// Composite marks a checksum of part checksums (an S3 COMPOSITE multipart checksum). It is not
	// comparable with any whole-file digest: a verifier must treat the object as unverified.
	Composite bool
	// FromETag marks an MD5 taken from an S3 ETag of 32 hex digits. Such an ETag is the content MD5
	// unless the object is SSE-KMS or SSE-C encrypted. Equality with an expected MD5 is proof; a
	// difference proves a mismatch only when Object.Encryption is known (a Stat) and is neither
	// EncryptionKMS nor EncryptionCustomerKey — Stat drops the value when it is one of those.
	FromETag bool
}

// Encryption is the server-side encryption an object reports.
type Encryption string

const (
	EncryptionUnknown       Encryption = ""               // the call did not say (S3 listings)
	EncryptionNone          Encryption = "none"           // the store reported no encryption
	EncryptionServerManaged Encryption = "server-managed" // SSE-S3, Google- or Microsoft-managed keys
	EncryptionKMS           Encryption = "kms"            // SSE-KMS, DSSE-KMS, GCS CMEK
	EncryptionCustomerKey   Encryption = "customer-key"   // SSE-C, GCS CSEK, Azure CPK
)

// Checksums are expected digests of content being written, in the manifest's encodings; empty
// fields are not checked. They are manifest.Checksums too (both are checksum.Sums).
type Checksums = checksum.Sums

// ReadOptions select the bytes of a Read.
type ReadOptions struct {
	Offset int64
	Length int64 // 0: to the end of the object
	// IfMatch, if set, is a Revision the object must still be at.
	IfMatch string
	// Hashed says the caller proves every byte it reads against a collision-resistant digest of
	// its own (deep verification's BLAKE3 or SHA-256): a store may then skip an integrity check
	// of its own that costs CPU per byte and proves less (S3's CRC64NVME of a whole-object GET,
	// ~15 % of a deep verification's CPU). A store that skips it reports no error for it.
	Hashed bool
}

// WriteOptions describe a Write.
type WriteOptions struct {
	// Size is the content length if known, else 0 or negative; a known size lets the store pick
	// single-request or multipart upfront and is checked against the bytes read.
	Size int64
	// Checksums, when set, are verified over the streamed bytes before anything is committed, and
	// those the provider can keep are sent along so that the service verifies them too.
	Checksums Checksums
	// IfNotExists makes the write a conditional create (HTTP If-None-Match: *).
	IfNotExists bool
	// IfMatch makes the write a compare-and-swap: it succeeds only while the object is at this
	// Revision. A missing object fails the precondition too.
	IfMatch string
	// ContentType is recorded where the store keeps one; default application/octet-stream.
	ContentType string
}

// DeleteOptions describe a Delete.
type DeleteOptions struct {
	// IfMatch deletes only while the object is at this Revision (releasing only your own lock).
	IfMatch string
}

// Capabilities are what a store can prove about its objects; callers ask instead of assuming.
type Capabilities struct {
	// WriteChecksums are the full-object native checksums every object written through this store
	// carries afterwards, readable by Stat.
	WriteChecksums []Algorithm
	// ListChecksums are the checksums a listing entry can carry (values may still be missing on
	// objects written by other tools; S3's MD5 comes from the ETag, see Checksum.FromETag).
	ListChecksums []Algorithm
	// Lacks are what the store cannot do at all (Lacks of its scheme): a caller that needs one
	// refuses early with the reason.
	Lacks []Lack
	// ListFromIndex says a listing entry comes from an index of the objects, not from the objects
	// themselves (a registry lists the layers its manifest names): an entry does not show that
	// the object exists, so a verification Stats every entry before calling it OK.
	ListFromIndex bool
}

// Options tune a store. The zero value is the production default: each SDK's default credential
// chain, its retry policy (GCS's bounded, see RetryOptions) and moderately sized parts.
type Options struct {
	Retry RetryOptions
	// PartSize is the size of upload parts and of the single-request threshold: 0 means 8 MiB. S3
	// needs at least 5 MiB for all but the last part; it is raised automatically when a known
	// Size would otherwise need more than the provider's part limit (S3 10,000, Azure 50,000).
	PartSize int64
	// Concurrency is the number of parts of one Write in flight; 0 means 4.
	Concurrency int
	// MaxListEntries caps the entries one List passes on: 0 means DefaultMaxListEntries. Past it
	// List fails with ErrListTooLarge.
	MaxListEntries int
	// PageSize is the number of entries per listing request: 0 means the provider default (1,000
	// on S3 and GCS, 5,000 on Azure). Small values exist for tests.
	PageSize int
	// HTTPClient, if set, carries every request (fault injection, proxies). For gs:// it replaces
	// the SDK's authenticating client, so it is meant for emulators.
	HTTPClient *http.Client
	// S3Credentials, an aws.CredentialsProvider, overrides the AWS default credential chain
	// (tests, embedding). It is typed any so that this package links no cloud SDK; the s3://
	// store refuses any other type.
	S3Credentials any
	// AzureConnectionString overrides AZURE_STORAGE_CONNECTION_STRING (tests, embedding).
	AzureConnectionString string
	// DockerConfig is the directory whose config.json (and credential helpers) give registry
	// (oci://) credentials; "" means DOCKER_CONFIG, else ~/.docker, as docker and oras read them.
	DockerConfig string
	// Known, when set, collects every credential a store sends that its caller cannot know
	// (a registry's Authorization from the Docker configuration or a token server), so that
	// whatever prints an error redacts those exact values (see redact.Known). A store's own
	// errors redact them whether or not it is set.
	Known *redact.Known
	// Log, when set, receives one debug line per HTTP request (method, host, key, status, attempt)
	// and one line per retry as the SDK schedules it; never a credential or a query value.
	Log *slog.Logger
	// Private marks a store of control state (the failover lock and journal, drill history). On
	// file:// its root must be the caller's own directory — created 0700 if missing; refused if
	// it is a symbolic link, owned by another user, writable by group or others, or below a
	// directory another user controls — its files are created 0600 and its directories 0700,
	// and a read never follows a symbolic link. Other schemes ignore it.
	Private bool
}

// RetryOptions bound the SDK retryers (requests) and WithRetry (broken read bodies); see
// retry.go for which layer retries what. Zero fields keep each SDK's default, except that GCS,
// which by default retries idempotent calls without limit until the context ends, is bounded to
// DefaultGCSMaxAttempts attempts.
type RetryOptions struct {
	MaxAttempts    int           // attempts per request including the first
	InitialBackoff time.Duration // first backoff (S3: the jitter cap base; Azure: RetryDelay)
	MaxBackoff     time.Duration // cap on one backoff
	// StallTimeout ends a read that receives no byte for this long as ErrUnreachable; 0 means
	// DefaultStallTimeout. Open applies it to every store (WithStallGuard): without it, GCS's
	// reader, which re-opens a broken body by itself with no bound, would hang forever on a body
	// that keeps breaking before its first byte, and any peer that stops mid-body would too.
	StallTimeout time.Duration
}

// DefaultStallTimeout is RetryOptions.StallTimeout when unset.
const DefaultStallTimeout = 2 * time.Minute

// DefaultGCSMaxAttempts bounds the GCS retryer when RetryOptions.MaxAttempts is 0.
const DefaultGCSMaxAttempts = 4

const (
	DefaultPartSize    = 8 << 20 // Options.PartSize when unset
	defaultConcurrency = 4
)

func (o Options) EffectivePartSize() int64 {
	if o.PartSize > 0 {
		return o.PartSize
	}
	return DefaultPartSize
}

func (o Options) EffectiveConcurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return defaultConcurrency
}

// WithoutSecrets is what a store keeps of its options: nothing a %#v could print a secret from.
func (o Options) WithoutSecrets() Options {
	o.S3Credentials = nil
	o.AzureConnectionString = ""
	return o
}
