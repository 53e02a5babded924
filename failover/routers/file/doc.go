// Package file is the file router driver (router: {driver: file, path: weights.json}): the
// weights and states are a JSON document on disk, written atomically, for routers that reload it.
package file
