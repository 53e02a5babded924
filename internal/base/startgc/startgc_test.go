package startgc

import (
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

// read returns the collector's GOGC and memory limit, as runtime/metrics reports them.
func read() (gogc int64, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), s[1].Value.Uint64()
}

// Restore gives the collector back (GOGC 100, no memory limit) once Window has passed, and not
// before; until then the heap is bounded by Ceiling.
func TestRestoreAfterWindow(t *testing.T) {
	off = setOff()
	Restore()
	if g, l := read(); g != -1 || l != Ceiling { // off
		t.Fatalf("at once: GOGC %d, limit %d; want off and %d", g, l, Ceiling)
	}
	deadline := time.Now().Add(Window + 5*time.Second)
	for {
		time.Sleep(Window / 5)
		if g, l := read(); g == 100 && l == math.MaxInt64 {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%s after Restore: GOGC %d, limit %d", Window+5*time.Second, g, l)
		}
	}
}
