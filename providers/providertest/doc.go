// Package providertest is the one conformance suite every providers.Store implementation must pass
// against its real service (an emulator on loopback, or a temporary directory); a store is done
// when Run passes.
package providertest
