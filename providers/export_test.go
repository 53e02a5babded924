package providers

// BucketName and AzAccountName expose the hand-written name checks to the external tests.
var (
	BucketName    = bucketName
	AzAccountName = azAccountName
)
