// Package caddy is the Caddy router driver (router: {driver: caddy, url: …}): it rewrites each
// class's route's reverse_proxy upstreams through Caddy's admin API, with If-Match on the ETag.
//
// Caddy has no drain state, so weight 0 is the drain (router.ZeroDrainDriver).
package caddy
