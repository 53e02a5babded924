package failover

import (
	"fmt"

	"lifeboat/providers/localfile"
)

// MaxFleetBytes bounds a fleet file: a thousand regions take about 300 KB.
const MaxFleetBytes = 4 << 20

// ReadFleet reads and parses a fleet file. It opens only a regular file (a FIFO or device is
// refused, never waited on or read without end) of at most MaxFleetBytes.
func ReadFleet(name string) (*Fleet, error) {
	data, err := localfile.ReadFile(name, MaxFleetBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet file: %w", err)
	}
	return ParseFleet(data, name)
}

// ReadSignals reads and checks a recorded signals file (--signals) against the fleet, through
// the same bounded, regular-file-only reader as the fleet file.
func ReadSignals(name string, f *Fleet) (*SignalsFile, error) {
	data, err := localfile.ReadFile(name, maxSignalsBytes)
	if err != nil {
		return nil, fmt.Errorf("signals file: %w", err)
	}
	return ParseSignals(data, name, f)
}
