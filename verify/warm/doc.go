// Package warm answers "does this replica really serve?": launchers start a replica, the prober
// holds it to vLLM's readiness contract (listen, /health, models and adapters, a streamed answer in
// the TTFT budget, sane metrics), and Boot restores a replica and proves it warm.
//
// launch.go holds the launchers (a local command, or one already running) and the Instance they
// return; probe.go and probe_*.go the prober, one stage of the contract a file; boot.go restore and
// boot; workdir.go and host.go the boot's working directory and this host's identity. The failover
// and the drills use it for their preflight and candidates; verify/warm/kube is the Kubernetes
// launcher.
package warm
