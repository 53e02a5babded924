// Command lifeboat keeps multi-region vLLM serving recoverable: it captures everything a replica
// needs in one DR manifest and lints it, verifies and repairs every copy in every cloud, boots
// replicas and proves them warm, and fails traffic over without breaking residency.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
