package testbed

// The stores a test bed opens, registered with the providers factory as cmd/lifeboat registers
// them, so that every test using the bed can open s3://, gs://, az:// and oci:// URLs.
import (
	_ "lifeboat/providers/azure"
	_ "lifeboat/providers/gcs"
	_ "lifeboat/providers/oci"
	_ "lifeboat/providers/s3"
)
