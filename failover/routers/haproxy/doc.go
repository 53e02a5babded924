// Package haproxy is the HAProxy router driver (router: {driver: haproxy, socket: …}): it sets
// server weights and states over HAProxy's admin socket, comparing each backend before writing.
package haproxy
