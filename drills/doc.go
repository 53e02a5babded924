// Package drills runs DR drills end to end (verify, restore and boot, failover ramp, failback) and
// reports recovery time against the SLA. It is populated by the drill work; nothing here yet.
package drills
