// Package failover holds the fleet file (regions, replicas, launchers, tenant residency classes,
// router, notifications, trust, failover tuning, SLA), the pure planner and its safety invariants,
// the executor that applies a plan (lock, journal, resume, abort, rollback), and the router drivers.
//
// Where things are: fleet.go, fleet_notify.go and trust.go parse the fleet file; signals.go and
// signals_live.go say what each region can take; plan.go, planner.go, invariants.go and
// savedplan.go plan; executor.go and executor_*.go carry a plan out, one concern a file, on
// lock.go, lockowner.go and journal.go; router_file.go, router_http.go,
// router_haproxy.go and router_caddy.go are the built-in drivers (their contract is fleet/router); notify_events.go turns journal
// records into notifications; boot.go turns a region into warm.BootOptions.
//
// # Extension points
//
// Router drivers and launchers are kinds registered by name (RegisterDriver, RegisterLauncher;
// registry.go): a kind is one package, or one file, plus one registration. Its configuration type
// decodes its own keys of the fleet file (Keys, through a FleetDecoder, so its problems read
// "file:line: field: message" and all of a file's are reported at once), cross-checks them with
// the whole fleet (Check), and opens the driver (DriverConfig.Open) or builds the candidate's
// warm.Launcher (LauncherConfig.Launcher). The fleet parser, OpenRouter, Fleet.BootOptions, the
// executor, the drills and the CLI name no kind: what differs between kinds is asked of
// capability interfaces by type assertion — ConditionalDriver and ZeroDrainDriver for drivers,
// AttachLauncher and CommandLauncher for launchers — each implementation asserting at compile
// time what it provides (var _ ConditionalDriver = (*CaddyRouter)(nil)).
//
// The registry is package-level and filled from init functions, as database/sql's drivers and
// image's formats are, rather than a value passed around: a fleet file is parsed in every
// command, in the drills and in many tests, and each must know every kind; threading a registry
// through every ParseFleet call would make each caller part of every new kind. A kind in its own
// package (which imports failover for RouterState and the interfaces, so failover cannot import
// it) registers itself in its init, and cmd/lifeboat imports it for that effect. Registration
// happens before main runs and is read-only afterwards, so it is configuration of the binary, not
// mutable run-time state; a duplicate or invalid name panics at start-up.
package failover
