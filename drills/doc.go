// Package drills runs DR drills end to end (verify, restore and boot, failover ramp, traffic,
// failback, teardown) with injected faults, reports recovery time against the SLA, and keeps the
// evidence: the reports, the drill history, and the record of what a crashed drill left behind.
//
// file.go parses a drill file; runner.go and runner_*.go run it, one step or phase a file;
// faults.go and faultkinds.go inject the faults and traffic.go sends the synthetic requests;
// outcome.go judges the expectations; report.go, evidence.go, write.go and html.go make report.json,
// report.md, report.html and junit.xml; history.go keeps the history in the state store; and
// leftovers.go records what teardown must undo, so that `lifeboat drill cleanup` can after a crash.
//
// A drill boots each candidate through the fleet's own launcher (warm.FleetBootOptions),
// whatever its registered kind, and drives the fleet's own router driver, wrapped for its faults
// and for each orchestrator process it plays; both wrap it with router.Wrap, which keeps exactly
// the driver's capabilities (router.ConditionalDriver, ZeroDrainDriver, NotingDriver) so the
// executor sees what it would see without a drill. Fault kinds are one registration each (faultkinds.go): the keys a fault needs,
// where it acts (a replica file, the candidate's boot, the router, the orchestrator), what it
// needs of the fleet (a command line to alter: fleet.CommandLauncher) and how it is injected;
// the runner asks a fault's kind, never its name.
package drills
