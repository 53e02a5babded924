package main

// The stores the lifeboat command links: each registers its URL scheme with the providers
// factory (providers.Register) from its init; file:// is providers' own.
import (
	_ "lifeboat/providers/azure" // az://: Azure Blob Storage
	_ "lifeboat/providers/gcs"   // gs://: Google Cloud Storage
	_ "lifeboat/providers/oci"   // oci://: an OCI registry (Distribution API)
	_ "lifeboat/providers/s3"    // s3://: Amazon S3 and S3-compatible stores
)
