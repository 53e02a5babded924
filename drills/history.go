package drills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"lifeboat/providers"
)

// historyDir holds one object per drill run in the fleet's state store (append-only: each is
// created once, conditionally, and never rewritten).
const historyDir = "drills/history"

// maxHistoryEntry bounds one history object; maxHistory the entries read.
const (
	maxHistoryEntry = 64 << 10
	maxHistory      = 1000
)

// HistoryEntry is one drill run as the history keeps it. JSON field names are stable.
type HistoryEntry struct {
	Drill           string    `json:"drill"`
	Started         time.Time `json:"started"`
	Seconds         float64   `json:"seconds"`
	OK              bool      `json:"ok"`
	Verdict         string    `json:"verdict"`
	Lost            string    `json:"lost_region"`
	RecoverySeconds *float64  `json:"recovery_s"`
	RTOSeconds      float64   `json:"rto_s"`
	MissedBySeconds float64   `json:"missed_by_s"`
	Faults          int       `json:"faults"`
	Detected        int       `json:"detected"`
	StepsFailed     []string  `json:"steps_failed"`
	ExpectFailed    []string  `json:"expectations_failed"`
	Summary         string    `json:"summary,omitempty"`
	// Evidence is the report's evidence block; Reports the SHA-256 of each report file written
	// (none without --report) and ReportDir where they were written. drill history --verify
	// checks a report directory against them.
	// Skipped says why a drill run did not start: a blocked window or date of its calendar, or
	// a blocking stop condition failing (Verdict SKIPPED; nothing ran, nothing changed).
	Skipped   string       `json:"skipped,omitempty"`
	Evidence  *Evidence    `json:"evidence,omitempty"`
	Reports   []ReportFile `json:"reports,omitempty"`
	ReportDir string       `json:"report_dir,omitempty"`
}

// maxHistorySummary bounds the summary kept in a history record, so that a record stays well
// under maxHistoryEntry (a larger one would not be read back).
const maxHistorySummary = 4 << 10

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Entry sums a report up for the history.
func Entry(rep *Report) HistoryEntry {
	e := HistoryEntry{Drill: rep.Drill, Started: rep.Started, Seconds: rep.Seconds, OK: rep.OK, Verdict: rep.Verdict, Lost: rep.Lost,
		RecoverySeconds: rep.SLA.RecoverySeconds, RTOSeconds: rep.SLA.RTOSeconds, MissedBySeconds: rep.SLA.MissedBySeconds,
		Faults: len(rep.Faults), StepsFailed: []string{}, ExpectFailed: []string{}, Summary: cutRunes(rep.Summary, maxHistorySummary)}
	ev := rep.Evidence
	e.Evidence = &ev
	for _, f := range rep.Faults {
		if f.Detected {
			e.Detected++
		}
	}
	for _, s := range rep.Steps {
		if s.Status == Failed || s.Status == Inconclusive {
			e.StepsFailed = append(e.StepsFailed, s.Name)
		}
	}
	for _, x := range rep.Expect {
		if !x.Met {
			e.ExpectFailed = append(e.ExpectFailed, x.Description)
		}
	}
	return e
}

// AppendHistory records a run in the state store, with the digests of the report files written
// into dir (nil and "": no report was written).
func AppendHistory(ctx context.Context, s providers.Store, rep *Report, dir string, reports ReportDigests) error {
	e := Entry(rep)
	e.Reports, e.ReportDir = reports.files(), dir
	return appendEntry(ctx, s, e)
}

// appendEntry writes e as a new history object (never over another).
func appendEntry(ctx context.Context, s providers.Store, e HistoryEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	name := safeName(e.Drill)
	for i := 0; i < 5; i++ {
		key := fmt.Sprintf("%s/%s-%s.json", historyDir, e.Started.UTC().Format("20060102T150405.000Z"), name)
		if i > 0 {
			key = fmt.Sprintf("%s/%s-%s-%d.json", historyDir, e.Started.UTC().Format("20060102T150405.000Z"), name, i)
		}
		_, err = s.Write(ctx, key, bytes.NewReader(b), providers.WriteOptions{Size: int64(len(b)), IfNotExists: true})
		if !errors.Is(err, providers.ErrPreconditionFailed) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("drill history in %s: %w", s, err)
	}
	return nil
}

// VerdictSkipped is the verdict of a drill run its calendar skipped.
const VerdictSkipped = "SKIPPED"

// AppendSkip records in the history that a drill run did not start, and why.
func AppendSkip(ctx context.Context, s providers.Store, d *Drill, started time.Time, why string) error {
	e := HistoryEntry{Drill: d.Name, Started: started.UTC(), Verdict: VerdictSkipped, Lost: d.Lose, Skipped: cutRunes(why, maxHistorySummary),
		StepsFailed: []string{}, ExpectFailed: []string{}, Summary: cutRunes("skipped: "+why, maxHistorySummary)}
	return appendEntry(ctx, s, e)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// History reads the recorded runs, oldest first (at most the newest 1000).
func History(ctx context.Context, s providers.Store) ([]HistoryEntry, error) {
	var keys []string
	err := s.List(ctx, historyDir, func(o providers.Object) error {
		if strings.HasSuffix(o.Key, ".json") && o.Size <= maxHistoryEntry {
			keys = append(keys, o.Key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, providers.ErrNotFound) {
		return nil, fmt.Errorf("list %s in %s: %w", historyDir, s, err)
	}
	sort.Strings(keys)
	if len(keys) > maxHistory {
		keys = keys[len(keys)-maxHistory:]
	}
	out := []HistoryEntry{}
	for _, k := range keys {
		var e HistoryEntry
		err := providers.ReadJSON(ctx, s, k, providers.ReadOptions{}, maxHistoryEntry, &e)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", k, err)
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, nil
}
