// Package gatewayapi is the gateway-api router driver: each tenant class is one Gateway API
// HTTPRoute whose single rule's backendRefs carry one Service per region, weighted; every write is
// conditional on the route's resourceVersion, and a route it cannot map region by region is refused.
//
// Each HTTPRoute is gateway.networking.k8s.io/v1. A ready region is a backendRef with its weight, a
// drained one a backendRef with weight 0 (kept, so the gateway lets its connections finish), a
// withdrawn one (maint) has no backendRef. Every write is an update conditional on the route's
// metadata.resourceVersion as this run last read or wrote it back (the API server's
// compare-and-swap: 409 Conflict is router.ErrRouterConflict, never re-read and retried). A route
// Lifeboat cannot map region by region — a backend that is no region's, a second rule, a filter
// that mirrors, redirects or hands the request to an extension, backendRefs with filters of their
// own, a non-Service backend — is refused (router.ErrRouterTopology), never half-managed.
// config.go decodes its fleet section (router: {driver: gateway-api, ...}).
//
// The driver talks to the API server through client-go's dynamic client on unstructured
// objects: no Gateway API types are compiled in.
package gatewayapi
