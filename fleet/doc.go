// Package fleet holds the fleet file: regions, replicas, launchers, tenant residency classes,
// router, notifications, trust, probe auth, failover tuning and SLA, and the registry of router
// driver and launcher kinds that decode their own parts of it.
//
// Where things are: fleet.go parses and checks the file (Parse, Read in fleetfile.go);
// fleet_notify.go decodes notify: and trust.go decodes trust:; registry.go holds the kinds.
//
// # Extension points
//
// Router drivers and launchers are kinds registered by name (RegisterDriver, RegisterLauncher):
// a kind is one package plus one registration, and cmd/lifeboat/kinds.go lists every kind
// compiled into the binary. Its configuration type decodes its own keys of the fleet file (Keys,
// through a Decoder, so its problems read "file:line: field: message" and all of a file's are
// reported at once), cross-checks them with the whole fleet (Check), and opens the driver
// (DriverConfig.Open, a router.Driver) or builds the candidate's launch.Launcher
// (LauncherConfig.Launcher). The fleet parser, OpenRouter, warm.FleetBootOptions, the executor,
// the drills and the CLI name no kind: what differs between kinds is asked of capability
// interfaces by type assertion — router.ConditionalDriver, router.ZeroDrainDriver and
// router.NotingDriver for drivers, AttachLauncher, CommandLauncher and InPlaceLauncher for
// launchers — each implementation asserting at compile time what it provides.
//
// The registry is package-level and filled from init functions, as database/sql's drivers and
// image's formats are, rather than a value passed around: a fleet file is parsed in every
// command, in the drills and in many tests, and each must know every kind; threading a registry
// through every Parse call would make each caller part of every new kind. A kind's package
// imports fleet (for the interfaces), so fleet cannot import it: it registers itself in its
// init, and cmd/lifeboat imports it for that effect (tests import the kinds they parse).
// Registration happens before main runs and is read-only afterwards, so it is configuration of
// the binary, not mutable run-time state; a duplicate or invalid name panics at start-up.
package fleet
