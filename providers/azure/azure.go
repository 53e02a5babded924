package azure

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"lifeboat/internal/base/redact"
	"lifeboat/providers"
)

const azureMaxBlocks = 50000

// azureStore is a container and prefix in Azure Blob Storage (or Azurite).
//
// Native checksums: Azure keeps only Content-MD5. The service computes it for single Put Blob
// uploads but stores whatever the uploader claims (unvalidated, possibly nothing) for block-list
// uploads. This store therefore computes the MD5 of every byte it streams and sets it on commit —
// after checking it against the caller's expected MD5, if given — so every blob Lifeboat writes
// carries a Content-MD5 that is true. Listings carry Content-MD5, so quick verification needs no
// per-blob call; a blob without one (written by another tool in blocks) is unverifiable quickly.
//
// Retries: azcore's retry policy (3 retries, 0.8 s initial, 60 s cap, honours Retry-After) with
// Options.Retry applied; ranged reads resume broken bodies through the SDK's retry reader, which
// pins the ETag so a resumed read never mixes two versions.
type azureStore struct {
	cc       *container.Client
	ks       providers.Keyspace
	url      string
	endpoint string // host[:port] requests go to
	opts     providers.Options
	pageSize int32
}

func newAzureStore(ctx context.Context, account, containerName, prefix string, opts providers.Options) (*azureStore, error) {
	ks, err := providers.NewKeyspace(prefix)
	if err != nil {
		return nil, err
	}
	copts := &azblob.ClientOptions{}
	r := &copts.Retry
	if opts.Retry.MaxAttempts > 0 {
		r.MaxRetries = int32(opts.Retry.MaxAttempts - 1)
		if r.MaxRetries == 0 {
			r.MaxRetries = -1 // azcore: -1 disables retries, 0 means the default
		}
	}
	if opts.Retry.InitialBackoff > 0 {
		r.RetryDelay = opts.Retry.InitialBackoff
	}
	if opts.Retry.MaxBackoff > 0 {
		r.MaxRetryDelay = opts.Retry.MaxBackoff
		if r.RetryDelay == 0 || r.RetryDelay > r.MaxRetryDelay {
			r.RetryDelay = r.MaxRetryDelay
		}
	}
	if opts.HTTPClient != nil {
		copts.Transport = opts.HTTPClient
	}
	if opts.Log != nil {
		var base http.RoundTripper = http.DefaultTransport
		if copts.Transport != nil {
			base = providers.DoerTransport{D: copts.Transport}
		}
		copts.Transport = providers.NewLogTransport(base, opts.Log)
	}
	copts.Logging.IncludeBody = false

	var client *azblob.Client
	cs := opts.AzureConnectionString
	if cs == "" {
		cs = getenv("AZURE_STORAGE_CONNECTION_STRING")
	}
	if cs != "" {
		fields := redact.ConnectionStringFields(cs)
		if name := fields["accountname"]; name != "" && name != account {
			return nil, fmt.Errorf("the Azure connection string is for account %q, the URL names %q", name, account)
		}
		client, err = azblob.NewClientFromConnectionString(cs, copts)
		if err != nil {
			// The SDK's message can quote the string; say only which part is wrong.
			return nil, errors.New("AZURE_STORAGE_CONNECTION_STRING is malformed (need AccountName, AccountKey or SharedAccessSignature, and optionally BlobEndpoint)")
		}
	} else {
		cred, err := azidentity.NewDefaultAzureCredential(nil)
		if err != nil {
			return nil, fmt.Errorf("default Azure credential: %s", providers.Describe(err))
		}
		client, err = azblob.NewClient(fmt.Sprintf("https://%s.blob.core.windows.net/", account), cred, copts)
		if err != nil {
			return nil, fmt.Errorf("create an Azure client for account %q: %s", account, providers.Describe(err))
		}
	}
	u := &url.URL{Scheme: "az", Host: account, Path: "/" + containerName + "/" + ks.Prefix}
	s := &azureStore{cc: client.ServiceClient().NewContainerClient(containerName), ks: ks, url: u.String(), opts: opts.WithoutSecrets(),
		endpoint: providers.HostOf(client.URL())}
	if opts.PageSize > 0 {
		s.pageSize = int32(min(opts.PageSize, 5000))
	}
	return s, nil
}

func (s *azureStore) String() string   { return s.url }
func (s *azureStore) GoString() string { return "providers.Store(" + s.String() + ")" }
func (s *azureStore) Close() error     { return nil }

func (s *azureStore) Capabilities() providers.Capabilities {
	return providers.Capabilities{WriteChecksums: []providers.Algorithm{providers.MD5}, ListChecksums: []providers.Algorithm{providers.MD5}}
}

func init() {
	providers.AddDescriber(func(err error) (string, bool) {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			// ResponseError.Error() dumps the request and response; keep only status and code.
			if re.ErrorCode != "" {
				return fmt.Sprintf("HTTP %d %s", re.StatusCode, providers.Sanitize(re.ErrorCode, 64)), true
			}
			return fmt.Sprintf("HTTP %d %s", re.StatusCode, http.StatusText(re.StatusCode)), true
		}
		return "", false
	})
}

func classifyAzure(err error) error {
	if strings.Contains(err.Error(), "DefaultAzureCredential") && !errors.Is(err, context.Canceled) {
		return providers.ErrMisconfigured // no usable credential in the default chain
	}
	if kind, ok := providers.ClassifyCommon(err); ok {
		return kind
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		switch c := re.StatusCode; {
		case c == 404:
			return providers.ErrNotFound
		case c == 409 || c == 412:
			return providers.ErrPreconditionFailed
		case c == 401 || c == 403:
			return providers.ErrPermission
		case c == 400 && (re.ErrorCode == "Md5Mismatch" || strings.Contains(re.ErrorCode, "Crc64") || strings.Contains(re.ErrorCode, "Checksum")):
			return providers.ErrContentMismatch
		case c == 429 || c >= 500:
			return providers.ErrUnreachable
		}
	}
	var ae *azidentity.AuthenticationFailedError
	if errors.As(err, &ae) {
		return providers.ErrPermission // a credential was found and refused
	}
	return nil
}

func (s *azureStore) fail(op, key string, err error) error {
	return &providers.Error{Op: op, Store: s.url, Key: key, Kind: classifyAzure(err), Err: err, Endpoint: s.endpoint}
}

func azureObject(key string, size *int64, mod *time.Time, etag *azcore.ETag, md5 []byte, version, cpk *string) providers.Object {
	obj := providers.Object{Key: key, Encryption: providers.EncryptionServerManaged}
	if size != nil {
		obj.Size = *size
	}
	if mod != nil {
		obj.ModTime = *mod
	}
	if etag != nil {
		// Headers quote the ETag, listings do not: always use the quoted form.
		obj.ETag = string(*etag)
		if !strings.HasPrefix(obj.ETag, `"`) && obj.ETag != "" {
			obj.ETag = `"` + obj.ETag + `"`
		}
	}
	obj.Revision = obj.ETag
	if version != nil {
		obj.Generation = *version
	}
	if cpk != nil && *cpk != "" {
		obj.Encryption = providers.EncryptionCustomerKey
	}
	if len(md5) == 16 {
		obj.Checksums = []providers.Checksum{{Algorithm: providers.MD5, Value: base64.StdEncoding.EncodeToString(md5)}}
	}
	return obj
}

func (s *azureStore) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	fn = providers.CapEntries(fn, s.opts.EffectiveMaxListEntries())
	dir, err := providers.ValidateDir(dir)
	if err != nil {
		return &providers.Error{Op: "list", Store: s.url, Key: dir, Err: err}
	}
	o := &container.ListBlobsFlatOptions{Prefix: toPtr(s.ks.ListPrefix(dir))}
	if s.pageSize > 0 {
		o.MaxResults = toPtr(s.pageSize)
	}
	var bad providers.InvalidKeys
	p := s.cc.NewListBlobsFlatPager(o)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.fail("list", dir, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil || b.Properties == nil {
				continue
			}
			pr := b.Properties
			var size int64
			if pr.ContentLength != nil {
				size = *pr.ContentLength
			}
			key, skip, err := s.ks.Relative(*b.Name, size)
			if skip {
				continue
			}
			if err != nil {
				bad.Add(*b.Name)
				continue
			}
			if err := fn(azureObject(key, pr.ContentLength, pr.LastModified, pr.ETag, pr.ContentMD5, b.VersionID, pr.CustomerProvidedKeySHA256)); err != nil {
				return err
			}
		}
	}
	if err := bad.Result(); err != nil {
		return &providers.Error{Op: "list", Store: s.url, Key: dir, Err: err}
	}
	return nil
}

func (s *azureStore) Stat(ctx context.Context, key string) (providers.Object, error) {
	if err := providers.ValidateKey(key); err != nil {
		return providers.Object{}, &providers.Error{Op: "stat", Store: s.url, Key: key, Err: err}
	}
	p, err := s.cc.NewBlobClient(s.ks.Full(key)).GetProperties(ctx, nil)
	if err != nil {
		return providers.Object{}, s.fail("stat", key, err)
	}
	return azureObject(key, p.ContentLength, p.LastModified, p.ETag, p.ContentMD5, p.VersionID, p.EncryptionKeySHA256), nil
}

func (s *azureStore) Read(ctx context.Context, key string, opts providers.ReadOptions, fn func(io.Reader) error) error {
	if err := providers.ValidateKey(key); err != nil {
		return &providers.Error{Op: "read", Store: s.url, Key: key, Err: err}
	}
	if opts.Offset < 0 || opts.Length < 0 {
		return &providers.Error{Op: "read", Store: s.url, Key: key, Err: fmt.Errorf("negative range %d+%d", opts.Offset, opts.Length)}
	}
	o := &blob.DownloadStreamOptions{Range: blob.HTTPRange{Offset: opts.Offset, Count: opts.Length}}
	if opts.IfMatch != "" {
		etag := azcore.ETag(opts.IfMatch)
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: &etag}}
	}
	resp, err := s.cc.NewBlobClient(s.ks.Full(key)).DownloadStream(ctx, o)
	if err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == 416 {
			return fn(bytes.NewReader(nil))
		}
		return s.fail("read", key, err)
	}
	retries := int32(3)
	if s.opts.Retry.MaxAttempts > 0 {
		retries = int32(s.opts.Retry.MaxAttempts - 1)
	}
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: retries})
	defer body.Close()
	return providers.ReadBody(body, fn, func(err error) error { return s.fail("read", key, err) })
}

func (s *azureStore) accessConditions(opts providers.WriteOptions) *blob.AccessConditions {
	switch {
	case opts.IfNotExists:
		return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: toPtr(azcore.ETagAny)}}
	case opts.IfMatch != "":
		return &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: toPtr(azcore.ETag(opts.IfMatch))}}
	}
	return nil
}

func (s *azureStore) Write(ctx context.Context, key string, r io.Reader, opts providers.WriteOptions) (providers.Object, error) {
	if err := providers.ValidateKey(key); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: err}
	}
	if err := opts.Checksums.Validate(); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: err}
	}
	if opts.IfNotExists && opts.IfMatch != "" {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.url, Key: key, Err: errors.New("IfNotExists and IfMatch are exclusive")}
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	up := &azureUpload{s: s, key: key, bb: s.cc.NewBlockBlobClient(s.ks.Full(key)), opts: opts, nonce: hex.EncodeToString(nonce[:])}
	d := providers.NewDigester(opts.Checksums, providers.MD5)
	plan := providers.UploadPlan{PartSize: s.opts.EffectivePartSize(), Concurrency: s.opts.EffectiveConcurrency(), MaxParts: azureMaxBlocks, Size: opts.Size}
	obj, err := providers.StreamUpload(ctx, r, plan, d, up)
	return providers.FinishUpload(obj, err, func(err error) error { return s.writeFail(key, opts, err) })
}

func (s *azureStore) writeFail(key string, opts providers.WriteOptions, err error) error {
	return providers.CASWriteError(s.fail("write", key, err).(*providers.Error), opts)
}

type azureUpload struct {
	s     *azureStore
	key   string
	bb    *blockblob.Client
	opts  providers.WriteOptions
	nonce string // block ids are unique per upload, so concurrent uploads to one name cannot mix
}

func (u *azureUpload) headers(md5 []byte) *blob.HTTPHeaders {
	ct := u.opts.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	return &blob.HTTPHeaders{BlobContentType: &ct, BlobContentMD5: md5}
}

func (u *azureUpload) written(etag *azcore.ETag, mod *time.Time, version *string, d *providers.Digester) providers.Object {
	size := d.N
	return azureObject(u.key, &size, mod, etag, d.Raw(providers.MD5), version, nil)
}

func (u *azureUpload) Single(ctx context.Context, data []byte, d *providers.Digester) (providers.Object, error) {
	md5 := d.Raw(providers.MD5)
	resp, err := u.bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), &blockblob.UploadOptions{
		HTTPHeaders:             u.headers(md5),
		TransactionalValidation: blob.TransferValidationTypeMD5(md5),
		AccessConditions:        u.s.accessConditions(u.opts),
	})
	if err != nil {
		return providers.Object{}, u.s.writeFail(u.key, u.opts, err)
	}
	return u.written(resp.ETag, resp.LastModified, resp.VersionID, d), nil
}

func (u *azureUpload) Begin(context.Context) error { return nil }

func (u *azureUpload) blockID(n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", u.nonce, n))
}

func (u *azureUpload) Part(ctx context.Context, n int, data []byte) error {
	_, err := u.bb.StageBlock(ctx, u.blockID(n), streaming.NopCloser(bytes.NewReader(data)), &blockblob.StageBlockOptions{
		TransactionalValidation: blob.TransferValidationTypeComputeCRC64(),
	})
	if err != nil {
		return u.s.writeFail(u.key, u.opts, err)
	}
	return nil
}

func (u *azureUpload) Commit(ctx context.Context, n int, d *providers.Digester) (providers.Object, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = u.blockID(i + 1)
	}
	resp, err := u.bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{
		HTTPHeaders:      u.headers(d.Raw(providers.MD5)),
		AccessConditions: u.s.accessConditions(u.opts),
	})
	if err != nil {
		return providers.Object{}, u.s.writeFail(u.key, u.opts, err)
	}
	return u.written(resp.ETag, resp.LastModified, resp.VersionID, d), nil
}

// abort: uncommitted blocks are garbage-collected by the service after a week and are invisible
// under the blob's name, so there is nothing to undo.
func (u *azureUpload) Abort(context.Context) {}

func (s *azureStore) Delete(ctx context.Context, key string, opts providers.DeleteOptions) error {
	if err := providers.ValidateKey(key); err != nil {
		return &providers.Error{Op: "delete", Store: s.url, Key: key, Err: err}
	}
	o := &blob.DeleteOptions{DeleteSnapshots: toPtr(blob.DeleteSnapshotsOptionTypeInclude)}
	if opts.IfMatch != "" {
		o.AccessConditions = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: toPtr(azcore.ETag(opts.IfMatch))}}
	}
	if _, err := s.cc.NewBlobClient(s.ks.Full(key)).Delete(ctx, o); err != nil {
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.ErrorCode == "BlobNotFound" && opts.IfMatch == "" {
			return nil
		}
		return s.fail("delete", key, err)
	}
	return nil
}

func toPtr[T any](v T) *T { return &v }

func (s *azureStore) ListDirs(ctx context.Context, max int) ([]string, error) {
	p := s.cc.NewListBlobsHierarchyPager("/", &container.ListBlobsHierarchyOptions{Prefix: toPtr(s.ks.Prefix), MaxResults: toPtr(int32(max))})
	if !p.More() {
		return nil, nil
	}
	page, err := p.NextPage(ctx)
	if err != nil {
		return nil, s.fail("list", "", err)
	}
	var names []string
	for _, bp := range page.Segment.BlobPrefixes {
		if bp.Name == nil {
			continue
		}
		if n, ok := s.ks.DirName(*bp.Name); ok {
			names = append(names, n)
		}
	}
	return names, nil
}

var getenv = os.Getenv
