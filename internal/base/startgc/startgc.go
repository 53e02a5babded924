package startgc

import (
	"math"
	"os"
	"runtime/debug"
	"time"
)

// off is whether init turned the collector off: not when the environment sets GOGC or
// GOMEMLIMIT, which then rule from the first allocation as they always do.
var off = os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" && setOff()

func setOff() bool {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(Ceiling) // the collector still runs if the heap nears it
	return true
}

// Window is how long after main starts the collector stays off; Ceiling the heap at which it
// runs meanwhile all the same. A short command (version, a quick verification, a plan) ends
// inside the window without a collection; a longer one gets the default collector (GOGC 100)
// from then on, its memory bounded by Ceiling until then.
const (
	Window  = 250 * time.Millisecond
	Ceiling = 128 << 20
)

// Restore schedules the collector's return to the default after Window. main calls it first
// thing; it returns at once.
func Restore() {
	if !off {
		return
	}
	time.AfterFunc(Window, func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}
