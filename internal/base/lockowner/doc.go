// Package lockowner identifies the process that holds a lock (host, boot, pid namespace, pid,
// start time) and judges whether it still runs: Alive, Gone, or CannotTell from here.
//
// The failover lock records its holder with ThisOwner and takes a lock over only from a holder
// proven Gone; the drills and the kubernetes launcher judge their own records' processes with
// JudgeProcess. It imports only the standard library, so every layer may use it.
package lockowner
