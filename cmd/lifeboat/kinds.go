package main

// What is compiled into lifeboat: the router drivers, launcher kinds and stores. Each package
// registers itself in its init — a kind with package fleet, a store's URL scheme with the
// providers factory (file:// is providers' own) — and this list is the one place that links
// them in. Adding a driver, a launcher or a store is one new package and one line here.
import (
	// Router drivers: router: {driver: NAME}.
	_ "lifeboat/failover/routers/caddy"      // caddy: Caddy's admin API
	_ "lifeboat/failover/routers/file"       // file: a weights document on disk
	_ "lifeboat/failover/routers/gatewayapi" // gateway-api: HTTPRoute weights
	_ "lifeboat/failover/routers/haproxy"    // haproxy: HAProxy's admin socket
	_ "lifeboat/failover/routers/httpdoc"    // http: per-class documents over HTTP
	_ "lifeboat/failover/routers/route53"    // route53: Route 53 weighted records

	// Launchers: regions.R.launcher: {kind: NAME}.
	_ "lifeboat/verify/warm/endpoint"     // endpoint: a replica already serving
	_ "lifeboat/verify/warm/execlauncher" // exec: a command on this host
	_ "lifeboat/verify/warm/kube"         // kubernetes: the bundle's Deployment in a cluster

	// Stores: the URL schemes of replicas, manifests and state.
	_ "lifeboat/providers/azure" // az://: Azure Blob Storage
	_ "lifeboat/providers/gcs"   // gs://: Google Cloud Storage
	_ "lifeboat/providers/oci"   // oci://: an OCI registry (Distribution API)
	_ "lifeboat/providers/s3"    // s3://: Amazon S3 and S3-compatible stores
)
