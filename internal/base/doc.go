// Package base is the ground floor: the shared leaf helpers under internal/base (editdistance,
// kubeclient, redact, yamlnode…) import only the standard library, third-party modules and each
// other, never a Lifeboat package above them, so every layer can use them. layering_test.go enforces the layer order:
//
//	internal/base < providers < manifest < verify < failover < drills < cmd
//
// A package imports only its own layer and the layers below it. Extension kinds sit in the layer
// of the registry they register with, whatever folder holds them: verify/warm/kube is a failover
// launcher kind (it calls failover.RegisterLauncher and decodes its fleet section with
// failover.FleetDecoder), so it is in the failover layer; failover/gatewayapi is a router driver,
// also in the failover layer. Product packages (everything above outside internal/) import from
// internal/ only internal/base, except that cmd/lifeboat ships the demo's `demo init` and
// `engine-sim` commands, which use internal/sample and internal/enginesim. Test files are free.
// docs/architecture.md says where each concept lives.
package base
