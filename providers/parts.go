package providers

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"golang.org/x/sync/errgroup"
)

// Multipart is what a provider implements to take part of StreamUpload.
type Multipart interface {
	// single stores content that fits in one part with one request; d has seen all of it.
	Single(ctx context.Context, data []byte, d *Digester) (Object, error)
	// begin starts a multipart upload.
	Begin(ctx context.Context) error
	// part uploads part n (from 1); called concurrently.
	Part(ctx context.Context, n int, data []byte) error
	// commit makes the parts 1..n the object; d has seen all the content.
	Commit(ctx context.Context, n int, d *Digester) (Object, error)
	// abort discards the parts (best effort; ctx is already detached from the caller's).
	Abort(ctx context.Context)
}

// UploadPlan are the limits of one StreamUpload.
type UploadPlan struct {
	PartSize    int64
	Concurrency int
	MaxParts    int
	Size        int64 // declared size, <= 0 unknown
}

// effectivePartSize raises the part size when a declared size would need more than maxParts parts.
func (p UploadPlan) effectivePartSize() int64 {
	ps := p.PartSize
	if p.Size > 0 && p.MaxParts > 0 && (p.Size+ps-1)/ps > int64(p.MaxParts) {
		const mib = 1 << 20
		ps = (p.Size + int64(p.MaxParts) - 1) / int64(p.MaxParts)
		ps = (ps + mib - 1) / mib * mib
	}
	return ps
}

// StreamUpload reads r once, in parts, hashing every byte in order with d, and hands the parts to m
// with bounded concurrency. Memory is at most (concurrency+1) part buffers. Content that fits in one
// part goes up with one request. Nothing is committed unless all parts are up and d.check passes.
func StreamUpload(ctx context.Context, r io.Reader, plan UploadPlan, d *Digester, m Multipart) (Object, error) {
	partSize := plan.effectivePartSize()
	br := bufio.NewReaderSize(SourceReader{Ctx: ctx, R: r}, 16)

	// The first part grows as it is read, so small objects (lock files, configs) cost little.
	var fb bytes.Buffer
	if plan.Size > 0 && plan.Size < partSize {
		fb.Grow(int(plan.Size) + 1)
	}
	_, err := io.CopyN(&fb, br, partSize)
	if err != nil && err != io.EOF {
		return Object{}, err
	}
	first := fb.Bytes()
	n := len(first)
	if err == nil {
		if _, perr := br.Peek(1); perr == io.EOF {
			err = io.EOF // exactly one part
		} else if perr != nil {
			return Object{}, perr
		}
	}
	if err != nil { // the whole content is in first[:n]
		d.Write(first[:n])
		if cerr := d.Check(plan.Size); cerr != nil {
			return Object{}, cerr
		}
		return m.Single(ctx, first[:n], d)
	}

	if err := m.Begin(ctx); err != nil {
		return Object{}, err
	}
	obj, err := uploadParts(ctx, br, first, partSize, plan, d, m)
	if err != nil {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		m.Abort(actx)
		cancel()
		return Object{}, err
	}
	return obj, nil
}

func uploadParts(ctx context.Context, r io.Reader, first []byte, partSize int64, plan UploadPlan, d *Digester, m Multipart) (Object, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(plan.Concurrency)
	maxBufs := plan.Concurrency + 1
	free := make(chan []byte, maxBufs)
	allocated := 1
	getBuf := func() []byte {
		select {
		case b := <-free:
			return b
		default:
		}
		if allocated < maxBufs {
			allocated++
			return make([]byte, partSize)
		}
		select { // cannot block for long: g.Go only returns once a slot (and so a buffer) is free
		case b := <-free:
			return b
		case <-gctx.Done():
			return nil
		}
	}
	submit := func(n int, data []byte, buf []byte) {
		g.Go(func() error {
			defer func() { free <- buf }()
			return m.Part(gctx, n, data)
		})
	}

	d.Write(first)
	submit(1, first, first)
	parts := 1
	var readErr error
	for {
		if gctx.Err() != nil {
			break
		}
		buf := getBuf()
		if buf == nil {
			break
		}
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if plan.MaxParts > 0 && parts >= plan.MaxParts {
				free <- buf
				readErr = fmt.Errorf("content needs more than %d parts of %d bytes: declare its size or raise the part size", plan.MaxParts, partSize)
				break
			}
			parts++
			d.Write(buf[:n])
			submit(parts, buf[:n], buf)
		} else {
			free <- buf
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	werr := g.Wait()
	switch {
	case readErr != nil:
		return Object{}, readErr
	case werr != nil:
		return Object{}, werr
	case ctx.Err() != nil:
		return Object{}, ctx.Err()
	}
	if err := d.Check(plan.Size); err != nil {
		return Object{}, err
	}
	obj, err := m.Commit(ctx, parts, d)
	if err != nil {
		return Object{}, err
	}
	return obj, nil
}

// FinishUpload ends a streamed Write: an error the upload already classified passes through,
// any other becomes the store's write error (fail).
func FinishUpload(obj Object, err error, fail func(error) error) (Object, error) {
	if err == nil {
		return obj, nil
	}
	if _, ok := err.(*Error); ok {
		return Object{}, err
	}
	return Object{}, fail(err)
}
