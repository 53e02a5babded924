package providers

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// ErrListTooLarge: a listing went past a cap — more entries than Options.MaxListEntries, or an
// S3 listing page larger than MaxListPageBytes. A store's contents are not trusted to be small:
// the cap is a named failure, never a listing silently cut short.
var ErrListTooLarge = errors.New("listing too large")

// DefaultMaxListEntries is Options.MaxListEntries when unset: a model replica holds thousands of
// files, a shared bucket prefix perhaps a few hundred thousand.
const DefaultMaxListEntries = 1_000_000

// MaxListPageBytes bounds one S3 listing response: 1,000 keys of at most 1,024 bytes, XML-escaped,
// with their metadata, stay well below it. The SDK reads a page whole, so without it an endless
// page grows memory without limit.
const MaxListPageBytes = 32 << 20

func (o Options) maxListEntries() int {
	if o.MaxListEntries > 0 {
		return o.MaxListEntries
	}
	return DefaultMaxListEntries
}

// capEntries wraps a List callback so that entry max+1 ends the listing with ErrListTooLarge.
func capEntries(fn func(Object) error, max int) func(Object) error {
	n := 0
	return func(o Object) error {
		if n++; n > max {
			return fmt.Errorf("%w: more than %d objects (raise Options.MaxListEntries if that is expected)", ErrListTooLarge, max)
		}
		return fn(o)
	}
}

// capResponseBody caps the raw response body one S3 operation's deserializer may read.
func capResponseBody(limit int64) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			// Added last in the deserialize step, so it runs inside the operation's
			// deserializer: it sees the response first and hands on a capped body.
			return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("lifeboat.CapResponseBody",
				func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleDeserialize(ctx, in)
					if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Body != nil {
						resp.Body = &cappedBody{rc: resp.Body, left: limit, limit: limit}
					}
					return out, md, err
				}), middleware.After)
		})
	}
}

// cappedBody fails with ErrListTooLarge once more than limit bytes have been read.
type cappedBody struct {
	rc          io.ReadCloser
	left, limit int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: a listing page larger than %d bytes", ErrListTooLarge, b.limit)
		}
		return b.rc.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
