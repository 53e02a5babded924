package fleet_test

// The stores whose URLs the fleet files of the tests name, registered with the providers factory
// as cmd/lifeboat/kinds.go registers them: each scheme's grammar is its store package's, so
// fleet.Parse checks an s3://, gs://, az:// or oci:// URL only where that package is linked.
import (
	_ "lifeboat/providers/azure"
	_ "lifeboat/providers/gcs"
	_ "lifeboat/providers/oci"
	_ "lifeboat/providers/s3"
)
