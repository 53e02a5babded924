// Package base is the ground floor and the tests of the module's shape: its subpackages
// (editdistance, kubeclient, lockowner, redact, shell, wait, yamlnode) are leaf helpers importing nothing of
// Lifeboat above them; layering_test.go holds the layer order, the doc.go rule and the one sleep.
//
// The layer order:
//
//	internal/base < providers < manifest < fleet < verify < failover < drills < cmd
//
// A package imports only its own layer and the layers below it; the ground floor imports only the
// standard library, third-party modules and itself, so every layer can use it. There are no
// exceptions: an extension kind registers with package fleet, which is below every layer that
// holds one (the launcher kinds under verify/warm, the router drivers under failover/routers).
// Product packages (everything above outside internal/) import from
// internal/ only internal/base, except that cmd/lifeboat ships the demo's `demo init` and
// `engine-sim` commands, which use internal/sample and internal/enginesim. The tools beside the CLI
// under cmd/ (bench, democlouds, release) ship nothing: they may use the test servers the bench and
// the demo run, and nothing imports them. Test files are free.
//
// Every package says what it holds in its doc.go, the first paragraph in at most three lines, and
// every file a doc.go names exists (TestPackageDocs). docs/architecture.md says where each concept
// lives; every path the recipes in docs/development.md name exists (recipes_test.go).
package base
