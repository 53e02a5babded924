// Package router is the contract between the failover executor and a router driver: the
// Driver interface and its optional capabilities, the weights and server states a driver reads
// and writes, conditional writes (RouterVersion, ErrRouterConflict) and the residency check.
//
// It also holds what the HTTP drivers share: a client that follows no redirect, bounded reads
// of a router's answers (Answer, ReadBounded) and the error for an unexpected status (Status),
// which marks a 5xx or 429 ErrRouterUnreachable; and Wrap, the one way to wrap a driver without
// losing or adding a capability. A driver kind lives in its own package under
// failover/routers and registers itself with the fleet package.
package router
