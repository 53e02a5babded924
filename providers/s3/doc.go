// Package s3 is the s3:// store: Amazon S3 and S3-compatible stores through the AWS SDK,
// registered with providers.Register; blank-import it to open s3:// URLs.
//
// url.go is the scheme: the s3://BUCKET/PREFIX?region=R&endpoint=URL grammar, the hints and the
// registration. s3.go holds the client: listings with capped pages, CRC64NVME full-object checksums on single
// and multipart uploads, conditional writes, ListDirs and the Sweep of stale multipart uploads.
package s3
