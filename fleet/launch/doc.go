// Package launch is the contract between a fleet's launcher kinds and what boots a candidate
// replica: Launcher, Instance and Spec, and where a replica's bearer token comes from
// (APIKeySource).
//
// The fleet file names a region's launcher kind; the kind's configuration builds a Launcher
// (fleet.LauncherConfig.Launcher), and warm.Boot launches and probes it. The exec, endpoint and
// kubernetes kinds live in their own packages under verify/warm. host.go names this host and a
// process by its start time, what a launcher records of a replica so a later run finds it again.
package launch
