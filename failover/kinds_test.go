package failover

// The kinds the tests' fleet files use.
import (
	_ "lifeboat/failover/routers/caddy"
	_ "lifeboat/failover/routers/file"
	_ "lifeboat/failover/routers/haproxy"
	_ "lifeboat/failover/routers/httpdoc"
	_ "lifeboat/verify/warm/endpoint"
	_ "lifeboat/verify/warm/execlauncher"

	// The stores of ../fleet/testdata/fleet/full.yaml, which the unit tests parse too.
	_ "lifeboat/providers/azure"
	_ "lifeboat/providers/gcs"
	_ "lifeboat/providers/s3"
)
