package drills

import (
	"bytes"
	"fmt"
	"slices"

	"lifeboat/fleet"
)

// A fault kind is one registration in faultKinds: its name, the keys a drill file must give it,
// what it needs of the fleet, and where and how it is injected, detected and put back. The
// runner has one injection point per effect (below) and asks a fault's kind — never its name —
// which one applies, so a new kind over an existing effect is one entry here; a new effect is a
// new injection point in the runner.
type faultKind struct {
	name string
	// needs are the keys a fault of this kind requires: region, path, duration.
	needs  []string
	effect faultEffect
	// plant (effectReplica) returns the file's new content, or remove to delete it.
	plant func(orig []byte) (bad []byte, remove bool, err error)
	// command (effectCandidate) rewrites the region's candidate command line; such a fault
	// needs the region's launcher to be a fleet.CommandLauncher.
	command func(f Fault, cmd string) string
	// bySignals (effectCandidate): the fault is also detected when the failover's signals judge
	// the candidate not a receiver (a saturated one is warm yet refuses load).
	bySignals bool
	// defaults fills what the drill file may omit.
	defaults func(*Fault)
}

// faultEffect is where a fault acts in a drill.
type faultEffect int

const (
	// effectReplica: a file of a region's replica is changed before the first verify (its
	// original kept in the state store), detected by the verify, put back at teardown.
	effectReplica faultEffect = iota + 1
	// effectCandidate: a region's candidate is booted altered (kind.command), detected by the
	// boot's verdict (or the signals).
	effectCandidate
	// effectRouter: the router answers nothing for duration after after_step ramp steps;
	// detected when the executor stops and the run is resumed from the journal.
	effectRouter
	// effectOrchestrator: the orchestrator dies after applying ramp step after_step, before
	// journaling it; detected when a new process's resume takes over.
	effectOrchestrator
)

// faultKinds are the fault kinds, in the order messages list them.
var faultKinds = []faultKind{
	{name: FaultMissingFile, needs: []string{"region", "path"}, effect: effectReplica,
		plant: func([]byte) ([]byte, bool, error) { return nil, true, nil }},
	{name: FaultCorruptFile, needs: []string{"region", "path"}, effect: effectReplica,
		plant: func(orig []byte) ([]byte, bool, error) {
			if len(orig) == 0 {
				return nil, false, fmt.Errorf("the file is empty: nothing to corrupt")
			}
			bad := bytes.Clone(orig)
			for i := len(bad) / 2; i < len(bad) && i < len(bad)/2+4; i++ {
				bad[i] ^= 0xA5 // same size, other bytes: only a checksum or a re-read tells
			}
			return bad, false, nil
		}},
	{name: FaultBootFails, needs: []string{"region"}, effect: effectCandidate,
		command: func(Fault, string) string {
			return `/bin/sh -c "echo 'drill fault boot-fails: this candidate exits at launch' >&2; exit 3"`
		}},
	{name: FaultSaturate, needs: []string{"region"}, effect: effectCandidate, bySignals: true,
		command: func(f Fault, cmd string) string { return cmd + " " + f.Args },
		defaults: func(f *Fault) {
			if f.Args == "" {
				f.Args = DefaultSaturateArgs
			}
		}},
	{name: FaultRouterUnreachable, needs: []string{"duration"}, effect: effectRouter},
	{name: FaultKillMidRamp, effect: effectOrchestrator},
}

// FaultKinds are the names of the fault kinds a drill file can inject.
func FaultKinds() []string {
	out := make([]string, 0, len(faultKinds))
	for _, k := range faultKinds {
		out = append(out, k.name)
	}
	return out
}

func kindOfFault(name string) (faultKind, bool) {
	i := slices.IndexFunc(faultKinds, func(k faultKind) bool { return k.name == name })
	if i < 0 {
		return faultKind{}, false
	}
	return faultKinds[i], true
}

// effectOf is where a fault acts (0 for an unknown kind, which parsing refused).
func effectOf(f Fault) faultEffect {
	k, _ := kindOfFault(f.Kind)
	return k.effect
}

// fleetProblem says what the fault needs of the fleet and it lacks; "" when nothing.
func (k faultKind) fleetProblem(f Fault, fl *fleet.Fleet) string {
	r := fl.Regions[f.Region]
	if k.effect == effectCandidate && r != nil && !commandLauncher(r) {
		return fmt.Sprintf("%s has no launcher that runs a command line (such as exec): a %s fault alters its candidate's", f.Region, k.name)
	}
	return ""
}

// commandLauncher: the region's candidate runs a command line a fault can alter.
func commandLauncher(r *fleet.Region) bool {
	if !r.Candidate() {
		return false
	}
	_, ok := r.Launcher.Config.(fleet.CommandLauncher)
	return ok
}
