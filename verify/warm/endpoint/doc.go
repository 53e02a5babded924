// Package endpoint is the endpoint launcher kind (launcher: {kind: endpoint, url: …}): it starts
// nothing and probes a replica already serving at url, or at the region's endpoint.
package endpoint
