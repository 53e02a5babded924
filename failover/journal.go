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

	"lifeboat/fleet"
	"lifeboat/fleet/router"
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
	// RecReplan: resume planned the rest of the run again from the router as it read under the
	// lock (a restart or reload during a step left the step in flight out of step_percent's reach).
	RecReplan       = "replan"
	RecDone         = "done"          // the run reached the end of its plan
	RecFailed       = "failed"        // the run stopped on an error
	RecUnlock       = "unlock"        // break-glass unlock
	RecOverride     = "override"      // a rule bypassed with --override
	RecResume       = "resume"        // a new process took over the run
	RecTakeover     = "takeover"      // the lock of a dead or silent holder was taken over
	RecAbortRequest = "abort_request" // another operator asked the run to abort (who, why)
	runsDir         = "failover/runs"
	maxRecordLen    = 1 << 20 // one record, read whole
)

// Record is one journal entry. Records are append-only objects, each created with a
// conditional create under failover/runs/RUN/SEQ.json, and carry the fencing token.
type Record struct {
	Seq        int                 `json:"seq"`
	Run        string              `json:"run"`
	Kind       string              `json:"kind"`
	Time       time.Time           `json:"time"`
	Holder     string              `json:"holder"`
	Token      int64               `json:"token"`
	Step       *int                `json:"step,omitempty"`
	Event      *Event              `json:"event,omitempty"`
	Reason     string              `json:"reason,omitempty"`
	Detail     string              `json:"detail,omitempty"`
	Plan       *Plan               `json:"plan,omitempty"`
	Baseline   router.Weights      `json:"baseline,omitempty"`
	Expires    *time.Time          `json:"expires,omitempty"`
	Target     *router.RouterState `json:"target,omitempty"` // intent: what is applied
	After      *router.RouterState `json:"after,omitempty"`  // result: what was read back
	Before     *router.RouterState `json:"before,omitempty"`
	Overrides  []Rule              `json:"overrides,omitempty"`
	Violations []Violation         `json:"violations,omitempty"`
	Closed     bool                `json:"closed,omitempty"` // done: the failover is over (back at the baseline)
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
	// OnRecord is called after each record is durably written (Executor.OnRecord: notifications,
	// and tests that watch or crash a run between records).
	OnRecord func(Record)
	// fence, when set, is the lock holder's own lease check: no record is written once it fails.
	fence func() error
	// current, when set, checks in the store that the journal's token is still the lock's
	// (id, token, not released): nothing is written under a token that is no longer current.
	current func(context.Context) error
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
	// The lease alone is this process's view: another may have taken the lock over (a break, a
	// take-over) while it still runs, and the record would carry a token no longer current. The
	// record itself is a conditional create, so it never replaces another's either.
	if j.current != nil {
		if err := j.current(ctx); err != nil {
			return rec, fmt.Errorf("journal record %d of run %s not written: %w", j.next, j.Run, err)
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
func FleetDigest(f *fleet.Fleet) string {
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
	rtr := []string{"router", f.Router.Driver}
	if f.Router.Config != nil {
		rtr = append(rtr, f.Router.Config.Identity()...)
	} else {
		rtr = append(rtr, "", "", "")
	}
	field(rtr...)
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

// Bounds of what is read of a journal: one record, and one run's records together (count and
// bytes). A real run stays far below them (a 20-step plan over 20 regions and 10 classes is a few
// hundred KB); past them the run is reported, never read without end.
const (
	maxRunRecords = 10_000
	maxRunBytes   = 16 << 20
)

// ErrBadJournal is matched by a *BadRecordError: an object in the journal that is not a valid
// record of its run. Resume refuses such a run (a refusal); status reports it and goes on.
var ErrBadJournal = errors.New("bad journal record")

// BadRecordError names the journal object that cannot be trusted and why.
type BadRecordError struct {
	Key string // the object, relative to the state store
	Err error
}

func (e *BadRecordError) Error() string {
	return fmt.Sprintf("journal object %s: %v", e.Key, e.Err)
}
func (e *BadRecordError) Unwrap() error        { return e.Err }
func (e *BadRecordError) Is(target error) bool { return target == ErrBadJournal }

// RunJournal is a run's journal as read: the valid records, in order, up to the first object
// that is not the next valid record; that object (and any foreign object in the run's
// directory) is in Bad.
type RunJournal struct {
	Run     string
	Records []Record
	// Next is the sequence number a new record of this run takes: past every object in the
	// run's directory, bad ones included (a conditional create must not collide with them).
	Next int
	Bad  []*BadRecordError
}

// Err is the first bad object, or nil.
func (j RunJournal) Err() error {
	if len(j.Bad) == 0 {
		return nil
	}
	return j.Bad[0]
}

// ReadRun returns a run's records in order; a bad record (too large, not JSON, not the next
// record of this run, inconsistent with the run's plan) is a *BadRecordError naming its object.
func ReadRun(ctx context.Context, s providers.Store, run string) ([]Record, error) {
	j, err := ScanRun(ctx, s, run)
	if err != nil {
		return nil, err
	}
	return j.Records, j.Err()
}

// ScanRun reads a run's journal without stopping at a bad object: every record before it is
// returned and the object is named in Bad. The error is only the store's (listing, reading).
// Each record is read whole only up to maxRecordLen, and the run only up to maxRunRecords
// objects and maxRunBytes: memory stays bounded whatever the store holds.
func ScanRun(ctx context.Context, s providers.Store, run string) (RunJournal, error) {
	j := RunJournal{Run: run}
	dir := runsDir + "/" + run
	type entry struct {
		key  string
		seq  int
		size int64
	}
	var objs []entry
	errTooMany := errors.New("too many objects")
	err := s.List(ctx, dir, func(o providers.Object) error {
		seq, ok := recordSeq(dir, o.Key)
		if !ok {
			j.Bad = append(j.Bad, &BadRecordError{Key: o.Key, Err: errors.New("not a journal record's name (RUN/NNNNNN.json)")})
			return nil
		}
		if len(objs) >= maxRunRecords {
			return errTooMany
		}
		objs = append(objs, entry{o.Key, seq, o.Size})
		j.Next = max(j.Next, seq+1)
		return nil
	})
	if errors.Is(err, errTooMany) {
		j.Bad = append(j.Bad, &BadRecordError{Key: dir, Err: fmt.Errorf("the run has more than %d records: not read", maxRunRecords)})
		return j, nil
	}
	if err != nil {
		return j, fmt.Errorf("list journal of %s: %w", run, err)
	}
	slices.SortFunc(objs, func(a, b entry) int { return a.seq - b.seq })
	var total int64
	var plan *Plan
	for _, o := range objs {
		bad := func(err error) { j.Bad = append([]*BadRecordError{{Key: o.key, Err: err}}, j.Bad...) }
		if o.size > maxRecordLen {
			bad(fmt.Errorf("%w: %d bytes, a record is at most %d", providers.ErrObjectTooLarge, o.size, maxRecordLen))
			return j, nil
		}
		if total+o.size > maxRunBytes {
			bad(fmt.Errorf("the run's records pass %d bytes here: not read further", maxRunBytes))
			return j, nil
		}
		data, err := providers.ReadSmall(ctx, s, o.key, providers.ReadOptions{}, maxRecordLen)
		if errors.Is(err, providers.ErrObjectTooLarge) {
			bad(err)
			return j, nil
		}
		if err != nil {
			return j, fmt.Errorf("read journal %s: %w", o.key, err)
		}
		total += int64(len(data))
		var rec Record
		if err := json.Unmarshal(data, &rec); err != nil {
			bad(fmt.Errorf("not a journal record: %v", err))
			return j, nil
		}
		if err := checkRecord(rec, run, len(j.Records), o.seq, plan); err != nil {
			bad(err)
			return j, nil
		}
		switch rec.Kind {
		case RecStart, RecRollback, RecRefused, RecReplan:
			if rec.Plan != nil {
				plan = rec.Plan
			}
		}
		j.Records = append(j.Records, rec)
	}
	return j, nil
}

// recordSeq parses the sequence number of a record key dir/NNNNNN.json.
func recordSeq(dir, key string) (int, bool) {
	name, ok := strings.CutPrefix(key, dir+"/")
	if !ok {
		return 0, false
	}
	num, ok := strings.CutSuffix(name, ".json")
	if !ok || len(num) < 6 || len(num) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, fmt.Sprintf("%06d", n) == num
}

// stepKinds are the record kinds that name a step of the run's plan.
var stepKinds = map[string]bool{RecIntent: true, RecResult: true, RecHold: true, RecDrainWait: true, RecReassert: true}

// checkRecord is the structure every reader of a record relies on: the record is the next of
// this run, has a kind, and a step it names is a step of the plan in force.
func checkRecord(rec Record, run string, want, seq int, plan *Plan) error {
	switch {
	case seq != want:
		return fmt.Errorf("record %d where %d was expected (a gap in the journal)", seq, want)
	case rec.Seq != seq:
		return fmt.Errorf("seq is %d in object %06d", rec.Seq, seq)
	case rec.Run != run:
		return fmt.Errorf("run is %q, the object is in run %s", rec.Run, run)
	}
	switch rec.Kind {
	case RecRollback, RecReplan:
		if rec.Plan == nil {
			return fmt.Errorf("a %s record without a plan", rec.Kind)
		}
	case RecStart:
		if rec.Event == nil {
			return errors.New("a start record without an event")
		}
	case "":
		return errors.New("a record without a kind")
	}
	// Other kinds (a newer release's) carry nothing the readers here rely on.
	for _, p := range []*Plan{rec.Plan} {
		if p == nil {
			continue
		}
		for k, st := range p.Steps {
			if st == nil {
				return fmt.Errorf("plan.steps[%d] is null", k)
			}
		}
	}
	if stepKinds[rec.Kind] {
		switch {
		case rec.Step == nil:
			return fmt.Errorf("a %s record without a step", rec.Kind)
		case plan == nil:
			return fmt.Errorf("a %s record before the run's plan", rec.Kind)
		case *rec.Step < 0 || *rec.Step >= len(plan.Steps):
			return fmt.Errorf("step %d is not a step of the plan (%d steps)", *rec.Step, len(plan.Steps))
		}
	}
	switch {
	case rec.Kind == RecIntent && rec.Target == nil:
		return errors.New("an intent record without a target")
	case (rec.Kind == RecResult || rec.Kind == RecReassert) && rec.After == nil:
		return fmt.Errorf("a %s record without the state read back", rec.Kind)
	}
	return nil
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
