package fleet_test

// The kinds the tests' fleet files use (cmd/lifeboat/kinds.go links them into the binary).
import (
	_ "lifeboat/failover/routers/caddy"
	_ "lifeboat/failover/routers/file"
	_ "lifeboat/failover/routers/haproxy"
	_ "lifeboat/failover/routers/httpdoc"
	_ "lifeboat/verify/warm/endpoint"
	_ "lifeboat/verify/warm/execlauncher"
)
