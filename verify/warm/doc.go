// Package warm answers "does this replica really serve?": launchers start a replica (a local
// command, or one already running), the prober holds it to vLLM's readiness contract (listen,
// /health, models and adapters listed, a streamed answer within the TTFT budget, sane metrics),
// and Boot restores a replica and proves it warm. Failover and drills import it for preflight.
package warm
