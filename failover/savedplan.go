package failover

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"lifeboat/fleet"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// SavedPlanVersion is the version of the saved-plan format `failover plan --out` writes.
const SavedPlanVersion = 1

// maxSavedPlanBytes bounds a saved plan file.
const maxSavedPlanBytes = 16 << 20

// SavedPlan is a plan written by `failover plan --out FILE` for `failover run --plan FILE`
// (Terraform's plan and apply): the plan, and the fleet it was computed from. The router state
// and the region signals it was computed from are in the plan (Start, Regions).
type SavedPlan struct {
	Version int `json:"version"`
	// Fleet is the digest of the fleet the plan was computed from (FleetDigest): a plan is only
	// applied to that fleet.
	Fleet     string    `json:"fleet"`
	FleetFile string    `json:"fleet_file"`
	Created   time.Time `json:"created"`
	// Digest is the SHA-256 of the plan as written ("sha256:<hex>" of its JSON): a file whose
	// plan was edited or cut short no longer matches it. Empty in files written before it
	// existed.
	Digest string `json:"digest,omitempty"`
	Plan   *Plan  `json:"plan"`
}

// planDigest is the digest of a plan's JSON encoding (SavedPlan.Digest).
func planDigest(p *Plan) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// WriteSavedPlan writes the plan for fleet f to name (atomically).
func WriteSavedPlan(name string, f *fleet.Fleet, p *Plan, now time.Time) error {
	d, err := planDigest(p)
	if err != nil {
		return err
	}
	sp := SavedPlan{Version: SavedPlanVersion, Fleet: FleetDigest(f), FleetFile: f.File, Created: now.UTC(), Digest: d, Plan: p}
	return providers.WriteFileAtomic(name, 0o644, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sp)
	})
}

// ErrNotSavedPlan marks a file that is not a plan `failover plan --out` wrote, intact: bad
// input (exit 2), named by its file and field.
var ErrNotSavedPlan = errors.New("not a saved plan")

// notSavedPlan is an ErrNotSavedPlan whose message names the file and the field only.
type notSavedPlan struct{ msg string }

func (e notSavedPlan) Error() string        { return e.msg }
func (e notSavedPlan) Is(target error) bool { return target == ErrNotSavedPlan }

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// LoadSavedPlan reads a saved plan file and checks it is one, intact: its version, its
// digests' form, and its plan against the digest it was written with. It does not check whose
// fleet it belongs to (ReadSavedPlan does).
func LoadSavedPlan(name string) (*SavedPlan, error) {
	data, err := localfile.ReadFile(name, maxSavedPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("saved plan: %w", err)
	}
	bad := func(format string, args ...any) error {
		return notSavedPlan{fmt.Sprintf("saved plan %s: %s", name, fmt.Sprintf(format, args...))}
	}
	var sp SavedPlan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sp); err != nil {
		why := err.Error()
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			why = "the file ends before the plan does (truncated?)"
		}
		return nil, bad("not a plan `lifeboat failover plan --out` wrote: %s", why)
	}
	switch {
	case sp.Version != SavedPlanVersion:
		return nil, bad("version: %d, want %d", sp.Version, SavedPlanVersion)
	case sp.Plan == nil:
		return nil, bad("plan: missing")
	case sp.Plan.Event.Kind == Abort:
		return nil, bad("plan.event: an abort is never saved (run `lifeboat failover abort`)")
	case !digestRE.MatchString(sp.Fleet):
		return nil, bad("fleet: %q is not a fleet digest (sha256:<64 hex digits>): the file was edited", providers.Sanitize(sp.Fleet, 100))
	case sp.Digest != "" && !digestRE.MatchString(sp.Digest):
		return nil, bad("digest: %q is not sha256:<64 hex digits>: the file was edited", providers.Sanitize(sp.Digest, 100))
	}
	if sp.Digest != "" {
		d, err := planDigest(sp.Plan)
		if err != nil {
			return nil, bad("plan: %v", err)
		}
		if d != sp.Digest {
			return nil, bad("digest: the plan does not match the digest it was saved with (%.19s…, now %.19s…): the file was edited after `failover plan --out` wrote it; plan again", sp.Digest, d)
		}
	}
	return &sp, nil
}

// ReadSavedPlan reads a saved plan and checks it belongs to fleet f: a plan computed from
// another fleet (or another version of this one: regions, classes, router) is refused.
func ReadSavedPlan(name string, f *fleet.Fleet) (*SavedPlan, error) {
	sp, err := LoadSavedPlan(name)
	if err != nil {
		return nil, err
	}
	if d := FleetDigest(f); sp.Fleet != d {
		return nil, fmt.Errorf("%w: saved plan %s was computed from fleet %s (digest %.12s), not from %s (digest %.12s): its regions, classes or router differ; nothing changed. Plan again: lifeboat failover plan --out %s",
			ErrRefused, name, providers.Sanitize(sp.FleetFile, 200), sp.Fleet, f.File, d, name)
	}
	return sp, nil
}

// savedPlanChanges says what changed, in a way that matters, between the saved plan and the
// plan made now from the live router and signals: the router state it starts from, or the
// signals, when they change the steps or the verdict. Nothing when the saved plan still holds.
func (e *Executor) savedPlanChanges(saved, now *Plan) []string {
	var out []string
	if !slices.Equal(saved.Selected, now.Selected) || saved.SkipBlocked != now.SkipBlocked {
		// run --plan takes the selection from the file: only a file edited by hand gets here
		return []string{fmt.Sprintf("the class selection differs (saved: %s, now: %s)", selectionText(saved), selectionText(now))}
	}
	if !slices.Equal(saved.Classes, now.Classes) || !slices.Equal(saved.BlockedNames(), now.BlockedNames()) {
		out = append(out, fmt.Sprintf("the classes that can move changed: saved %s, now %s", coverText(saved), coverText(now)))
	}
	if d := e.diff(saved.Start, now.Start); len(d) > 0 {
		out = append(out, "the router changed since the plan was made: "+strings.Join(d, "; "))
	}
	sameSteps := len(saved.Steps) == len(now.Steps)
	for k := 0; sameSteps && k < len(saved.Steps); k++ {
		a, b := saved.Steps[k], now.Steps[k]
		sameSteps = reflect.DeepEqual(a.Weights, b.Weights) && len(e.diff(saved.After(k), now.After(k))) == 0 && a.WaitForDrain == b.WaitForDrain
	}
	sameVerdict := saved.Complete == now.Complete && saved.Refused == now.Refused && saved.Rule == now.Rule
	if sameSteps && sameVerdict {
		return out // the signals moved, the plan did not: it still holds
	}
	if len(out) > 0 {
		return out // the router's change explains the new plan
	}
	why := "the signals changed the plan"
	if sig := regionChanges(saved.Regions, now.Regions); len(sig) > 0 {
		why = "the signals changed (" + strings.Join(sig, "; ") + ") and with them the plan"
	}
	if !sameSteps {
		why += fmt.Sprintf(": %d step(s) now, %d saved", len(now.Steps), len(saved.Steps))
	}
	if !sameVerdict {
		why += ": now " + now.Verdict()
	}
	return append(out, why)
}

// regionChanges lists what changed per region between two views: health, warm, whether it
// receives, queue wait (beyond rounding), how its inflow is known.
func regionChanges(before, after []RegionView) []string {
	was := map[string]RegionView{}
	for _, r := range before {
		was[r.Region] = r
	}
	var out []string
	for _, r := range after {
		b, ok := was[r.Region]
		if !ok {
			out = append(out, r.Region+": not in the saved plan")
			continue
		}
		var parts []string
		flag := func(name string, x, y bool) {
			if x != y {
				parts = append(parts, fmt.Sprintf("%s %v → %v", name, x, y))
			}
		}
		flag("healthy", b.Healthy, r.Healthy)
		flag("warm", b.Warm, r.Warm)
		flag("receiver", b.Receiver, r.Receiver)
		if q0, q1 := b.QueueWaitMS, r.QueueWaitMS; (q0 == nil) != (q1 == nil) || q0 != nil && math.Abs(*q0-*q1) >= 1 {
			parts = append(parts, fmt.Sprintf("queue wait %s → %s", msText(q0), msText(q1)))
		}
		if b.Inflow != r.Inflow {
			parts = append(parts, fmt.Sprintf("inflow %s → %s", b.Inflow, r.Inflow))
		}
		if len(parts) > 0 {
			out = append(out, r.Region+": "+strings.Join(parts, ", "))
		}
	}
	return out
}

// selectionText says what a plan was asked to cover: --class and --skip-blocked as given.
func selectionText(p *Plan) string {
	s := "every class"
	if len(p.Selected) > 0 {
		s = "--class " + strings.Join(p.Selected, ",")
	}
	if p.SkipBlocked {
		s += " --skip-blocked"
	}
	return s
}

// coverText says which classes a plan moves and which it leaves untouched.
func coverText(p *Plan) string {
	s := "every class"
	if len(p.Classes) > 0 {
		s = strings.Join(p.Classes, ", ")
	}
	if len(p.Blocked) > 0 {
		s += " (blocked: " + strings.Join(p.BlockedNames(), ", ") + ")"
	}
	return s
}

func msText(q *float64) string {
	if q == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.0f ms", *q)
}
