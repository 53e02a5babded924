// Package httpdoc is the http router driver (router: {driver: http, url: …}): one weights
// document per class, read with GET and written with PUT and If-Match at url/<backend>.
package httpdoc
