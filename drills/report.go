package drills

import (
	"errors"
	"fmt"
	"time"

	"lifeboat/failover"
)

// SchemaID names the report.json schema (drills/report.schema.json). Fields are only ever
// added within one version.
const SchemaID = "https://lifeboat.dev/schemas/drill-report/v1"

// Step statuses.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
	// Inconclusive: the step found nothing wrong but proved nothing either (a verification that
	// left copies UNVERIFIED); the drill's verdict is then FAIL.
	Inconclusive = "inconclusive"
)

// Report is a drill's evidence: report.json. JSON field names are stable (see
// drills/report.schema.json).
type Report struct {
	Schema   string         `json:"$schema"`
	Drill    string         `json:"drill"`
	File     string         `json:"file"`
	Fleet    string         `json:"fleet"`
	Model    string         `json:"model"`
	Lost     string         `json:"lost_region"`
	Router   string         `json:"router"`
	Started  time.Time      `json:"started"`
	Finished time.Time      `json:"finished"`
	Seconds  float64        `json:"seconds"`
	OK       bool           `json:"ok"`
	Verdict  string         `json:"verdict"` // PASS, FAIL or INTERRUPTED
	Summary  string         `json:"summary"`
	SLA      SLAResult      `json:"sla"`
	Steps    []StepResult   `json:"steps"`
	Faults   []FaultResult  `json:"faults"`
	Expect   []ExpectResult `json:"expectations"`
	Verify   []VerifyRun    `json:"verify"`
	Repairs  []Repair       `json:"repairs"`
	Boots    []BootSummary  `json:"boots"`
	Plan     *failover.Plan `json:"plan,omitempty"`
	Runs     []string       `json:"journal_runs"`
	// StopChecks are the fleet's stop conditions as evaluated before each ramp and fail-back
	// write (the failover executor's), in order.
	StopChecks []failover.StopResult `json:"stop_conditions,omitempty"`
	Weights    []WeightPoint         `json:"weights"`
	Requests   []Request             `json:"requests"`
	Classes    []ClassTraffic        `json:"traffic"`
	Teardown   Teardown              `json:"teardown"`
	Evidence   Evidence              `json:"evidence"`
}

// SLAResult compares the recovery time computed from the journal with the RTO.
type SLAResult struct {
	RTOSeconds      float64    `json:"rto_s"`
	RecoverySeconds *float64   `json:"recovery_s"`          // null: never recovered (or no evacuation ran)
	Decision        *time.Time `json:"decision,omitempty"`  // the evacuation's start record
	Recovered       *time.Time `json:"recovered,omitempty"` // the first result with every class on warm receivers
	Met             bool       `json:"met"`
	MissedBySeconds float64    `json:"missed_by_s"`
	// Blocked names, when recovery was not reached, the class, region and weight that kept it
	// from being reached at the last journal result.
	Blocked string `json:"blocked,omitempty"`
	Detail  string `json:"detail"`
}

// StepResult is one step, timed.
type StepResult struct {
	Name    string    `json:"name"`
	Status  string    `json:"status"`
	Started time.Time `json:"started"`
	Offset  float64   `json:"offset_s"` // since the drill started
	Seconds float64   `json:"seconds"`
	Detail  string    `json:"detail"`
}

// FaultResult is one injected fault and whether the drill detected it.
type FaultResult struct {
	Fault
	Injected bool `json:"injected"`
	// At is when it was injected, in seconds since the drill started (absent: never injected).
	At       *float64 `json:"injected_at_s,omitempty"`
	Detected bool     `json:"detected"`
	Evidence string   `json:"evidence"`
}

// ExpectResult is one expected outcome.
type ExpectResult struct {
	Expectation
	Met      bool   `json:"met"`
	Evidence string `json:"evidence"`
}

// VerifyRun is one verification pass over the fleet's replicas.
type VerifyRun struct {
	Phase    string           `json:"phase"` // before, after
	Replicas []ReplicaVerdict `json:"replicas"`
}

// ReplicaVerdict is one region's replica.
type ReplicaVerdict struct {
	Region   string         `json:"region"`
	URL      string         `json:"url"`
	Mode     string         `json:"mode"`
	Status   string         `json:"status"`
	Counts   map[string]int `json:"counts"`
	Problems []string       `json:"problems"` // "path: STATUS"
	Error    string         `json:"error,omitempty"`
}

// Repair is one replica repaired from another after the first verification.
type Repair struct {
	Region string `json:"region"`
	From   string `json:"from"`
	Status string `json:"status"`
	Copied int    `json:"copied"`
	Detail string `json:"detail,omitempty"`
}

// Boot roles: a candidate (a region the drill recovers on) or the lost region's stand-in.
const (
	RoleCandidate = "candidate"
	RoleStandIn   = "stand-in"
)

// BootSummary is one candidate's boot.
type BootSummary struct {
	Region  string   `json:"region"`
	Role    string   `json:"role,omitempty"` // candidate, or stand-in (the lost region's own serving)
	From    string   `json:"from,omitempty"` // a stand-in's: the region whose replica it was restored from
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason"`
	OK      bool     `json:"ok"`
	URL     string   `json:"url,omitempty"`
	WarmS   *float64 `json:"warm_s"`
	TTFTS   *float64 `json:"ttft_s"`
	TotalS  *float64 `json:"total_s"`
}

// WeightPoint is one class's weight on one region at one moment (from the journal).
type WeightPoint struct {
	Offset float64 `json:"t_s"`
	Class  string  `json:"class"`
	Region string  `json:"region"`
	Weight int     `json:"weight"`
	State  string  `json:"state"`
}

// Request is one synthetic request.
type Request struct {
	Offset   float64 `json:"t_s"`
	Phase    string  `json:"phase"` // ramp (sampled during evacuate … failback) or traffic (the traffic step)
	Class    string  `json:"class"`
	Region   string  `json:"region"`
	OK       bool    `json:"ok"`
	TTFTMS   float64 `json:"ttft_ms"`
	Eligible bool    `json:"eligible"`
	// Via is the router frontend the request went through (router.frontends); empty: straight to
	// the receiver the weights picked (a router with no data plane, such as the file driver).
	Via   string `json:"via,omitempty"`
	Error string `json:"error,omitempty"`
}

// ClassTraffic sums one class's requests.
type ClassTraffic struct {
	Class     string         `json:"class"`
	Eligible  []string       `json:"eligible"`
	Requests  int            `json:"requests"`
	Failed    int            `json:"failed"`
	Outside   int            `json:"outside_eligible"`
	ByRegion  map[string]int `json:"by_region"`
	TTFTP50MS float64        `json:"ttft_p50_ms"`
	TTFTMaxMS float64        `json:"ttft_max_ms"`
}

// Teardown says what the drill cleaned up and whether anything was left.
type Teardown struct {
	Stopped      []string `json:"stopped"`       // regions whose candidate was stopped
	FaultsUndone []string `json:"faults_undone"` // file faults put back
	TempRemoved  bool     `json:"temp_removed"`
	LockReleased bool     `json:"lock_released"`
	// RouterAtBaseline: the router was found at the weights the drill started from, or was
	// returned there by a ramped abort.
	RouterAtBaseline bool     `json:"router_at_baseline"`
	Left             []string `json:"left"` // anything still there: a process, the lock, the temp dir
}

// ErrMissed is matched by the error of a drill that missed its SLA or an expectation (a problem found).
var ErrMissed = errors.New("drill failed")

// Err is nil when the drill passed; otherwise it says what failed and, for the SLA, by how much.
func (r *Report) Err() error {
	if r.OK {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrMissed, r.Summary)
}

func secondsPtr(d time.Duration) *float64 {
	v := d.Seconds()
	return &v
}
