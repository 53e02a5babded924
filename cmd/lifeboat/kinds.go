package main

// The router drivers and launchers registered from their own packages (the built-in ones are
// registered by package failover itself).
import (
	_ "lifeboat/failover/gatewayapi" // router: {driver: gateway-api}
)
