// Package faultproxy injects HTTP faults between a storage SDK and a storage server: bursts of
// 503/429 with Retry-After, persistent errors, connection resets and truncation mid-body, and
// altered checksum headers or bodies. Test-only: nothing in the shipped commands imports it.
//
// One Injector holds the rules and can be put in three places:
//
//   - Client returns an *http.Client whose transport applies the rules (pass it as
//     providers.Options.HTTPClient) — the simplest, and it sees every request the SDK makes;
//   - Handler wraps a server's http.Handler (fake-gcs-server in-process), so that resets and
//     truncations happen on real TCP connections;
//   - NewProxy starts a reverse proxy on a loopback port in front of an out-of-process emulator
//     (versitygw, Azurite); point the store URL's endpoint at Proxy.URL.
//
// Rules are checked in the order they were added; the first whose Match accepts a request and
// that still has fires left applies its Action. Rules can be added and removed while requests run.
package faultproxy
