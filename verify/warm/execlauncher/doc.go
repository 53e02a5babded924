// Package execlauncher is the exec launcher kind (launcher: {kind: exec, command: …, port: …}):
// a candidate replica is a command line run on this host, in its own process group.
//
// fleet.go decodes and checks its fleet section and registers the kind; command.go renders the
// command template into argv (shell-like quoting, no shell); launch.go starts the process (behind
// a gate a drill opens once it recorded the group), with the allowlisted environment (BaseEnv),
// and stops the whole group.
package execlauncher
