// Package execlauncher is the exec launcher kind (launcher: {kind: exec, command: …, port: …}):
// a candidate replica is a command line run on this host (warm.ExecLauncher).
package execlauncher
