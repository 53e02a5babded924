package failover

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"lifeboat/providers"
)

// Journal record kinds.
const (
	RecStart     = "start"    // a run begins: plan, baseline, expiry, who and why
	RecRefused   = "refused"  // a plan was refused: nothing changed
	RecIntent    = "intent"   // before a router change: the state about to be applied
	RecResult    = "result"   // after it: the state read back
	RecHold      = "hold"     // a check failed between steps
	RecDrainWait = "drain"    // the wait before a withdraw ended
	RecReassert  = "reassert" // resume re-applied a completed step's state (routers forget)
	// RecReassertIntent is written before a re-assert changes the router: the state about to be
	// applied (Target) over the router as it was (Before).
	RecReassertIntent = "reassert_intent"
	RecRollback       = "rollback" // --rollback-on-fail: the plan back to the baseline
	RecDone           = "done"     // the run reached the end of its plan
	RecFailed         = "failed"   // the run stopped on an error
	RecUnlock         = "unlock"   // break-glass unlock
	RecOverride       = "override" // a rule bypassed with --override
	RecResume         = "resume"   // a new process took over the run
	RecTakeover       = "takeover" // the lock of a dead or silent holder was taken over
	runsDir           = "failover/runs"
	maxRecordLen      = 8 << 20
)

// Record is one journal entry. Records are append-only objects, each created with a
// conditional create under failover/runs/RUN/SEQ.json, and carry the fencing token.
type Record struct {
	Seq        int          `json:"seq"`
	Run        string       `json:"run"`
	Kind       string       `json:"kind"`
	Time       time.Time    `json:"time"`
	Holder     string       `json:"holder"`
	Token      int64        `json:"token"`
	Step       *int         `json:"step,omitempty"`
	Event      *Event       `json:"event,omitempty"`
	Reason     string       `json:"reason,omitempty"`
	Detail     string       `json:"detail,omitempty"`
	Plan       *Plan        `json:"plan,omitempty"`
	Baseline   Weights      `json:"baseline,omitempty"`
	Expires    *time.Time   `json:"expires,omitempty"`
	Target     *RouterState `json:"target,omitempty"` // intent: what is applied
	After      *RouterState `json:"after,omitempty"`  // result: what was read back
	Before     *RouterState `json:"before,omitempty"`
	Overrides  []Rule       `json:"overrides,omitempty"`
	Violations []Violation  `json:"violations,omitempty"`
	Closed     bool         `json:"closed,omitempty"` // done: the failover is over (back at the baseline)
	// Fleet is the digest of the fleet that wrote the record (FleetDigest): a run is only ever
	// resumed, aborted, re-asserted or reported by the fleet that started it.
	Fleet string `json:"fleet,omitempty"`
	// Out are the regions an open failover took out of service (evacuated and not yet
	// restored), carried by each start record: no later plan moves traffic into them.
	Out []string `json:"out,omitempty"`
}

// Journal appends records of one run.
type Journal struct {
	Store  providers.Store
	Run    string
	Holder string
	Token  int64
	Fleet  string // FleetDigest of the fleet writing
	next   int
	Now    func() time.Time
	// OnRecord is called after each record is durably written (tests crash the process here).
	OnRecord func(Record)
	// fence, when set, is the lock holder's own lease check: no record is written once it fails.
	fence func() error
}

func recordKey(run string, seq int) string { return fmt.Sprintf("%s/%s/%06d.json", runsDir, run, seq) }

// Append writes rec as the run's next record.
func (j *Journal) Append(ctx context.Context, rec Record) (Record, error) {
	now := time.Now().UTC()
	if j.Now != nil {
		now = j.Now().UTC()
	}
	if j.fence != nil {
		if err := j.fence(); err != nil {
			return rec, err
		}
	}
	rec.Seq, rec.Run, rec.Holder, rec.Token, rec.Time, rec.Fleet = j.next, j.Run, j.Holder, j.Token, now, j.Fleet
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return rec, err
	}
	key := recordKey(j.Run, rec.Seq)
	_, err = j.Store.Write(ctx, key, bytes.NewReader(b), providers.WriteOptions{Size: int64(len(b)), IfNotExists: true, ContentType: "application/json"})
	if err != nil && j.landed(ctx, key, b) {
		err = nil // our write landed and only its answer was lost (a retry then saw the object)
	}
	if errors.Is(err, providers.ErrPreconditionFailed) {
		return rec, fmt.Errorf("%w: journal record %d of run %s was written by someone else", ErrLockLost, rec.Seq, j.Run)
	}
	if err != nil {
		return rec, fmt.Errorf("journal %s: %w", recordKey(j.Run, rec.Seq), err)
	}
	j.next++
	if j.OnRecord != nil {
		j.OnRecord(rec)
	}
	return rec, nil
}

// landed says whether key holds exactly the bytes we wrote (a record's time, holder and token
// make them ours alone).
func (j *Journal) landed(ctx context.Context, key string, want []byte) bool {
	var got []byte
	err := j.Store.Read(ctx, key, providers.ReadOptions{}, func(r io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(r, int64(len(want))+1))
		got = b
		return err
	})
	return err == nil && bytes.Equal(got, want)
}

// FleetDigest identifies a fleet in the journal: a SHA-256 over its model, its regions, its
// tenant classes with their eligible regions, and its router (driver, address, backends). Two
// fleets that share a state store never act on or report each other's runs.
func FleetDigest(f *Fleet) string {
	h := sha256.New()
	field := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s,", len(p), p)
		}
		h.Write([]byte{'\n'})
	}
	field("model", f.Model.Name)
	field(append([]string{"regions"}, slices.Sorted(maps.Keys(f.Regions))...)...)
	for _, c := range slices.Sorted(maps.Keys(f.Tenants)) {
		field(append([]string{"class", c}, f.Tenants[c]...)...)
	}
	field("router", f.Router.Driver, f.Router.Socket, f.Router.URL, f.Router.Path)
	for _, c := range slices.Sorted(maps.Keys(f.Router.Backends)) {
		field("backend", c, f.Router.Backends[c])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ofFleet says whether a run's records were written by the fleet with this digest. A run
// without a digest (journaled before digests existed) is taken as anyone's: every step it
// would apply is re-validated against the fleet anyway.
func ofFleet(recs []Record, digest string) bool {
	return len(recs) == 0 || recs[0].Fleet == "" || recs[0].Fleet == digest
}

// NewRunID names a run by the fencing token its lock was taken with, then the start time (for
// people): runs are ordered by the token, which only the lock's compare-and-swap makes grow, never
// by one machine's clock.
func NewRunID(token int64, now time.Time) string {
	return fmt.Sprintf("%06d-%s-%s", token, now.UTC().Format("20060102T150405Z"), newID()[:6])
}

// runOrder is a run id's place in time: the fencing token it starts with; -1 for the ids older
// releases wrote (a timestamp first), which come before every token-named run.
func runOrder(run string) int64 {
	digits, rest, ok := strings.Cut(run, "-")
	if !ok || digits == "" || len(digits) > 19 || strings.Trim(digits, "0123456789") != "" || !strings.Contains(rest, "T") {
		return -1
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// Runs lists the run ids in the store, oldest first (by fencing token; see NewRunID).
func Runs(ctx context.Context, s providers.Store) ([]string, error) {
	set := map[string]bool{}
	err := s.List(ctx, runsDir, func(o providers.Object) error {
		rest := strings.TrimPrefix(o.Key, runsDir+"/")
		if i := strings.IndexByte(rest, '/'); i > 0 {
			set[rest[:i]] = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, providers.ErrNotFound) {
		return nil, fmt.Errorf("list journal: %w", err)
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := runOrder(out[i]), runOrder(out[j]); a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out, nil
}

// ReadRun returns a run's records in order.
func ReadRun(ctx context.Context, s providers.Store, run string) ([]Record, error) {
	var keys []string
	err := s.List(ctx, runsDir+"/"+run, func(o providers.Object) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list journal of %s: %w", run, err)
	}
	sort.Strings(keys)
	out := make([]Record, 0, len(keys))
	for _, k := range keys {
		var data []byte
		err := s.Read(ctx, k, providers.ReadOptions{}, func(r io.Reader) error {
			b, err := io.ReadAll(io.LimitReader(r, maxRecordLen))
			data = b
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read journal %s: %w", k, err)
		}
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("journal %s: %v", k, err)
		}
		if rec.Seq != len(out) {
			return nil, fmt.Errorf("journal %s: record %d where %d was expected (a gap or a foreign object)", k, rec.Seq, len(out))
		}
		out = append(out, rec)
	}
	return out, nil
}

// LatestRun returns the newest run and its records; "" when there is none.
func LatestRun(ctx context.Context, s providers.Store) (string, []Record, error) {
	runs, err := Runs(ctx, s)
	if err != nil || len(runs) == 0 {
		return "", nil, err
	}
	run := runs[len(runs)-1]
	recs, err := ReadRun(ctx, s, run)
	return run, recs, err
}
