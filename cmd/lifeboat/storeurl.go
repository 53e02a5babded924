package main

import (
	"context"
	"strings"

	"lifeboat/providers"
)

// isStoreURL reports whether a --model/--bundle/--from/--to argument is a URL (scheme://…) rather
// than a plain local path.
func isStoreURL(s string) bool { return strings.Contains(s, "://") }

// openStore parses and opens a store URL, every store of every command the same way: with -v,
// each request is logged (method, host, key, status, attempt) and each retry as it happens. A
// malformed URL or an unusable configuration (no AWS region, a malformed connection string) is
// bad input, exit 2 — exitCode tells from the error.
func (a *app) openStore(ctx context.Context, raw string) (providers.Store, error) {
	if _, err := providers.ParseURL(raw); err != nil {
		return nil, withCode(exitUsage, err)
	}
	o := providers.Options{Known: a.known}
	if a.verbose {
		o.Log = a.log
	}
	return providers.Open(ctx, raw, o)
}

// openStateStore opens a fleet's state store (the failover lock and journal, the drill history):
// as openStore, private (a file:// root must be the caller's own directory, writable by nobody
// else, reached through no symbolic link; see providers.Options.Private).
func (a *app) openStateStore(ctx context.Context, raw string) (providers.Store, error) {
	loc, err := providers.ParseURL(raw)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if err := providers.CheckStateLocation(loc); err != nil {
		return nil, withCode(exitUsage, err)
	}
	o := providers.Options{Private: true, Known: a.known}
	if a.verbose {
		o.Log = a.log
	}
	return providers.Open(ctx, raw, o)
}
