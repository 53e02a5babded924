package providers_test

// The stores the tests of the core open through the factory (retries, stalls, caps, secrets).
import (
	_ "lifeboat/providers/azure"
	_ "lifeboat/providers/gcs"
	_ "lifeboat/providers/oci"
	_ "lifeboat/providers/s3"
)
