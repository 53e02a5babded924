package failover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"lifeboat/fleet"
	"lifeboat/fleet/router"
	"lifeboat/providers/localfile"
)

// RegionSignal is what the failover knows about one region at one moment. Pointer fields are
// unknown when nil: an unknown queue wait means the region can take no load.
type RegionSignal struct {
	// Warm is the warm prober's verdict (a real generation answered), not an HTTP 200.
	Warm bool `json:"warm"`
	// Healthy: /health answers 200. A region that is not healthy is treated as dead.
	Healthy bool `json:"healthy"`
	// QueueWaitMS is the estimated queue wait: waiting prefill tokens ÷ prefill rate.
	QueueWaitMS *float64 `json:"queue_wait_ms,omitempty"`
	// Running is vllm:num_requests_running (in-flight requests), used to end a drain.
	Running *int `json:"running,omitempty"`
	// PrefillTokensPerS is the measured prompt-token inflow; nil means not measured (the
	// planner then assumes failover.assumed_utilization_percent of capacity).
	PrefillTokensPerS *float64 `json:"prefill_tokens_per_s,omitempty"`
	// CalmSeconds is how long the region has been warm and under spill_stop_ms (failback dwell).
	CalmSeconds *float64 `json:"calm_seconds,omitempty"`
	// Why says why a region is not warm or its queue wait is unknown (display only).
	Why string `json:"why,omitempty"`
}

// SignalsFile is the what-if input of `failover plan --signals FILE`: recorded weights and
// per-region signals instead of reading the router and probing the regions.
type SignalsFile struct {
	Weights router.Weights          `json:"weights"`
	States  router.States           `json:"states,omitempty"`
	Regions map[string]RegionSignal `json:"regions"`
	// Baseline are the weights before the failover began (restore and abort go back to them);
	// absent means the current weights.
	Baseline router.Weights `json:"baseline,omitempty"`
	// Transitions are the weight changes per region in the last hour.
	Transitions map[string]int `json:"transitions,omitempty"`
}

// ErrInvalidSignals is matched by every error ParseSignals returns.
var ErrInvalidSignals = errors.New("invalid signals file")

// maxSignalsBytes bounds a signals file.
const maxSignalsBytes = 16 << 20

// ParseSignals decodes and checks a signals file against the fleet: unknown fields, unknown
// classes or regions, weights outside a class's eligible regions, negative or non-finite numbers
// are errors naming the field.
func ParseSignals(data []byte, name string, f *fleet.Fleet) (*SignalsFile, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s: %w", name, fmt.Sprintf(format, args...), ErrInvalidSignals)
	}
	if len(data) > maxSignalsBytes {
		return nil, bad("larger than %d bytes", maxSignalsBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s SignalsFile
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, bad("offset %d: %v", se.Offset, err)
		case errors.As(err, &te):
			return nil, bad("%s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return nil, bad("%v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, bad("more than one JSON value")
	}
	if s.Weights == nil {
		return nil, bad("weights: required")
	}
	if s.Regions == nil {
		return nil, bad("regions: required")
	}
	for _, pair := range []struct {
		field string
		w     router.Weights
	}{{"weights", s.Weights}, {"baseline", s.Baseline}} {
		for _, c := range slices.Sorted(maps.Keys(pair.w)) {
			elig, ok := f.Tenants[c]
			if !ok {
				return nil, bad("%s.%s: tenant class %q is not defined in %s", pair.field, c, c, f.File)
			}
			for _, r := range slices.Sorted(maps.Keys(pair.w[c])) {
				v := pair.w[c][r]
				if v < 0 {
					return nil, bad("%s.%s.%s: weight %d is negative", pair.field, c, r, v)
				}
				if v > 0 && !slices.Contains(elig, r) {
					return nil, bad("%s.%s.%s: region %q is not eligible for class %s (tenants.%s: %v)", pair.field, c, r, r, c, c, elig)
				}
				if _, ok := f.Regions[r]; !ok {
					return nil, bad("%s.%s.%s: region %q is not defined in %s", pair.field, c, r, r, f.File)
				}
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(s.States)) {
		if _, ok := f.Tenants[c]; !ok {
			return nil, bad("states.%s: tenant class %q is not defined", c, c)
		}
		for _, r := range slices.Sorted(maps.Keys(s.States[c])) {
			switch s.States[c][r] {
			case router.Ready, router.Drain, router.Maint:
			default:
				return nil, bad("states.%s.%s: want ready, drain or maint, got %q", c, r, s.States[c][r])
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(s.Regions)) {
		if _, ok := f.Regions[r]; !ok {
			return nil, bad("regions.%s: region %q is not defined in %s", r, r, f.File)
		}
		sig := s.Regions[r]
		for field, v := range map[string]*float64{"queue_wait_ms": sig.QueueWaitMS, "prefill_tokens_per_s": sig.PrefillTokensPerS, "calm_seconds": sig.CalmSeconds} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
				return nil, bad("regions.%s.%s: want a number of 0 or more, got %v", r, field, *v)
			}
		}
		if sig.Running != nil && *sig.Running < 0 {
			return nil, bad("regions.%s.running: want 0 or more, got %d", r, *sig.Running)
		}
	}
	for _, r := range slices.Sorted(maps.Keys(s.Transitions)) {
		if _, ok := f.Regions[r]; !ok || s.Transitions[r] < 0 {
			return nil, bad("transitions.%s: want a defined region and a count of 0 or more", r)
		}
	}
	return &s, nil
}

// StaticSignals replays recorded signals (what-if planning, drills, tests): every call returns
// the same values, or what Func returns when set.
type StaticSignals struct {
	Regions map[string]RegionSignal
	Func    func(preflight bool) map[string]RegionSignal
	// From names where the signals were recorded (the --signals file), for the log.
	From string
}

// Describe says where the signals come from, for the preflight line.
func (s *StaticSignals) Describe() string {
	if s.From != "" {
		return "recorded, from " + s.From + "; no region is probed"
	}
	return "recorded; no region is probed"
}

// Signals returns the recorded signals.
func (s *StaticSignals) Signals(ctx context.Context, preflight bool) (map[string]RegionSignal, error) {
	if s.Func != nil {
		return s.Func(preflight), ctx.Err()
	}
	out := make(map[string]RegionSignal, len(s.Regions))
	for k, v := range s.Regions {
		out[k] = v
	}
	return out, ctx.Err()
}

// ReadSignals reads and checks a recorded signals file (--signals) against the fleet, through
// the same bounded, regular-file-only reader as the fleet file.
func ReadSignals(name string, f *fleet.Fleet) (*SignalsFile, error) {
	data, err := localfile.ReadFile(name, maxSignalsBytes)
	if err != nil {
		return nil, fmt.Errorf("signals file: %w", err)
	}
	return ParseSignals(data, name, f)
}
