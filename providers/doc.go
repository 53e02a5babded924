// Package providers is Lifeboat's one small interface over object stores and local disk — list, stat
// with native checksums, ranged read, streaming write, conditional create/compare-and-swap, delete —
// with implementations for file://, s3://, gs:// and az:// URLs (see Open and Store).
package providers
