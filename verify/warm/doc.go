// Package warm answers "does this replica really serve?": the prober holds a launched replica to
// vLLM's readiness contract (listen, /health, models and adapters, a streamed answer in the TTFT
// budget, sane metrics), and Boot restores a replica, launches it and proves it warm.
//
// probe.go and probe_*.go hold the prober, one stage of the contract a file; baseurl.go the
// replica URL it is given; boot.go restore and boot; fleetboot.go a fleet region's boot options;
// workdir.go the boot's working directory. The launcher kinds are packages of their own
// (verify/warm/execlauncher, verify/warm/endpoint, verify/warm/kube) on the contract of
// fleet/launch; the failover and the drills use this package for their preflight and candidates.
package warm
