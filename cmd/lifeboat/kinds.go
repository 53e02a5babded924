package main

// The router drivers and launcher kinds compiled into lifeboat: each package registers its kind
// with package fleet in its init, and this list is the one place that links them in. Adding a
// kind is one new package and one line here.
import (
	_ "lifeboat/failover/routers/caddy"      // router: {driver: caddy}: Caddy's admin API
	_ "lifeboat/failover/routers/file"       // router: {driver: file}: a weights document on disk
	_ "lifeboat/failover/routers/gatewayapi" // router: {driver: gateway-api}: HTTPRoute weights
	_ "lifeboat/failover/routers/haproxy"    // router: {driver: haproxy}: HAProxy's admin socket
	_ "lifeboat/failover/routers/httpdoc"    // router: {driver: http}: per-class documents over HTTP
	_ "lifeboat/verify/warm/endpoint"        // launcher: {kind: endpoint}: a replica already serving
	_ "lifeboat/verify/warm/execlauncher"    // launcher: {kind: exec}: a command on this host
	_ "lifeboat/verify/warm/kube"            // launcher: {kind: kubernetes}: the bundle's Deployment
)
