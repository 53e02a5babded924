//go:build integration

package providers_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"lifeboat/internal/faultproxy"
	"lifeboat/internal/testbed"
	"lifeboat/providers"
)

// syncBuffer is a log sink safe for the stores' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WithRetry (applied by Open) carries a read whose body breaks mid-stream on every provider,
// calling fn again from the start where the SDK does not resume by itself (S3), and says so as it
// happens; a body that keeps breaking ends ErrUnreachable after the configured attempts; a
// consumer's own error is never retried.
func TestReadBodyBreaksAreRetriedOnce(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	for _, b := range testbed.Backends(t)[1:] {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			prefix := testbed.FreshPrefix("retry-read")
			testbed.Put(t, b.Open(t, prefix, nil), "model/w.bin", data, providers.Checksums{})
			in := faultproxy.New()
			s := b.Open(t, prefix, in.Client())
			var log syncBuffer
			s = providers.WithRetry(unwrapAll(s), testbed.StoreOptions().Retry, slog.New(slog.NewTextHandler(&log, nil)))

			read := func() (int, error) {
				calls := 0
				var got []byte
				err := s.Read(t.Context(), "model/w.bin", providers.ReadOptions{}, func(r io.Reader) error {
					calls++
					var err error
					got, err = io.ReadAll(r)
					return err
				})
				if err == nil && !bytes.Equal(got, data) {
					t.Fatalf("read %d bytes, not the object's", len(got))
				}
				return calls, err
			}

			rule := in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Times: 1, Action: faultproxy.Reset(100 << 10)})
			calls, err := read()
			if err != nil || rule.Fired() != 1 {
				t.Fatalf("one reset mid-body: %v (fired %d)", err, rule.Fired())
			}
			if b.Name == "s3" && (calls != 2 || !strings.Contains(log.String(), "retry 2/3 in ")) {
				t.Errorf("S3 does not resume a broken body: want fn called twice and a retry logged, got %d calls, log:\n%s", calls, log.String())
			}
			if b.S3 != nil && strings.Contains(log.String(), b.S3.SecretKey) {
				t.Error("a credential reached the retry log")
			}

			if b.Name == "s3" {
				in.Clear()
				rule = in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Action: faultproxy.Reset(100 << 10)})
				if calls, err := read(); !errors.Is(err, providers.ErrUnreachable) || calls != 3 || rule.Fired() != 3 {
					t.Errorf("a body that keeps breaking: %v after %d calls, %d reads (want unreachable after 3)", err, calls, rule.Fired())
				}
				in.Clear()
			}

			// Open applies it to every store.
			in.Add(&faultproxy.Rule{Match: faultproxy.Ops(faultproxy.OpRead), Times: 1, Action: faultproxy.Reset(100 << 10)})
			opened := b.Open(t, prefix, in.Client())
			if err := opened.Read(t.Context(), "model/w.bin", providers.ReadOptions{}, func(r io.Reader) error {
				_, err := io.Copy(io.Discard, r)
				return err
			}); err != nil {
				t.Errorf("a store from Open does not ride out one broken body: %v", err)
			}

			consumer := errors.New("the consumer gave up")
			calls = 0
			err = s.Read(t.Context(), "model/w.bin", providers.ReadOptions{}, func(r io.Reader) error {
				calls++
				io.CopyN(io.Discard, r, 10)
				return consumer
			})
			if !errors.Is(err, consumer) || calls != 1 {
				t.Errorf("consumer's error: %v after %d calls, want it once", err, calls)
			}
		})
	}
}

// unwrapAll strips the wrappers Open added, so that the test sees its own WithRetry only.
func unwrapAll(s providers.Store) providers.Store {
	for {
		u, ok := s.(interface{ Unwrap() providers.Store })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}
