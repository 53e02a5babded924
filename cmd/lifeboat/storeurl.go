package main

import (
	"context"
	"errors"
	"strings"

	"lifeboat/providers"
)

// isStoreURL reports whether a --model/--bundle/--from/--to argument is a URL (scheme://…) rather
// than a plain local path.
func isStoreURL(s string) bool { return strings.Contains(s, "://") }

// urlStoreOpen parses and opens a store URL. A malformed URL or an unusable configuration (no AWS
// region, a malformed connection string) is bad input, exit 2.
func urlStoreOpen(ctx context.Context, raw string) (providers.Store, error) {
	if _, err := providers.ParseURL(raw); err != nil {
		return nil, withCode(exitUsage, err)
	}
	s, err := providers.Open(ctx, raw, providers.Options{})
	if err != nil {
		return nil, withCode(urlStoreErrCode(err), err)
	}
	return s, nil
}

// urlStoreErrCode maps a store error to an exit code: 4 when the store stayed unreachable after
// the SDK's retries or a deadline passed waiting for it (as verify --timeout does), 1 when
// interrupted, 2 for what the user must fix (a bad URL, a missing bucket or directory, refused
// credentials, unsafe keys).
func urlStoreErrCode(err error) int {
	switch {
	case errors.Is(err, context.Canceled):
		return exitProblem
	case errors.Is(err, providers.ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return exitUnreachable
	}
	return exitUsage
}
