package main

import (
	"os"
	"syscall"
)

// childPeakRSS is a finished child's peak resident memory in KiB, and the figure it would show
// without using any memory of its own. Linux starts a child's max RSS at its parent's high-water
// mark (the fork shares the parent's memory until exec), so under -race in this large test
// process every child "peaks" at least at the test's own size; only a peak above that inherited
// floor is the child's own. Callers compare max(limit, floor) with peak.
func childPeakRSS(ps *os.ProcessState) (peak, floor int64) {
	if ps == nil {
		return 0, 0
	}
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		peak = ru.Maxrss
	}
	return peak, self.Maxrss
}
