package gcs

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"lifeboat/providers"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// gcsStore is a bucket and prefix in Google Cloud Storage (or an emulator named by
// STORAGE_EMULATOR_HOST, which the SDK honours by itself).
//
// Native checksums: every GCS object has a full-object CRC32C (composite objects included) and,
// unless it is composite, an MD5; listings carry both, so quick verification needs no per-object
// call. Writes send the caller's CRC32C (Writer.CRC32C + SendCRC32C) when given — otherwise the
// SDK's automatic CRC32C — and the caller's MD5, so the service rejects bytes that do not match
// before the object is finalised.
//
// Retries: the SDK retries idempotent calls WITHOUT LIMIT until the context ends by default; this
// store bounds it to Options.Retry.MaxAttempts (DefaultGCSMaxAttempts when 0) with the SDK's
// backoff (1 s initial, 30 s cap, ×2) unless Options.Retry changes it. Writes are retried too:
// conditional ones are idempotent by nature, and an unconditional overwrite with the same bytes is.
type gcsStore struct {
	client   *storage.Client
	bucket   *storage.BucketHandle
	name     string
	ks       providers.Keyspace
	url      string
	endpoint string // host[:port] requests go to
	opts     providers.Options
	pageSize int
}

func newGCSStore(ctx context.Context, bucket, prefix string, opts providers.Options) (*gcsStore, error) {
	ks, err := providers.NewKeyspace(prefix)
	if err != nil {
		return nil, err
	}
	var copts []option.ClientOption
	switch {
	case opts.HTTPClient != nil && opts.Log != nil:
		hc := *opts.HTTPClient
		hc.Transport = providers.NewLogTransport(hc.Transport, opts.Log)
		copts = append(copts, option.WithHTTPClient(&hc))
	case opts.HTTPClient != nil:
		copts = append(copts, option.WithHTTPClient(opts.HTTPClient))
	case opts.Log != nil && getenv("STORAGE_EMULATOR_HOST") != "":
		copts = append(copts, option.WithHTTPClient(&http.Client{Transport: providers.NewLogTransport(nil, opts.Log)}))
	case opts.Log != nil:
		// The authenticating transport of the SDK, over one that logs (so no Authorization
		// header is ever in reach of the log).
		t, err := htransport.NewTransport(ctx, providers.NewLogTransport(nil, opts.Log), option.WithScopes(storage.ScopeFullControl))
		if err != nil {
			return nil, fmt.Errorf("creating GCS client: %s", providers.Describe(err))
		}
		copts = append(copts, option.WithHTTPClient(&http.Client{Transport: t}))
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("creating GCS client: %s", providers.Describe(err))
	}
	attempts := opts.Retry.MaxAttempts
	if attempts <= 0 {
		attempts = providers.DefaultGCSMaxAttempts
	}
	bo := gax.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}
	if opts.Retry.InitialBackoff > 0 {
		bo.Initial = opts.Retry.InitialBackoff
	}
	if opts.Retry.MaxBackoff > 0 {
		bo.Max = opts.Retry.MaxBackoff
	}
	client.SetRetry(storage.WithMaxAttempts(attempts), storage.WithBackoff(bo))
	u := &url.URL{Scheme: "gs", Host: bucket, Path: "/" + ks.Prefix}
	endpoint := "storage.googleapis.com"
	if h := getenv("STORAGE_EMULATOR_HOST"); h != "" {
		endpoint = providers.HostOf(h)
	}
	return &gcsStore{client: client, bucket: client.Bucket(bucket), name: bucket, ks: ks, url: u.String(), opts: opts.WithoutSecrets(), pageSize: opts.PageSize,
		endpoint: endpoint}, nil
}

func (s *gcsStore) String() string   { return s.url }
func (s *gcsStore) GoString() string { return "providers.Store(" + s.String() + ")" }
func (s *gcsStore) Close() error     { return s.client.Close() }

func (s *gcsStore) Capabilities() providers.Capabilities {
	return providers.Capabilities{WriteChecksums: []providers.Algorithm{providers.CRC32C}, ListChecksums: []providers.Algorithm{providers.CRC32C, providers.MD5}}
}

var getenv = os.Getenv

func init() {
	providers.AddDescriber(func(err error) (string, bool) {
		var ge *googleapi.Error
		if errors.As(err, &ge) {
			msg := ge.Message
			if msg == "" && len(ge.Errors) > 0 {
				msg = ge.Errors[0].Message
			}
			if msg == "" {
				msg = http.StatusText(ge.Code)
			}
			return fmt.Sprintf("HTTP %d: %s", ge.Code, providers.Sanitize(msg, providers.MaxServerMessage)), true
		}
		return "", false
	})
}

func classifyGCS(err error) error {
	if strings.Contains(err.Error(), "could not find default credentials") {
		return providers.ErrMisconfigured // no ADC: nothing was sent
	}
	if kind, ok := providers.ClassifyCommon(err); ok {
		return kind
	}
	if errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) {
		return providers.ErrNotFound
	}
	if strings.Contains(err.Error(), "bad CRC on read") {
		return providers.ErrContentMismatch // the SDK's whole-object CRC32C check failed: the bytes are not the object's
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch c := ge.Code; {
		case c == 404:
			return providers.ErrNotFound
		case c == 412:
			return providers.ErrPreconditionFailed
		case c == 401 || c == 403:
			return providers.ErrPermission
		case c == 400 && isChecksumMessage(ge):
			return providers.ErrContentMismatch
		case c == 429 || c >= 500:
			return providers.ErrUnreachable
		}
	}
	return nil
}

func isChecksumMessage(ge *googleapi.Error) bool {
	s := strings.ToLower(ge.Message + " " + ge.Body)
	return strings.Contains(s, "checksum") || strings.Contains(s, "crc32c") || strings.Contains(s, "md5")
}

func (s *gcsStore) fail(op, key string, err error) error {
	return &providers.Error{Op: op, Store: s.url, Key: key, Kind: classifyGCS(err), Err: err, Endpoint: s.endpoint}
}

func gcsObject(key string, a *storage.ObjectAttrs) providers.Object {
	obj := providers.Object{
		Key: key, Size: a.Size, ModTime: a.Updated, ETag: a.Etag,
		Generation: strconv.FormatInt(a.Generation, 10),
		Encryption: providers.EncryptionServerManaged,
	}
	obj.Revision = obj.Generation
	switch {
	case a.CustomerKeySHA256 != "":
		obj.Encryption = providers.EncryptionCustomerKey
	case a.KMSKeyName != "":
		obj.Encryption = providers.EncryptionKMS
	}
	// CRC32C is always a full-object value, for composite objects too. The SDK cannot tell a
	// missing CRC32C from zero; zero is the empty object's CRC32C, so it is trusted only there
	// (a non-empty object with a true CRC32C of 0 — one in 2^32 — is merely left unverified).
	if a.CRC32C != 0 || a.Size == 0 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], a.CRC32C)
		obj.Checksums = append(obj.Checksums, providers.Checksum{Algorithm: providers.CRC32C, Value: base64.StdEncoding.EncodeToString(b[:])})
	}
	// Composite objects have no MD5 on GCS; an emulator may still report one, which is dropped.
	if len(a.MD5) == 16 && a.ComponentCount == 0 {
		obj.Checksums = append(obj.Checksums, providers.Checksum{Algorithm: providers.MD5, Value: base64.StdEncoding.EncodeToString(a.MD5)})
	}
	return obj
}

func (s *gcsStore) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	fn = providers.CapEntries(fn, s.opts.EffectiveMaxListEntries())
	dir, err := providers.ValidateDir(dir)
	if err != nil {
		return &providers.Error{Op: "list", Store: s.url, Key: dir, Err: err}
	}
	q := &storage.Query{Prefix: s.ks.ListPrefix(dir)}
	_ = q.SetAttrSelection([]string{"Name", "Size", "CRC32C", "MD5", "Etag", "Generation", "Updated",
		"ComponentCount", "KMSKeyName", "CustomerKeySHA256"})
	it := s.bucket.Objects(ctx, q)
	if s.pageSize > 0 {
		it.PageInfo().MaxSize = s.pageSize
	}
	var bad providers.InvalidKeys
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return s.fail("list", dir, err)
		}
		key, skip, err := s.ks.Relative(a.Name, a.Size)
		if skip {
			continue
		}
		if err != nil {
			bad.Add(a.Name)
			continue
		}
		if err := fn(gcsObject(key, a)); err != nil {
			return err
		}
	}
	if err := bad.Result(); err != nil {
		return &providers.Error{Op: "list", Store: s.url, Key: dir, Err: err}
	}
	return nil
}

func (s *gcsStore) Stat(ctx context.Context, key string) (providers.Object, error) {
	if err := providers.ValidateKey(key); err != nil {
		return providers.Object{}, &providers.Error{Op: "stat", Store: s.url, Key: key, Err: err}
	}
	a, err := s.bucket.Object(s.ks.Full(key)).Attrs(ctx)
	if err != nil {
		return providers.Object{}, s.fail("stat", key, err)
	}
	return gcsObject(key, a), nil
}

func (s *gcsStore) Read(ctx context.Context, key string, opts providers.ReadOptions, fn func(io.Reader) error) error {
	if err := providers.ValidateKey(key); err != nil {
		return &providers.Error{Op: "read", Store: s.url, Key: key, Err: err}
	}
	if opts.Offset < 0 || opts.Length < 0 {
		return &providers.Error{Op: "read", Store: s.url, Key: key, Err: fmt.Errorf("negative range %d+%d", opts.Offset, opts.Length)}
	}
	// ReadCompressed: always the stored bytes, never gzip-transcoded ones, so sizes and checksums
	// match what was written.
	o := s.bucket.Object(s.ks.Full(key)).ReadCompressed(true)
	if opts.IfMatch != "" {
		gen, err := strconv.ParseInt(opts.IfMatch, 10, 64)
		if err != nil {
			return &providers.Error{Op: "read", Store: s.url, Key: key, Kind: providers.ErrPreconditionFailed, Err: fmt.Errorf("revision %q is not a GCS generation", opts.IfMatch)}
		}
		// Read that very generation, and only while it is live: GCS answers 412 when it was
		// replaced, fake-gcs-server (which ignores read preconditions) 404 for the lost generation.
		o = o.Generation(gen).If(storage.Conditions{GenerationMatch: gen})
	}
	length := opts.Length
	if length == 0 {
		length = -1
	}
	// The SDK's reader re-opens a body that breaks mid-read, unboundedly: the stall guard every
	// store gets from Open (WithStallGuard) ends such a read as unreachable.
	r, err := o.NewRangeReader(ctx, opts.Offset, length)
	if err != nil {
		var ge *googleapi.Error
		if errors.As(err, &ge) && ge.Code == 416 {
			return fn(bytes.NewReader(nil))
		}
		e := s.fail("read", key, err).(*providers.Error)
		if opts.IfMatch != "" && e.Kind == providers.ErrNotFound {
			if _, serr := s.bucket.Object(s.ks.Full(key)).Attrs(ctx); serr == nil {
				e.Kind = providers.ErrPreconditionFailed // the object lives on at another generation
			}
		}
		return e
	}
	defer r.Close()
	return providers.ReadBody(r, fn, func(err error) error { return s.fail("read", key, err) })
}

func (s *gcsStore) Write(ctx context.Context, key string, r io.Reader, opts providers.WriteOptions) (providers.Object, error) {
	if err := providers.ValidateKey(key); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: err}
	}
	if err := opts.Checksums.Validate(); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: err}
	}
	o := s.bucket.Object(s.ks.Full(key))
	switch {
	case opts.IfNotExists && opts.IfMatch != "":
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: errors.New("IfNotExists and IfMatch are exclusive")}
	case opts.IfNotExists:
		o = o.If(storage.Conditions{DoesNotExist: true})
	case opts.IfMatch != "":
		gen, err := strconv.ParseInt(opts.IfMatch, 10, 64)
		if err != nil {
			return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Kind: providers.ErrPreconditionFailed, Err: fmt.Errorf("revision %q is not a GCS generation", opts.IfMatch)}
		}
		o = o.If(storage.Conditions{GenerationMatch: gen})
	default:
		o = o.Retryer(storage.WithPolicy(storage.RetryAlways))
	}

	// The writer is cancelled, not closed, when anything goes wrong (or the bytes do not match
	// opts), and a cancelled resumable upload is never finalised: no partial object appears.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := o.NewWriter(wctx)
	w.ChunkSize = int(min(s.opts.EffectivePartSize(), 1<<30))
	w.ContentType = opts.ContentType
	if w.ContentType == "" {
		w.ContentType = "application/octet-stream"
	}
	if opts.Checksums.CRC32C != "" {
		raw, _ := base64.StdEncoding.DecodeString(opts.Checksums.CRC32C)
		w.CRC32C = binary.BigEndian.Uint32(raw)
		w.SendCRC32C = true
	}
	if opts.Checksums.MD5 != "" {
		w.MD5, _ = base64.StdEncoding.DecodeString(opts.Checksums.MD5)
	}
	d := providers.NewDigester(opts.Checksums)
	if _, err := io.Copy(w, io.TeeReader(providers.SourceReader{Ctx: ctx, R: r}, d)); err != nil {
		cancel()
		_ = w.Close()
		return providers.Object{}, s.writeFail(key, opts, err)
	}
	if err := d.Check(opts.Size); err != nil {
		cancel()
		_ = w.Close()
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: err}
	}
	if err := w.Close(); err != nil {
		return providers.Object{}, s.writeFail(key, opts, err)
	}
	return gcsObject(key, w.Attrs()), nil
}

func (s *gcsStore) writeFail(key string, opts providers.WriteOptions, err error) error {
	return providers.CASWriteError(s.fail("write", key, err).(*providers.Error), opts)
}

func (s *gcsStore) Delete(ctx context.Context, key string, opts providers.DeleteOptions) error {
	if err := providers.ValidateKey(key); err != nil {
		return &providers.Error{Op: "delete", Store: s.url, Key: key, Err: err}
	}
	o := s.bucket.Object(s.ks.Full(key))
	if opts.IfMatch != "" {
		gen, err := strconv.ParseInt(opts.IfMatch, 10, 64)
		if err != nil {
			return &providers.Error{Op: "delete", Store: s.url, Key: key, Kind: providers.ErrPreconditionFailed, Err: fmt.Errorf("revision %q is not a GCS generation", opts.IfMatch)}
		}
		// Look first: a missing object is ErrNotFound, another generation ErrPreconditionFailed
		// (also where an emulator ignores delete preconditions); the condition still guards the
		// delete itself against a racing writer.
		a, err := o.Attrs(ctx)
		if err != nil {
			return s.fail("delete", key, err)
		}
		if a.Generation != gen {
			return &providers.Error{Op: "delete", Store: s.url, Key: key, Kind: providers.ErrPreconditionFailed, Err: errors.New("generation changed")}
		}
		o = o.If(storage.Conditions{GenerationMatch: gen})
	}
	if err := o.Delete(ctx); err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) && opts.IfMatch == "" {
			return nil
		}
		return s.fail("delete", key, err)
	}
	return nil
}

func (s *gcsStore) ListDirs(ctx context.Context, max int) ([]string, error) {
	q := &storage.Query{Prefix: s.ks.Prefix, Delimiter: "/"}
	_ = q.SetAttrSelection([]string{"Name"})
	it := s.bucket.Objects(ctx, q)
	it.PageInfo().MaxSize = max
	var names []string
	for seen := 0; seen < max; seen++ {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return names, s.fail("list", "", err)
		}
		if n, ok := s.ks.DirName(a.Prefix); ok && a.Prefix != "" {
			names = append(names, n)
		}
	}
	return names, nil
}
