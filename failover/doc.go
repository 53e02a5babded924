// Package failover holds the pure planner and its safety invariants, and the executor that
// applies a plan to a fleet's router (lock, journal, resume, abort, rollback).
//
// Where things are: signals.go and signals_live.go say what each region can take; plan.go,
// planner.go, invariants.go and savedplan.go plan; executor.go and executor_*.go carry a plan
// out, one concern a file, on lock.go and journal.go; notify_events.go turns
// journal records into notifications. The fleet file and the kind registry are package fleet;
// the router contract is fleet/router, and each router driver is a package under
// failover/routers.
package failover
