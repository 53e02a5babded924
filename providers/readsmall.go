package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrObjectTooLarge: an object is larger than what its reader takes whole (a journal record, the
// lock, a history entry). It is never cut to the limit and parsed: that would silently read
// something else.
var ErrObjectTooLarge = errors.New("object too large")

// ReadSmall reads a whole small object — a control record the caller parses in memory — of at
// most limit bytes. An object over the limit is an error wrapping ErrObjectTooLarge that names
// the store, the key and the limit, found from the listing's or Stat's size when the store
// reports one and otherwise after reading limit+1 bytes, so memory stays bounded by limit
// whatever the object holds. opts select the bytes as for Read (IfMatch pins the revision).
func ReadSmall(ctx context.Context, s Store, key string, opts ReadOptions, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	err := s.Read(ctx, key, opts, func(r io.Reader) error {
		buf.Reset() // fn may be called again from the start (retrying wrappers)
		n, err := io.Copy(&buf, io.LimitReader(r, limit+1))
		if err != nil {
			return err
		}
		if n > limit {
			return fmt.Errorf("%w: %s in %s is larger than %d bytes", ErrObjectTooLarge, key, s, limit)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadJSON reads a small object with ReadSmall and decodes it into v. A decoding error names the
// key: "failover/lock.json in file:///state: not JSON: …".
func ReadJSON(ctx context.Context, s Store, key string, opts ReadOptions, limit int64, v any) error {
	data, err := ReadSmall(ctx, s, key, opts, limit)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s in %s: %w: %v", key, s, ErrNotJSON, err)
	}
	return nil
}

// ErrNotJSON: a small object read with ReadJSON did not decode.
var ErrNotJSON = errors.New("not valid JSON")

// ReadBody hands body to fn, then drains it so the connection can be reused. Errors of the body
// itself (a broken connection, a truncated or checksum-failing response) go through wrap;
// fn's own errors are returned as they are.
func ReadBody(body io.Reader, fn func(io.Reader) error, wrap func(error) error) error {
	br := &bodyReader{r: body}
	err := fn(br)
	if err == nil {
		// Drain a little so a keep-alive connection is reusable; large leftovers are just closed.
		_, _ = io.CopyN(io.Discard, body, 64<<10)
		return nil
	}
	if br.err != nil && errors.Is(err, br.err) {
		return wrap(err)
	}
	return err
}

type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}
