// Package failover holds the fleet config, the residency policy, the pure failover planner with its
// safety invariants, and the executor (lock, journal, resume) that drives router weights.
// It is populated by the failover work; nothing here yet.
package failover
