// Package failover holds the fleet config (regions, replicas, launchers, tenant residency
// classes, router, failover tuning, SLA). The residency policy, the pure failover planner, its
// safety invariants and the executor (lock, journal, resume) are the next part of this work.
package failover
