package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"lifeboat/internal/base/redact"
	"lifeboat/providers"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// AnnotationFilepath is the layer annotation naming a DR bundle file (ModelPack's
// org.cncf.model.filepath); a registry replica's keys are these paths.
const AnnotationFilepath = "org.cncf.model.filepath"

// AnnotationTitle is the layer annotation an OCI client (oras pull, a Kubernetes image volume)
// names the file it writes after; see LayerTitle.
const AnnotationTitle = "org.opencontainers.image.title"

// keyOfTitle is LayerTitle's inverse, for a layer that names its file only by its title (pushed
// by another client, e.g. `oras push` run in such a directory): engine/… and deploy/… are those
// parts' files, any other title is a model file.
func keyOfTitle(t string) string {
	if strings.HasPrefix(t, "engine/") || strings.HasPrefix(t, "deploy/") {
		return t
	}
	return "model/" + t
}

// maxRegistryManifestBytes bounds the manifest read from a registry (manifest.MaxManifestBytes).
const maxRegistryManifestBytes = 64 << 20

// registryStore is an OCI registry repository seen as a store of DR bundle files. A registry
// keeps blobs by digest, not by name: a key (a bundle path, model/…) is resolved through the
// manifest at the location's reference — each layer names its file in the org.cncf.model.filepath
// annotation, or only in org.opencontainers.image.title when another client pushed it — and through the blobs this store wrote since it was opened (a replica being
// filled has no manifest yet; PushManifest adds it at the end).
//
// Stat is a HEAD of the blob (its size, and its SHA-256 digest as the native checksum); Read is
// a GET with Range; Write is a blob upload — chunked and resumable beyond one chunk, see
// registryupload.go — made only when a HEAD says the blob is missing.
// It lacks compare-and-swap and prefix listing (see Lacks): List lists only the keys it can
// resolve, conditional writes and deletes are ErrUnsupported.
type registryStore struct {
	loc      providers.Location
	repo     *remote.Repository
	partSize int64 // the chunk of an upload
	retry    providers.RetryOptions
	log      *slog.Logger
	// known are the credentials this store sent (see sentAuth): its errors never show them.
	known *redact.Known

	mu     sync.Mutex
	loaded bool
	keys   map[string]ocispec.Descriptor
	// written are the blobs Write committed or found in the repository (a HEAD) since the store
	// was opened: PushManifest need not ask for them again.
	written []ocispec.Descriptor
}

// newRegistryStore opens oci://REGISTRY/REPO[:TAG|@DIGEST]. Credentials come from the Docker
// configuration (Options.DockerConfig, DOCKER_CONFIG or ~/.docker/config.json) and its credential helpers, as docker
// and oras use them; token and basic auth are negotiated by oras-go. Registries on loopback
// (localhost, 127.0.0.0/8, ::1) are spoken to over plain HTTP, as docker and oras do by
// convention; every other registry over HTTPS.
func newRegistryStore(loc providers.Location, opts providers.Options) (*registryStore, error) {
	repo, err := remote.NewRepository(loc.Registry + "/" + loc.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", providers.ErrMisconfigured, err)
	}
	repo.PlainHTTP = loopbackHost(loc.Registry)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if opts.Log != nil {
		c := *hc
		c.Transport = providers.LoggingTransport(c.Transport, opts.Log)
		hc = &c
	}
	known := opts.Known
	if known == nil {
		known = &redact.Known{}
	}
	c := *hc
	c.Transport = sentAuth{next: c.Transport, known: known}
	hc = &c
	var creds credentials.Store
	if opts.DockerConfig != "" {
		creds, err = credentials.NewStore(filepath.Join(opts.DockerConfig, "config.json"), credentials.StoreOptions{})
	} else {
		creds, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the Docker credential configuration: %v", providers.ErrMisconfigured, err)
	}
	repo.Client = &auth.Client{
		Client:     hc,
		Header:     http.Header{"User-Agent": {"lifeboat"}},
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(creds),
	}
	ps := opts.PartSize
	if ps <= 0 {
		ps = providers.DefaultPartSize
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &registryStore{loc: loc, repo: repo, partSize: ps, retry: opts.Retry, log: log, known: known}, nil
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *registryStore) String() string { return s.loc.String() }

func (s *registryStore) Close() error { return nil }

// Capabilities: every blob carries its SHA-256 (the digest it is addressed by); listings carry
// nothing and come from the manifest, not from the blobs (ListFromIndex: a blob deleted behind
// the manifest's back is still listed, and only a HEAD shows it gone); compare-and-swap and
// prefix listing are lacking (lacks, which the scheme registers).
func (s *registryStore) Capabilities() providers.Capabilities {
	return providers.Capabilities{WriteChecksums: []providers.Algorithm{providers.SHA256}, Lacks: lacks, ListFromIndex: true}
}

func (s *registryStore) fail(op, key string, err error) error {
	kind, ok := providers.ClassifyCommon(err)
	if !ok {
		var er *errcode.ErrorResponse
		switch {
		case errors.Is(err, errdef.ErrNotFound):
			kind = providers.ErrNotFound
		case errors.Is(err, errdef.ErrSizeExceedsLimit):
			kind = providers.ErrContentMismatch
		case errors.As(err, &er):
			switch {
			case er.StatusCode == http.StatusNotFound:
				kind = providers.ErrNotFound
			case er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden:
				kind = providers.ErrPermission
			case er.StatusCode == http.StatusBadRequest && strings.Contains(strings.ToUpper(err.Error()), "DIGEST_INVALID"):
				kind = providers.ErrContentMismatch
			case er.StatusCode >= 500 || er.StatusCode == http.StatusTooManyRequests:
				kind = providers.ErrUnreachable
			}
		case strings.Contains(err.Error(), "credential"):
			kind = providers.ErrPermission
		}
	}
	return &providers.Error{Op: op, Store: s.String(), Key: key, Kind: kind, Err: err, Endpoint: s.loc.Registry, Known: s.known}
}

// sentAuth records the Authorization every request carries — Basic from the Docker
// configuration, or the Bearer token a token server handed out — before it leaves: a registry
// that echoes it in an error body must not have it printed (see redact.Known).
type sentAuth struct {
	next  http.RoundTripper
	known *redact.Known
}

func (t sentAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if h := req.Header.Get("Authorization"); h != "" {
		t.known.AddAuthorization(h)
	}
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(req)
}

// load reads the manifest at the location's reference once and indexes its layers by file path.
// A missing manifest (a replica not pushed yet) indexes nothing.
func (s *registryStore) load(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return nil
	}
	if s.keys == nil {
		s.keys = map[string]ocispec.Descriptor{}
	}
	m, _, err := s.fetchManifest(ctx)
	if errors.Is(err, providers.ErrNotFound) {
		s.loaded = true
		return nil
	}
	if err != nil {
		return err
	}
	for _, l := range m.Layers {
		p := l.Annotations[AnnotationFilepath]
		if t := l.Annotations[AnnotationTitle]; p == "" && t != "" {
			p = keyOfTitle(t)
		}
		if p == "" || providers.ValidatePath(p) != nil {
			continue
		}
		if _, ok := s.keys[p]; !ok {
			s.keys[p] = ocispec.Descriptor{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}
		}
	}
	s.loaded = true
	return nil
}

// fetchManifest reads and decodes the image manifest at the location's reference.
func (s *registryStore) fetchManifest(ctx context.Context) (ocispec.Manifest, []byte, error) {
	var m ocispec.Manifest
	ref := s.loc.Reference()
	desc, rc, err := s.repo.FetchReference(ctx, ref)
	if err != nil {
		return m, nil, s.fail("read manifest", ref, err)
	}
	defer rc.Close()
	if desc.Size > maxRegistryManifestBytes {
		return m, nil, s.fail("read manifest", ref, fmt.Errorf("%w: %d bytes (limit %d)", providers.ErrObjectTooLarge, desc.Size, maxRegistryManifestBytes))
	}
	data, err := io.ReadAll(io.LimitReader(rc, maxRegistryManifestBytes+1))
	if err != nil {
		return m, nil, s.fail("read manifest", ref, err)
	}
	if int64(len(data)) > maxRegistryManifestBytes {
		return m, nil, s.fail("read manifest", ref, fmt.Errorf("%w: limit %d bytes", providers.ErrObjectTooLarge, maxRegistryManifestBytes))
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, nil, s.fail("read manifest", ref, fmt.Errorf("not an OCI image manifest: %v", err))
	}
	return m, data, nil
}

func (s *registryStore) lookup(ctx context.Context, op, key string) (ocispec.Descriptor, error) {
	if err := providers.ValidateKey(key); err != nil {
		return ocispec.Descriptor{}, &providers.Error{Op: op, Store: s.String(), Key: key, Kind: providers.ErrInvalidKey, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return ocispec.Descriptor{}, &providers.Error{Op: op, Store: s.String(), Key: key, Err: err}
	}
	if err := s.load(ctx); err != nil {
		return ocispec.Descriptor{}, err
	}
	s.mu.Lock()
	d, ok := s.keys[key]
	s.mu.Unlock()
	if !ok {
		return d, &providers.Error{Op: op, Store: s.String(), Key: key, Kind: providers.ErrNotFound,
			Err: fmt.Errorf("no layer of the manifest at %s names this file", s.loc.Reference())}
	}
	return d, nil
}

func (s *registryStore) object(key string, d ocispec.Descriptor) providers.Object {
	return providers.Object{
		Key: key, Size: d.Size, Revision: d.Digest.String(), ETag: d.Digest.String(),
		Checksums: []providers.Checksum{{Algorithm: providers.SHA256, Value: d.Digest.Encoded()}},
	}
}

// Stat resolves key to its blob and HEADs it: the size the registry reports and the digest.
func (s *registryStore) Stat(ctx context.Context, key string) (providers.Object, error) {
	d, err := s.lookup(ctx, "stat", key)
	if err != nil {
		return providers.Object{}, err
	}
	got, err := s.repo.Blobs().Resolve(ctx, d.Digest.String())
	if err != nil {
		return providers.Object{}, s.fail("stat", key, err)
	}
	if got.Digest != "" && got.Digest != d.Digest {
		return providers.Object{}, s.fail("stat", key, fmt.Errorf("%w: the registry answered for %s with %s", providers.ErrContentMismatch, d.Digest, got.Digest))
	}
	d.Size = got.Size
	return s.object(key, d), nil
}

// List calls fn for the keys this store can resolve below dir (the manifest's files and what it
// wrote). A registry cannot list by prefix; this is the manifest's view, not a listing.
func (s *registryStore) List(ctx context.Context, dir string, fn func(providers.Object) error) error {
	d, err := providers.ValidateDir(dir)
	if err != nil {
		return &providers.Error{Op: "list", Store: s.String(), Key: dir, Kind: providers.ErrInvalidKey, Err: err}
	}
	if err := s.load(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	var objs []providers.Object
	for k, desc := range s.keys {
		if d == "" || strings.HasPrefix(k, d) {
			o := s.object(k, desc)
			// Committed (or found by a HEAD) by this store: the registry's own word, a moment
			// ago, and not only the manifest's (a push's check of what it wrote needs no HEADs).
			o.Confirmed = s.wroteLocked(desc)
			objs = append(objs, o)
		}
	}
	s.mu.Unlock()
	for _, o := range objs {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Read GETs the blob of key with a Range header for opts' bytes.
func (s *registryStore) Read(ctx context.Context, key string, opts providers.ReadOptions, fn func(io.Reader) error) error {
	d, err := s.lookup(ctx, "read", key)
	if err != nil {
		return err
	}
	if opts.Offset < 0 || opts.Length < 0 {
		return &providers.Error{Op: "read", Store: s.String(), Key: key, Err: fmt.Errorf("negative range %d+%d", opts.Offset, opts.Length)}
	}
	if opts.IfMatch != "" && opts.IfMatch != d.Digest.String() {
		return &providers.Error{Op: "read", Store: s.String(), Key: key, Kind: providers.ErrPreconditionFailed}
	}
	if opts.Offset >= d.Size && (d.Size > 0 || opts.Offset > 0) {
		return fn(bytes.NewReader(nil))
	}
	u := s.scheme() + "://" + s.loc.Registry + "/v2/" + s.loc.Repository + "/blobs/" + d.Digest.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return s.fail("read", key, err)
	}
	if opts.Offset > 0 || opts.Length > 0 {
		r := "bytes=" + strconv.FormatInt(opts.Offset, 10) + "-"
		if opts.Length > 0 {
			r += strconv.FormatInt(opts.Offset+opts.Length-1, 10)
		}
		req.Header.Set("Range", r)
	}
	resp, err := s.repo.Client.Do(req)
	if err != nil {
		return s.fail("read", key, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
	}()
	switch resp.StatusCode {
	case http.StatusOK:
		if opts.Offset > 0 || opts.Length > 0 {
			// The registry ignored Range: skip to the offset and cut at the length.
			if _, err := io.CopyN(io.Discard, resp.Body, opts.Offset); err != nil {
				return s.fail("read", key, err)
			}
		}
	case http.StatusPartialContent:
	case http.StatusRequestedRangeNotSatisfiable:
		return fn(bytes.NewReader(nil))
	default:
		return s.fail("read", key, &errcode.ErrorResponse{Method: req.Method, URL: req.URL, StatusCode: resp.StatusCode})
	}
	want := d.Size - opts.Offset
	if opts.Length > 0 && opts.Length < want {
		want = opts.Length
	}
	return fn(&fullBodyReader{r: io.LimitReader(resp.Body, want), left: want})
}

// fullBodyReader reports a body that ends before its declared length as io.ErrUnexpectedEOF.
type fullBodyReader struct {
	r    io.Reader
	left int64
}

func (e *fullBodyReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// Write uploads the content of r as the blob of key (see registryupload.go: monolithic up to
// one chunk, chunked and resumable beyond). opts.Checksums are checked on the way — the registry
// itself checks only the SHA-256 it is given at the end (distribution does; a registry that does
// not is why deep verify exists) — and a mismatch commits nothing. When the SHA-256 is declared
// and the repository already has that blob, nothing is uploaded and r is not read: the blob is
// the content, by its address.
func (s *registryStore) Write(ctx context.Context, key string, r io.Reader, opts providers.WriteOptions) (providers.Object, error) {
	if err := providers.ValidateKey(key); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.String(), Key: key, Kind: providers.ErrInvalidKey, Err: err}
	}
	if opts.IfNotExists || opts.IfMatch != "" {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.String(), Key: key, Kind: providers.ErrUnsupported,
			Err: errors.New("a registry has no conditional write (it lacks " + providers.CapCompareAndSwap + ")")}
	}
	if err := opts.Checksums.Validate(); err != nil {
		return providers.Object{}, &providers.Error{Op: "write", Store: s.String(), Key: key, Kind: providers.ErrMisconfigured, Err: err}
	}
	if err := s.load(ctx); err != nil {
		return providers.Object{}, err
	}
	mediaType := "application/octet-stream"
	if opts.ContentType != "" {
		mediaType = opts.ContentType
	}
	if hexd := strings.ToLower(opts.Checksums.SHA256); hexd != "" {
		dg := digest.NewDigestFromEncoded(digest.SHA256, hexd)
		have, err := s.repo.Blobs().Resolve(ctx, dg.String())
		switch {
		case err == nil && have.Digest == dg && (opts.Size <= 0 || have.Size == opts.Size):
			return s.record(key, ocispec.Descriptor{MediaType: mediaType, Digest: dg, Size: have.Size}), nil
		case err != nil && !errors.Is(err, errdef.ErrNotFound):
			return providers.Object{}, s.fail("write", key, err)
		}
	}
	d := providers.NewDigester(opts.Checksums, providers.SHA256)
	// The bytes can go in the closing PUT, committed by the registry's check of the SHA-256, only
	// when nothing else is declared: every other checksum must hold before anything is committed.
	put := ""
	if rest := opts.Checksums; rest.SHA256 != "" {
		rest.SHA256 = ""
		if rest == (providers.Checksums{}) {
			put = strings.ToLower(opts.Checksums.SHA256)
		}
	}
	dg, n, err := s.uploadBlob(ctx, r, opts.Size, d, put)
	if err != nil {
		return providers.Object{}, s.fail("write", key, err)
	}
	return s.record(key, ocispec.Descriptor{MediaType: mediaType, Digest: dg, Size: n}), nil
}

// wrote reports whether this store has written (or found already there) the blob d since it was
// opened, by a Write that committed or resolved it with its digest and size.
func (s *registryStore) wrote(d ocispec.Descriptor) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wroteLocked(d)
}

// wroteLocked is wrote with s.mu held.
func (s *registryStore) wroteLocked(d ocispec.Descriptor) bool {
	for _, k := range s.written {
		if k.Digest == d.Digest && k.Size == d.Size {
			return true
		}
	}
	return false
}

// record makes key resolve to desc in this store.
func (s *registryStore) record(key string, desc ocispec.Descriptor) providers.Object {
	s.mu.Lock()
	s.keys[key] = desc
	s.written = append(s.written, desc)
	s.mu.Unlock()
	return s.object(key, desc)
}

// Delete is a no-op for a key resolved through a manifest: the blob belongs to the manifest and
// may be shared by others; it goes when the registry's garbage collector finds it unreferenced.
// A conditional delete is ErrUnsupported.
func (s *registryStore) Delete(ctx context.Context, key string, opts providers.DeleteOptions) error {
	if opts.IfMatch != "" {
		return &providers.Error{Op: "delete", Store: s.String(), Key: key, Kind: providers.ErrUnsupported,
			Err: errors.New("a registry has no conditional delete")}
	}
	if err := providers.ValidateKey(key); err != nil {
		return &providers.Error{Op: "delete", Store: s.String(), Key: key, Kind: providers.ErrInvalidKey, Err: err}
	}
	s.mu.Lock()
	delete(s.keys, key)
	s.mu.Unlock()
	return nil
}

// PushManifest stores a DR manifest (an OCI image manifest, data exactly as given) in the
// registry store s at its reference: the config blob first (from the manifest's embedded config
// data), then every layer that carries its content inline (engine and small deployment files),
// then the manifest, tagged with the location's tag. Every other layer's blob must already be
// there (Write them first); the registry refuses a manifest whose blobs are missing. s may be
// wrapped (Unwrap). It returns the manifest's digest.
func PushManifest(ctx context.Context, s providers.Store, data []byte) (digest.Digest, error) {
	rs, ok := asRegistry(s)
	if !ok {
		return "", fmt.Errorf("%s: %w: only a registry (oci://) keeps a manifest as such", s, providers.ErrUnsupported)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("manifest: not an OCI image manifest: %w", err)
	}
	blobs := append([]ocispec.Descriptor{m.Config}, m.Layers...)
	for _, d := range blobs {
		if d.Data == nil {
			continue
		}
		if digest.FromBytes(d.Data) != d.Digest || int64(len(d.Data)) != d.Size {
			return "", fmt.Errorf("manifest: the inline data of %s does not match its digest or size", d.Digest)
		}
		plain := ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size}
		if rs.wrote(plain) {
			continue // committed (or found) by this store a moment ago: no HEAD needed
		}
		ok, err := rs.repo.Blobs().Exists(ctx, plain)
		if err != nil {
			return "", rs.fail("write", d.Digest.String(), err)
		}
		if !ok {
			if err := rs.repo.Blobs().Push(ctx, plain, bytes.NewReader(d.Data)); err != nil {
				return "", rs.fail("write", d.Digest.String(), err)
			}
		}
	}
	mt := m.MediaType
	if mt == "" {
		mt = ocispec.MediaTypeImageManifest
	}
	desc := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(data), Size: int64(len(data))}
	ref := rs.loc.Reference()
	if rs.loc.Digest != "" && rs.loc.Digest != desc.Digest.String() {
		return "", fmt.Errorf("%s: %w: the manifest's digest is %s, not the location's", rs, providers.ErrContentMismatch, desc.Digest)
	}
	if err := rs.repo.Manifests().PushReference(ctx, desc, bytes.NewReader(data), ref); err != nil {
		return "", rs.fail("write manifest", ref, err)
	}
	rs.mu.Lock()
	rs.loaded = false // re-read: the manifest now names the files
	rs.mu.Unlock()
	return desc.Digest, nil
}

// FetchManifest reads the manifest at a registry store's reference (bounded), for commands that
// take oci://… where a manifest file is expected.
func FetchManifest(ctx context.Context, s providers.Store) ([]byte, error) {
	rs, ok := asRegistry(s)
	if !ok {
		return nil, fmt.Errorf("%s: %w: not a registry", s, providers.ErrUnsupported)
	}
	_, data, err := rs.fetchManifest(ctx)
	return data, err
}

func asRegistry(s providers.Store) (*registryStore, bool) {
	for {
		if rs, ok := s.(*registryStore); ok {
			return rs, true
		}
		u, ok := s.(interface{ Unwrap() providers.Store })
		if !ok {
			return nil, false
		}
		s = u.Unwrap()
	}
}

// MountFrom is providers.Mount for a registry store dst (see there).
func (rd *registryStore) MountFrom(ctx context.Context, src providers.Store, key string, opts providers.WriteOptions) (bool, error) {
	rs, ok := asRegistry(src)
	if !ok || rs.loc.Registry != rd.loc.Registry || rs.loc.Repository == rd.loc.Repository {
		return false, nil
	}
	d, err := rs.lookup(ctx, "read", key)
	if err != nil {
		return false, err
	}
	if opts.Checksums.SHA256 == "" || d.Digest.Encoded() != strings.ToLower(opts.Checksums.SHA256) || (opts.Size >= 0 && d.Size != opts.Size) {
		return false, nil
	}
	if err := rd.load(ctx); err != nil {
		return false, err
	}
	have, err := rd.repo.Blobs().Exists(ctx, d)
	if err != nil {
		return false, rd.fail("write", key, err)
	}
	if !have {
		if err := rd.repo.Mount(ctx, d, rs.loc.Repository, nil); err != nil {
			return false, rd.fail("write", key, err)
		}
	}
	rd.mu.Lock()
	rd.keys[key] = d
	rd.mu.Unlock()
	return true, nil
}
