package manifest_test

// The stores the tests read from (storesource_test.go), registered with the providers factory.
import (
	_ "lifeboat/providers/azure"
	_ "lifeboat/providers/gcs"
	_ "lifeboat/providers/s3"
)
