package enginesim

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ErrCrashed is returned by Serve when --sim-crash-after was reached.
var ErrCrashed = errors.New("engine-sim: simulated crash (--sim-crash-after reached)")

// Serve serves s on ln until ctx is done (nil error) or the simulated crash fires (ErrCrashed).
// Bind and listen only after Load: until then connects are refused, as with vLLM.
func Serve(ctx context.Context, ln net.Listener, s *Server) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-s.Crashed():
		_ = hs.Close() // a crash drops connections, it does not drain them
		return ErrCrashed
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		return nil
	}
}
