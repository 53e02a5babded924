package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"lifeboat/internal/base/startgc"
)

func main() {
	startgc.Restore() // the collector was off while the packages initialised
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext ends on the first SIGINT or SIGTERM, with a *signalError naming it as the cause
// (so that finish can exit 128+signo, the shell convention). It then stops catching signals: a
// second Ctrl-C kills the process at once, for the operator whose cleanup is taking too long.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(&signalError{sig: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		signal.Stop(ch)
		cancel(nil)
	}
}
