// Package wait is the context-aware sleep: Sleep waits a duration unless the context ends first,
// for retry back-offs, step intervals and polls alike, so that Ctrl-C or a deadline never waits
// out a timer.
package wait
