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
	"sync"
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

// uploadWindow is how much of a streamed upload's most recent content stays in memory (at least
// two chunks): a PATCH cut off is resumed from the registry's offset when it falls inside it.
const uploadWindow = 16 << 20

// errBodyDone ends a PATCH body that the upload has given up on (the transport may still read a
// failed request's body after the response, in a goroutine of its own).
var errBodyDone = errors.New("the upload moved on from this request")

// blobStream is the content of a streamed upload as PATCH bodies read it: the chunks the
// chunkReader reads and hashes ahead, the last few of them kept (the window) so that a PATCH
// that fails can be resumed from any offset inside it. One body reads it at a time.
type blobStream struct {
	mu       sync.Mutex
	rd       *chunkReader
	chunk    int
	size     int64    // the declared size (0: unknown)
	win      [][]byte // the window's chunks, oldest first, every byte of them sent at least once
	bufs     [][]byte // their buffers
	winStart int64    // the offset of win[0]
	winEnd   int64
	pos      int64 // the next byte to send
	maxWin   int
	spare    int // chunk buffers still to allocate
	ended    bool
	err      error // the source failed, or the content is shorter than declared
}

// read fills p from pos on: from the window, else from the next chunk read.
func (b *blobStream) read(p []byte) (int, error) {
	for {
		if b.size > 0 && b.pos >= b.size {
			return 0, io.EOF // the declared length is sent; content past it is found by d.Check
		}
		if b.pos < b.winEnd {
			off := b.pos - b.winStart
			for _, c := range b.win {
				if off < int64(len(c)) {
					q := c[off:]
					if b.size > 0 && int64(len(q)) > b.size-b.pos {
						q = q[:b.size-b.pos]
					}
					n := copy(p, q)
					b.pos += int64(n)
					return n, nil
				}
				off -= int64(len(c))
			}
		}
		if b.err != nil {
			return 0, b.err
		}
		if b.ended {
			if b.size > 0 && b.pos < b.size {
				b.err = fmt.Errorf("%w: read %d bytes, expected %d", providers.ErrContentMismatch, b.pos, b.size)
				return 0, b.err
			}
			return 0, io.EOF
		}
		data, buf, more, err := b.rd.next()
		if err != nil {
			b.err = err
			return 0, err
		}
		if !more {
			b.ended = true
			continue
		}
		b.win, b.bufs = append(b.win, data), append(b.bufs, buf)
		b.winEnd += int64(len(data))
		// A buffer for the reader to read ahead into: a new one while the window grows, then
		// the oldest chunk's (every window chunk is sent: pos had reached winEnd).
		if b.spare > 0 {
			b.spare--
			b.rd.free <- make([]byte, b.chunk)
		} else {
			b.rd.free <- b.bufs[0]
			b.winStart += int64(len(b.win[0]))
			b.win, b.bufs = b.win[1:], b.bufs[1:]
		}
	}
}

// rewind moves pos back to held, the bytes the registry says it holds, if the window has them.
func (b *blobStream) rewind(held int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if held < b.winStart || held > b.pos {
		return fmt.Errorf("%w: the registry holds %d bytes of the upload; %d were sent and bytes %d to %d are still in memory",
			providers.ErrUnreachable, held, b.pos, b.winStart, b.winEnd)
	}
	b.pos = held
	return nil
}

// streamBody is one PATCH's body: it reads the stream until the upload is done with it.
type streamBody struct {
	b    *blobStream
	dead bool // guarded by b.mu
}

func (sb *streamBody) Read(p []byte) (int, error) {
	sb.b.mu.Lock()
	defer sb.b.mu.Unlock()
	if sb.dead {
		return 0, errBodyDone
	}
	return sb.b.read(p)
}

func (sb *streamBody) Close() error { return nil }

// kill ends the body (a read in progress finishes first) and reports the stream's position and
// its error, if the source failed.
func (sb *streamBody) kill() (int64, error) {
	sb.b.mu.Lock()
	defer sb.b.mu.Unlock()
	sb.dead = true
	return sb.b.pos, sb.b.err
}

// patchStream sends the stream from u.offset on in one PATCH (in the closing PUT ?digest=put
// when put is set): with Content-Range and
// Content-Length when the size is declared (the spec's chunked upload, one chunk), streamed
// (chunked transfer encoding, no Content-Range) when it is not.
func (u *uploadSession) patchStream(b *blobStream, put digest.Digest) error {
	body := &streamBody{b: b}
	method, target, want := http.MethodPatch, *u.location, http.StatusAccepted
	if put != "" {
		method, want = http.MethodPut, http.StatusCreated
		q := target.Query()
		q.Set("digest", put.String())
		target.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(u.ctx, method, target.String(), body)
	if err != nil {
		return err
	}
	// A request sent again (the auth client after a 401, a redirect) starts from the same
	// offset, from the window, with a new body; the one before reads no more.
	start := u.offset
	req.GetBody = func() (io.ReadCloser, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		body.dead = true
		if start < b.winStart || start > b.pos {
			return nil, fmt.Errorf("%w: the PATCH from byte %d was asked again and bytes %d to %d are still in memory", providers.ErrUnreachable, start, b.winStart, b.winEnd)
		}
		b.pos = start
		body = &streamBody{b: b}
		return body, nil
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if b.size > 0 {
		req.ContentLength = b.size - u.offset
		req.Header.Set("Content-Range", strconv.FormatInt(u.offset, 10)+"-"+strconv.FormatInt(b.size-1, 10))
	} else {
		req.ContentLength = -1
	}
	resp, err := u.s.do(req)
	pos, serr := body.kill()
	if serr != nil {
		if resp != nil {
			drain(resp)
		}
		return serr
	}
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return responseError(req, resp)
	}
	drain(resp)
	if put != "" {
		u.offset = pos
		return nil
	}
	loc, err := u.s.uploadLocation(req, resp)
	if err != nil {
		return err
	}
	u.location = loc
	end, ok := rangeEnd(resp.Header.Get("Range"))
	if ok && end != pos {
		return fmt.Errorf("%w: the registry holds %d bytes of the upload after %d were sent", providers.ErrUnreachable, end, pos)
	}
	u.offset = pos
	return nil
}

// sendStream sends the whole stream in one PATCH (or, with put, in the closing PUT ?digest=),
// resuming from the registry's offset after a failure (a new request from there, the bytes
// still in the window).
func (u *uploadSession) sendStream(b *blobStream, attempts int, backoff providers.RetryOptions, put digest.Digest) error {
	for attempt := 1; ; attempt++ {
		last := u.patchStream(b, put)
		if last == nil {
			return nil
		}
		b.mu.Lock()
		serr := b.err
		b.mu.Unlock()
		if serr != nil || !retryableUpload(last) || attempt >= attempts {
			return last
		}
		if err := wait.Sleep(u.ctx, backoffDelay(backoff, attempt)); err != nil {
			return err
		}
		held, err := u.status()
		if err != nil {
			return fmt.Errorf("%w: a PATCH failed (%v) and the registry would not say how much of the upload it holds: %v", providers.ErrUnreachable, last, err)
		}
		if err := b.rewind(held); err != nil {
			return err
		}
		u.s.debugf("upload resumed at byte %d after: %v", held, last)
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
// Content that fits in one chunk is read, hashed and sent in one PUT. Larger content is streamed
// in one PATCH, read and hashed a chunk ahead of what is being sent (in one goroutine), so that
// reading, hashing and sending overlap and the registry is asked to answer once, not once per
// chunk. The last uploadWindow bytes sent (at least two chunks) stay in memory with the chunk
// read ahead, so that a PATCH that fails is resumed from the registry's offset (see sendStream).
func (s *registryStore) uploadBlob(ctx context.Context, r io.Reader, size int64, d *providers.Digester, sha256hex string) (digest.Digest, int64, error) {
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
	maxWin := max(2, int(uploadWindow/chunk))
	d.Write(first[:chunk])
	rd := newChunkReader(src, d, first[chunk:], make([]byte, chunk), maxWin+1)
	defer rd.stop()
	b := &blobStream{rd: rd, chunk: int(chunk), size: max(size, 0), win: [][]byte{first[:chunk]}, bufs: [][]byte{first[:chunk]},
		winEnd: chunk, maxWin: maxWin, spare: maxWin - 1}
	// With the SHA-256 declared, the stream goes in the closing PUT itself (the registry commits
	// it only if the bytes have that digest): one round trip fewer than PATCH then PUT.
	var put digest.Digest
	if sha256hex != "" {
		put = digest.NewDigestFromEncoded(digest.SHA256, sha256hex)
	}
	serr := u.sendStream(b, attempts, s.retry, put)
	if serr != nil && put == "" {
		return "", 0, serr
	}
	// Content past the declared size was not sent: read it to the end so that d.Check says how
	// long it was (and, when the closing PUT failed, whether the source is what was declared: a
	// corrupt source is reported as such, not as the registry's refusal).
	for {
		_, buf, more, err := rd.next()
		if err != nil {
			if serr != nil {
				return "", 0, serr
			}
			return "", 0, err
		}
		if !more {
			break
		}
		rd.free <- buf
	}
	cerr := d.Check(size)
	if put != "" {
		if serr != nil {
			if cerr != nil {
				return "", 0, cerr
			}
			return "", 0, serr
		}
		ok = true // committed: the registry holds bytes with the declared SHA-256
		if cerr != nil {
			return "", 0, cerr
		}
		return put, u.offset, nil
	}
	if cerr != nil {
		return "", 0, cerr
	}
	dg := digest.NewDigestFromEncoded(digest.SHA256, d.Sum(providers.SHA256))
	if err := u.commit(dg, nil); err != nil {
		return "", 0, err
	}
	ok = true
	return dg, u.offset, nil
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

// newChunkReader starts the reader with buf to read into; up to nbuf buffers in all come back
// through free.
func newChunkReader(src io.Reader, d *providers.Digester, carry, buf []byte, nbuf int) *chunkReader {
	c := &chunkReader{free: make(chan []byte, nbuf), parts: make(chan chunkPart), quit: make(chan struct{}), done: make(chan struct{})}
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
