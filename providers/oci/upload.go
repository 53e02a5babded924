package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// A blob upload, as the OCI distribution spec has it, written here on net/http with oras-go's
// auth client (oras-go v2.7.0 uploads monolithically only):
//
//   - content that fits in one chunk (Options.PartSize, 8 MiB by default) goes up monolithically:
//     POST a session, PUT ?digest= with the bytes — two requests, the digest known by then;
//   - larger content goes up in chunks: POST, then PATCH each chunk with Content-Range, then PUT
//     ?digest= with no body once every byte is there and the checksums the caller declared
//     hold. The SHA-256 need not be known in advance: it is computed on the way.
//
// A chunk whose PATCH fails (the connection cut, a 5xx or 429) is resumed, not restarted: GET
// on the upload URL asks the registry how much it holds (204, Range: 0-N), and only the bytes
// past N are sent again, from the one chunk held in memory. Nothing already there is resent.
// A registry that has lost the session, or will not say (distribution answers 416 when an
// interrupted PATCH left part of its bytes behind), ends the write with ErrUnreachable; the
// caller's next attempt starts a new upload.
//
// The session is cancelled (DELETE) whenever the write does not commit: cancelled context,
// content that does not match what the caller declared, or any failure.

// maxUploadAttempts bounds the PATCH attempts of one chunk when Options.Retry.MaxAttempts is 0.
const maxUploadAttempts = 4

// maxErrorBody bounds the error body read from a registry.
const maxErrorBody = 64 << 10

// uploadSession is one blob upload in progress.
type uploadSession struct {
	s        *registryStore
	ctx      context.Context
	location *url.URL // the URL the registry gave last: its _state token moves with every chunk
	offset   int64    // bytes the registry holds
}

// scheme is the URL scheme the registry is spoken to with.
func (s *registryStore) scheme() string {
	if s.repo.PlainHTTP {
		return "http"
	}
	return "https"
}

// do sends req through the auth client, with the repository's pull and push scopes (token auth).
func (s *registryStore) do(req *http.Request) (*http.Response, error) {
	ctx := auth.AppendRepositoryScope(req.Context(), registry.Reference{Registry: s.loc.Registry, Repository: s.loc.Repository},
		auth.ActionPull, auth.ActionPush)
	return s.repo.Client.Do(req.WithContext(ctx))
}

// responseError turns an unexpected response into an *errcode.ErrorResponse (bounded read of
// its body) that fail classifies, and closes the body.
func responseError(req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	u := *req.URL
	u.RawQuery = "" // an upload URL's _state token is noise in a message
	er := &errcode.ErrorResponse{Method: req.Method, URL: &u, StatusCode: resp.StatusCode}
	var body struct {
		Errors errcode.Errors `json:"errors"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if json.Unmarshal(data, &body) == nil {
		for i := range body.Errors {
			body.Errors[i].Message = providers.Sanitize(body.Errors[i].Message, 200)
			body.Errors[i].Code = providers.Sanitize(body.Errors[i].Code, 60)
			body.Errors[i].Detail = nil
		}
		er.Errors = body.Errors
	}
	return er
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
}

// startUpload opens an upload session: POST …/blobs/uploads/.
func (s *registryStore) startUpload(ctx context.Context) (*uploadSession, error) {
	u := &url.URL{Scheme: s.scheme(), Host: s.loc.Registry, Path: "/v2/" + s.loc.Repository + "/blobs/uploads/"}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusAccepted {
		return nil, responseError(req, resp)
	}
	drain(resp)
	loc, err := s.uploadLocation(req, resp)
	if err != nil {
		return nil, err
	}
	return &uploadSession{s: s, ctx: ctx, location: loc}, nil
}

// uploadLocation is the upload URL a response names, resolved against the request. A registry
// may hand uploads to another host (a storage front end), but never from HTTPS down to HTTP.
func (s *registryStore) uploadLocation(req *http.Request, resp *http.Response) (*url.URL, error) {
	l := resp.Header.Get("Location")
	if l == "" {
		return nil, fmt.Errorf("%s %s: %d with no Location for the upload", req.Method, req.URL.Path, resp.StatusCode)
	}
	u, err := req.URL.Parse(l)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the upload Location is not a URL: %v", req.Method, req.URL.Path, err)
	}
	if u.Scheme != req.URL.Scheme && !(u.Scheme == "https" && req.URL.Scheme == "http") {
		return nil, fmt.Errorf("%s %s: the upload Location leaves %s for %s", req.Method, req.URL.Path, req.URL.Scheme, providers.Sanitize(u.Scheme, 20))
	}
	return u, nil
}

// patch sends data as the bytes from offset on. It reports the registry's answer; a failure
// before any answer is returned as is (the caller asks the registry where it stands).
func (u *uploadSession) patch(data []byte) error {
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPatch, u.location.String(), bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Range", strconv.FormatInt(u.offset, 10)+"-"+strconv.FormatInt(u.offset+int64(len(data))-1, 10))
	resp, err := u.s.do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return responseError(req, resp)
	}
	drain(resp)
	loc, err := u.s.uploadLocation(req, resp)
	if err != nil {
		return err
	}
	u.location = loc
	end, ok := rangeEnd(resp.Header.Get("Range"))
	if ok && end != u.offset+int64(len(data)) {
		return fmt.Errorf("%w: the registry holds %d bytes of the upload after a chunk that ends at %d", providers.ErrUnreachable, end, u.offset+int64(len(data)))
	}
	u.offset += int64(len(data))
	return nil
}

// status asks the registry how many bytes of the upload it holds: GET on the upload URL,
// 204 with Range: 0-N (N+1 bytes; "0-0" is read as none — a registry gives it for an empty
// upload).
func (u *uploadSession) status() (int64, error) {
	req, err := http.NewRequestWithContext(u.ctx, http.MethodGet, u.location.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := u.s.do(req)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return 0, responseError(req, resp)
	}
	drain(resp)
	if loc, err := u.s.uploadLocation(req, resp); err == nil {
		u.location = loc
	}
	end, ok := rangeEnd(resp.Header.Get("Range"))
	if !ok {
		return 0, fmt.Errorf("GET %s: no Range in the upload status", req.URL.Path)
	}
	return end, nil
}

// rangeEnd reads an upload Range header, "0-N" (or "bytes=0-N"), as the number of bytes held.
func rangeEnd(h string) (int64, bool) {
	h = strings.TrimPrefix(strings.TrimSpace(h), "bytes=")
	from, to, ok := strings.Cut(h, "-")
	if !ok || from != "0" {
		return 0, false
	}
	n, err := strconv.ParseInt(to, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	return n + 1, true
}

// retryable: a PATCH that got no answer, or a 5xx or 429, may be resumed.
func retryableUpload(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		return er.StatusCode >= 500 || er.StatusCode == http.StatusTooManyRequests
	}
	return true
}

// sendChunk sends data (the content from start on) so that the registry holds all of it,
// resuming from the registry's offset after a failure.
func (u *uploadSession) sendChunk(data []byte, start int64, attempts int, backoff providers.RetryOptions) error {
	end := start + int64(len(data))
	var last error
	for attempt := 1; ; attempt++ {
		if u.offset < start || u.offset > end {
			return fmt.Errorf("%w: the registry holds %d bytes of the upload; this chunk is bytes %d to %d", providers.ErrUnreachable, u.offset, start, end)
		}
		if u.offset == end {
			return nil
		}
		last = u.patch(data[u.offset-start:])
		if last == nil {
			continue
		}
		if !retryableUpload(last) || attempt >= attempts {
			return last
		}
		if err := wait.Sleep(u.ctx, backoffDelay(backoff, attempt)); err != nil {
			return err
		}
		held, err := u.status()
		if err != nil {
			return fmt.Errorf("%w: a chunk failed (%v) and the registry would not say how much of the upload it holds: %v", providers.ErrUnreachable, last, err)
		}
		u.s.debugf("upload resumed at byte %d of the chunk %d-%d after: %v", held, start, end, last)
		u.offset = held
	}
}

// commit ends the upload: PUT ?digest= with body (nil for a chunked upload).
func (u *uploadSession) commit(dg digest.Digest, body []byte) error {
	c := *u.location
	q := c.Query()
	q.Set("digest", dg.String())
	c.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(u.ctx, http.MethodPut, c.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := u.s.do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return responseError(req, resp)
	}
	drain(resp)
	return nil
}

// cancel discards the session (best effort, detached from a context that may have ended).
func (u *uploadSession) cancel() {
	ctx, stop := context.WithTimeout(context.WithoutCancel(u.ctx), 10*time.Second)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.location.String(), nil)
	if err != nil {
		return
	}
	if resp, err := u.s.do(req); err == nil {
		drain(resp)
	}
}

// uploadBlob streams r into a new blob of the repository, hashing it with d, and commits it only
// when d.check(size) passes. It returns the blob's digest and size.
//
// Content that fits in one chunk is read, hashed and sent in one PUT. Larger content goes up
// chunk by chunk with the next chunk read and hashed while the one before is being sent (the
// registry writing and hashing it on its side): two chunk buffers, allocated once and reused,
// are the upload's memory, and reading, hashing and sending overlap instead of taking turns.
// The chunk being sent stays in memory until the registry holds all of it, so that a PATCH
// that fails is resumed from it (see sendChunk).
func (s *registryStore) uploadBlob(ctx context.Context, r io.Reader, size int64, d *providers.Digester) (digest.Digest, int64, error) {
	chunk := s.partSize
	src := providers.SourceReader{Ctx: ctx, R: r}
	// chunk+1 bytes (size+1 when less is declared) tell content that fits in one request from
	// content that does not (or that is longer than declared: d.check says so).
	var first []byte
	if size > 0 {
		first = make([]byte, min(size, chunk)+1)
		n, err := io.ReadFull(src, first)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return "", 0, err
		}
		first = first[:n]
	} else {
		var err error
		if first, err = io.ReadAll(io.LimitReader(src, chunk+1)); err != nil {
			return "", 0, err
		}
	}
	n := len(first)
	if int64(n) <= chunk {
		// All of it is in hand: check, then one POST and one PUT with the bytes.
		data := first[:n]
		d.Write(data)
		if err := d.Check(size); err != nil {
			return "", 0, err
		}
		dg := digest.NewDigestFromEncoded(digest.SHA256, d.Sum(providers.SHA256))
		u, err := s.startUpload(ctx)
		if err != nil {
			return "", 0, err
		}
		if err := u.commit(dg, data); err != nil {
			u.cancel()
			return "", 0, err
		}
		return dg, int64(n), nil
	}
	u, err := s.startUpload(ctx)
	if err != nil {
		return "", 0, err
	}
	ok := false
	defer func() {
		if !ok {
			u.cancel()
		}
	}()
	attempts := s.retry.MaxAttempts
	if attempts <= 0 {
		attempts = maxUploadAttempts
	}
	// first holds chunk+1 bytes: the first chunk, and the first byte of the second, which the
	// reader carries over. Until the reader is done, it alone touches d and src.
	d.Write(first[:chunk])
	rd := newChunkReader(src, d, first[chunk:], make([]byte, chunk))
	defer rd.stop()
	start := int64(0)
	part, buf := first[:chunk], first[:chunk]
	for {
		if err := u.sendChunk(part, start, attempts, s.retry); err != nil {
			return "", 0, err
		}
		start += int64(len(part))
		rd.free <- buf
		var more bool
		if part, buf, more, err = rd.next(); err != nil {
			return "", 0, err
		}
		if !more {
			break
		}
	}
	if err := d.Check(size); err != nil {
		return "", 0, err
	}
	dg := digest.NewDigestFromEncoded(digest.SHA256, d.Sum(providers.SHA256))
	if err := u.commit(dg, nil); err != nil {
		return "", 0, err
	}
	ok = true
	return dg, start, nil
}

// chunkReader reads and hashes the chunks of an upload ahead of the one being sent, in one
// goroutine that the upload waits for (stop) before it returns: src and the digester are never
// used by two goroutines at once, nor after the write is over.
type chunkReader struct {
	free  chan []byte // buffers the upload is done with (each chunk long)
	parts chan chunkPart
	quit  chan struct{}
	done  chan struct{}
}

type chunkPart struct {
	data, buf []byte
	err       error
}

func newChunkReader(src io.Reader, d *providers.Digester, carry, buf []byte) *chunkReader {
	c := &chunkReader{free: make(chan []byte, 2), parts: make(chan chunkPart), quit: make(chan struct{}), done: make(chan struct{})}
	c.free <- buf
	go func() {
		defer close(c.done)
		defer close(c.parts)
		for {
			var b []byte
			select {
			case b = <-c.free:
			case <-c.quit:
				return
			}
			k := copy(b, carry)
			carry = nil
			m, err := io.ReadFull(src, b[k:])
			p := chunkPart{data: b[:k+m], buf: b}
			last := err == io.EOF || err == io.ErrUnexpectedEOF
			if err != nil && !last {
				p.err = err
			}
			d.Write(p.data)
			if len(p.data) > 0 || p.err != nil {
				select {
				case c.parts <- p:
				case <-c.quit:
					return
				}
			}
			if last || p.err != nil {
				return
			}
		}
	}()
	return c
}

// next is the next chunk read (more false once the content has ended).
func (c *chunkReader) next() (data, buf []byte, more bool, err error) {
	p, ok := <-c.parts
	if !ok {
		return nil, nil, false, nil
	}
	return p.data, p.buf, p.err == nil, p.err
}

// stop ends the reader and waits until it has returned (a read in progress finishes first).
func (c *chunkReader) stop() {
	select {
	case <-c.quit:
	default:
		close(c.quit)
	}
	<-c.done
}

// backoffDelay is the wait before attempt+1: InitialBackoff (200 ms) doubling up to MaxBackoff (5 s).
func backoffDelay(o providers.RetryOptions, attempt int) time.Duration {
	d, top := o.InitialBackoff, o.MaxBackoff
	if d <= 0 {
		d = 200 * time.Millisecond
	}
	if top <= 0 {
		top = 5 * time.Second
	}
	for i := 1; i < attempt && d < top; i++ {
		d *= 2
	}
	return min(d, top)
}

func (s *registryStore) debugf(format string, args ...any) {
	s.log.Info(providers.Sanitize(fmt.Sprintf(format, args...), 500), "store", s.String())
}
