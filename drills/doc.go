// Package drills runs DR drills end to end (verify, restore and boot, failover ramp, failback) and
// reports recovery time against the SLA.
//
// A drill boots each candidate through the fleet's own launcher (failover.Fleet.BootOptions),
// whatever its registered kind, and drives the fleet's own router driver, wrapped for its faults
// and for each orchestrator process it plays; the wrappers forward the driver's capabilities
// (failover.ConditionalDriver, failover.ZeroDrainDriver) so the executor sees what it would see
// without a drill. Fault kinds are one registration each (faultkinds.go): the keys a fault needs,
// where it acts (a replica file, the candidate's boot, the router, the orchestrator), what it
// needs of the fleet (a command line to alter: failover.CommandLauncher) and how it is injected;
// the runner asks a fault's kind, never its name.
package drills
