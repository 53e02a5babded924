// Command lifeboat keeps multi-region vLLM serving recoverable: it captures what a replica needs
// in one DR manifest, lints and signs it, verifies and repairs every copy, boots replicas and proves
// them warm, fails traffic over without breaking residency, and rehearses all of it in drills.
//
// This package is the CLI layer only; the work is done by the packages below it
// (docs/architecture.md). Each command has its file (*_cmd.go); root.go holds the state every
// command shares and its global flags, document.go the -o json and -o yaml result documents,
// junit.go -o junit, errors.go and exitcodes.go the one mapping from an error to an exit code
// (docs/exit-codes.md), and kinds.go links in the router drivers and launchers that register
// themselves from their own packages.
package main
