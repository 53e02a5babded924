// Package endpoint is the endpoint launcher kind (launcher: {kind: endpoint, url: …}): it starts
// nothing and probes a replica already serving at url, or at the region's endpoint.
//
// fleet.go decodes and checks its fleet section and registers the kind; launch.go is the Launcher
// and the Instance it returns (nothing to stop, no log).
package endpoint
