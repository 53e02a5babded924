// Package emulators starts and stops the real servers tests run against, on free loopback ports in
// temporary directories: storage (versitygw, Azurite, fake-gcs-server), an OCI registry, routers
// (HAProxy, Caddy, Traefik) and a Kubernetes control plane with kwok nodes. Test-only.
//
// versitygw.go (with xattr_linux.go and xattr_other.go), azurite.go, gcs.go and buckets.go are
// the stores; registry.go a distribution registry with basic auth; routers.go HAProxy and Caddy,
// docrouter.go the http router driver's weight-document API;
// kube.go, kube_cluster.go, kube_stages.go and kube_traefik.go the kube-apiserver, kwok's fake GPU nodes and pod stages, and Traefik's
// Gateway API controller; node.go runs node scripts from .tools/node_modules. testing.go shares
// them within a test binary and stops them in Main; a missing binary skips the test unless
// LIFEBOAT_REQUIRE_EMULATORS=1 (RequireEnv) makes it fail. Nothing in the shipped commands imports
// it.
package emulators
