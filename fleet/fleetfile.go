package fleet

import (
	"fmt"

	"lifeboat/providers/localfile"
)

// MaxFleetBytes bounds a fleet file: a thousand regions take about 300 KB.
const MaxBytes = 4 << 20

// ReadFleet reads and parses a fleet file. It opens only a regular file (a FIFO or device is
// refused, never waited on or read without end) of at most MaxFleetBytes.
func Read(name string) (*Fleet, error) {
	data, err := localfile.ReadFile(name, MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("fleet file: %w", err)
	}
	return Parse(data, name)
}
