// Package gatewayapi is the gateway-api router driver: each tenant class is one Gateway API
// HTTPRoute whose single rule's backendRefs carry one backend per region, weighted; every write is
// conditional on the route's resourceVersion, and a route it cannot map region by region is refused.
//
// A region's backend (router.services, or its synonym router.targets) is a Service port
// ("[namespace/]name:port", or {kind: Service, name, port}), a Multi-Cluster Services
// ServiceImport port (multicluster.x-k8s.io), or a Gateway API Inference Extension InferencePool
// (inference.networking.k8s.io/v1) or InferencePoolImport (inference.networking.x-k8s.io); a
// pool's backendRef carries group, kind and name, no port. backendRefs are matched by group,
// kind, namespace, name and, for the kinds with ports, port.
//
// Each HTTPRoute is gateway.networking.k8s.io/v1. A ready region is a backendRef with its weight, a
// drained one a backendRef with weight 0 (kept, so the gateway lets its connections finish), a
// withdrawn one (maint) has no backendRef. Every write is an update conditional on the route's
// metadata.resourceVersion as this run last read or wrote it back (the API server's
// compare-and-swap: 409 Conflict is router.ErrRouterConflict, never re-read and retried, unless
// the route differs from what this run saw in its status alone — a gateway controller's report,
// which moves the resourceVersion too — when the write is sent once more on it). A route
// Lifeboat cannot map region by region — a backend that is no region's (another name, namespace,
// port, kind or group), a second rule, a filter that mirrors, redirects or hands the request to
// an extension, backendRefs with filters of their own, a backend of a kind none of the above — is
// refused (router.ErrRouterTopology), never half-managed.
//
// Every read also reads each managed region's InferencePool: one that does not exist or cannot
// be read, has no spec.selector, or whose endpoint picker (spec.endpointPickerRef, a Service) is
// missing, cannot be read or lacks the referenced port is refused, naming the region, the pool
// and what is missing — where the region's traffic goes is then not known, and is not guessed.
// An InferencePoolImport must exist. Notes reports, beside the routes' Accepted and ResolvedRefs
// conditions, each pool's selector and endpoint picker and the status conditions the pools' and
// imports' controllers wrote. config.go decodes its fleet section (router: {driver: gateway-api, ...}).
//
// The driver talks to the API server through client-go's dynamic client on unstructured
// objects: no Gateway API types are compiled in.
package gatewayapi
