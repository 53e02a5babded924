package drills

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"lifeboat/fleet"
	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// Evidence is what makes a report stand on its own: which release was drilled (the manifest's
// digest), with which inputs (the drill and fleet files' digests, as read), by which build of
// Lifeboat, run by whom, approved by whom, when, and what it measured. The digests of the report
// files themselves cannot be inside them: they are recorded in the state store's history and in
// the report directory's SHA256SUMS (see WriteReports and VerifyReports).
type Evidence struct {
	Version         string     `json:"lifeboat_version"`
	Manifest        FileDigest `json:"manifest"`   // digest: the OCI manifest digest (sha256 of its bytes)
	DrillFile       FileDigest `json:"drill_file"` // as read
	FleetFile       FileDigest `json:"fleet_file"` // as read
	Model           string     `json:"model"`      // the manifest's model name
	Operator        string     `json:"operator"`   // user@host that ran the drill
	Approvals       []Approval `json:"approvals"`
	ApproveAll      bool       `json:"approve_all,omitempty"` // --approve-all was given: every approve: step approved in advance
	Started         time.Time  `json:"started"`
	Finished        time.Time  `json:"finished"`
	RTOSeconds      float64    `json:"rto_s"`
	RecoverySeconds *float64   `json:"recovery_s"` // null: not measured or never recovered
	Verdict         string     `json:"verdict"`
}

// FileDigest names one input file and the SHA-256 of its bytes as the drill read them.
type FileDigest struct {
	Path   string `json:"path"`
	Digest string `json:"digest"` // "sha256:<hex>"; "" when the file could not be read
	Bytes  int64  `json:"bytes"`
	Error  string `json:"error,omitempty"`
}

// Approval is one answer to a step the drill file lists under approve:.
type Approval struct {
	Step     string    `json:"step"`
	Approved bool      `json:"approved"`
	By       string    `json:"by"`  // the operator (user@host) who answered, or whose --approve-all answered
	Via      string    `json:"via"` // "terminal", "--approve-all", or how it was refused
	At       time.Time `json:"at"`
	Detail   string    `json:"detail,omitempty"`
}

// Approval sources (Runner.ApproveVia).
const (
	ApproveViaAll      = "--approve-all"
	ApproveViaTerminal = "terminal"
	ApproveViaNone     = "no approver (no terminal and no --approve-all)"
)

// DigestBytes is the FileDigest of data read from path.
func DigestBytes(path string, data []byte) FileDigest {
	sum := sha256.Sum256(data)
	return FileDigest{Path: path, Digest: "sha256:" + hex.EncodeToString(sum[:]), Bytes: int64(len(data))}
}

// digestFile reads a local input file (bounded, regular files only) and digests it; an error is
// recorded in the digest rather than failing the drill.
func digestFile(path string, limit int64) FileDigest {
	if path == "" {
		return FileDigest{Error: "no file"}
	}
	data, err := localfile.ReadFile(path, limit)
	if err != nil {
		return FileDigest{Path: path, Error: providers.Sanitize(err.Error(), 300)}
	}
	return DigestBytes(path, data)
}

// Operator is user@host for the process running the drill (LOGNAME/USER when the user database
// has no entry).
func Operator() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("LOGNAME")
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if name == "" {
		name = fmt.Sprintf("uid%d", os.Getuid())
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return providers.Sanitize(name+"@"+host, 200)
}

// evidence fills in the report's evidence block at the start of the run.
func (x *run) evidence() Evidence {
	r := x.Runner
	ev := Evidence{Version: r.Version, Operator: r.Operator, Approvals: []Approval{}, Model: r.Fleet.Model.Name, ApproveAll: r.ApproveVia == ApproveViaAll}
	if ev.Version == "" {
		ev.Version = "unknown"
	}
	if ev.Operator == "" {
		ev.Operator = Operator()
	}
	ev.DrillFile = r.Drill.Source
	if ev.DrillFile.Digest == "" {
		ev.DrillFile = digestFile(r.Drill.File, MaxDrillBytes)
	}
	ev.FleetFile = r.FleetDigest
	if ev.FleetFile.Digest == "" && ev.FleetFile.Error == "" {
		ev.FleetFile = digestFile(r.Fleet.File, fleet.MaxBytes)
	}
	ev.Manifest = r.ManifestDigest
	if ev.Manifest.Digest == "" && ev.Manifest.Error == "" {
		ev.Manifest = digestFile(r.Fleet.Model.Manifest, manifest.MaxManifestBytes)
	}
	if r.Manifest != nil && r.Manifest.Name() != "" {
		ev.Model = r.Manifest.Name()
	}
	return ev
}

// recordApproval keeps one answer to an approval step in the evidence.
func (x *run) recordApproval(step string, ok bool, err error) {
	via := x.ApproveVia
	switch {
	case x.Approve == nil:
		via = ApproveViaNone
	case via == "":
		via = "the caller's approver"
	}
	a := Approval{Step: step, Approved: ok && err == nil, By: x.rep.Evidence.Operator, Via: via, At: x.now().UTC()}
	if err != nil {
		a.Detail = providers.Redact(err.Error())
	} else if !ok {
		a.Detail = "declined"
	}
	x.rep.Evidence.Approvals = append(x.rep.Evidence.Approvals, a)
}

// ReportDigests are the SHA-256 digests of the files of a report directory, by file name.
type ReportDigests map[string]string

// ReportFile is one report file's digest as the history records it.
type ReportFile struct {
	Name   string `json:"name"`
	Digest string `json:"digest"` // "sha256:<hex>"
}

func (d ReportDigests) files() []ReportFile {
	var out []ReportFile
	for _, name := range reportFiles {
		if h, ok := d[name]; ok {
			out = append(out, ReportFile{Name: name, Digest: h})
		}
	}
	return out
}

// digests is the entry's report digests by file name.
func (e *HistoryEntry) digests() ReportDigests {
	d := ReportDigests{}
	for _, f := range e.Reports {
		d[f.Name] = f.Digest
	}
	return d
}

// SumsFile lists the report files' SHA-256 digests in the report directory, in the format
// `sha256sum -c` reads.
const SumsFile = "SHA256SUMS"

// reportFiles are the files whose digests are recorded, in order.
var reportFiles = []string{ReportJSON, ReportMD, ReportHTML, ReportJUnit}

// sums renders SHA256SUMS.
func (d ReportDigests) sums() []byte {
	var b bytes.Buffer
	for _, name := range reportFiles {
		if h, ok := d[name]; ok {
			fmt.Fprintf(&b, "%s  %s\n", strings.TrimPrefix(h, "sha256:"), name)
		}
	}
	return b.Bytes()
}

// maxReportFile bounds a report file read back by VerifyReports.
const maxReportFile = 1 << 30

// FileCheck is one report file compared with its recorded digest.
type FileCheck struct {
	Name     string `json:"name"`
	Recorded string `json:"recorded"`
	Actual   string `json:"actual,omitempty"`
	Status   string `json:"status"` // ok, differs, missing, unreadable
	Detail   string `json:"detail,omitempty"`
}

// File check statuses.
const (
	FileOK         = "ok"
	FileDiffers    = "differs"
	FileMissing    = "missing"
	FileUnreadable = "unreadable"
)

// ErrReportTampered is matched by VerifyReports' error when a file differs or is missing.
var ErrReportTampered = errors.New("report does not match the drill history")

// hashFile is the "sha256:<hex>" digest of a local regular file.
func hashFile(path string) (string, error) {
	f, fi, err := localfile.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi.Size() > maxReportFile {
		return "", fmt.Errorf("%s: %w: larger than %d bytes", path, localfile.ErrTooLarge, maxReportFile)
	}
	h := sha256.New()
	n, err := io.Copy(h, bufio.NewReader(io.LimitReader(f, maxReportFile+1)))
	if err != nil {
		return "", err
	}
	if n > maxReportFile {
		return "", fmt.Errorf("%s: %w: larger than %d bytes", path, localfile.ErrTooLarge, maxReportFile)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Verification is a report directory checked against the history.
type Verification struct {
	Dir    string        `json:"dir"`
	Run    *HistoryEntry `json:"run"` // the history record the directory was matched with; nil: none
	Files  []FileCheck   `json:"files"`
	OK     bool          `json:"ok"`
	Reason string        `json:"reason"`
}

// VerifyReports checks the files of a report directory against the digests the history recorded
// for that run. The run is found by the drill name and start time in the directory's
// report.json; if report.json is unreadable or altered so that no run matches, by any other
// file's digest. Only the history is trusted: SHA256SUMS in the directory is not read.
func VerifyReports(dir string, h []HistoryEntry) *Verification {
	v := &Verification{Dir: dir, Files: []FileCheck{}}
	actual := map[string]string{}
	problems := map[string]string{}
	for _, name := range reportFiles {
		d, err := hashFile(filepath.Join(dir, name))
		if err != nil {
			problems[name] = err.Error()
			continue
		}
		actual[name] = d
	}
	var run *HistoryEntry
	if id, err := reportIdentity(filepath.Join(dir, ReportJSON)); err == nil {
		for i := len(h) - 1; i >= 0; i-- {
			if len(h[i].Reports) > 0 && h[i].Drill == id.Drill && h[i].Started.Equal(id.Started) {
				run = &h[i]
				break
			}
		}
	}
	if run == nil {
	search:
		for i := len(h) - 1; i >= 0; i-- {
			rec := h[i].digests()
			for name, d := range actual {
				if rec[name] == d {
					run = &h[i]
					break search
				}
			}
		}
	}
	if run == nil {
		v.Reason = fmt.Sprintf("no run in the drill history recorded the report files of %s (neither report.json's drill and start time nor any file's digest matches)", dir)
		return v
	}
	v.Run = run
	var bad []string
	recorded := run.digests()
	for _, name := range reportFiles {
		rec, ok := recorded[name]
		if !ok {
			continue
		}
		c := FileCheck{Name: name, Recorded: rec, Actual: actual[name], Status: FileOK}
		switch {
		case problems[name] != "" && errors.Is(statErr(filepath.Join(dir, name)), os.ErrNotExist):
			c.Status, c.Detail = FileMissing, "not in the report directory"
		case problems[name] != "":
			c.Status, c.Detail = FileUnreadable, providers.Sanitize(problems[name], 300)
		case actual[name] != rec:
			c.Status, c.Detail = FileDiffers, "its SHA-256 is not the one recorded when the drill wrote it"
		}
		if c.Status != FileOK {
			bad = append(bad, name+" "+c.Status)
		}
		v.Files = append(v.Files, c)
	}
	v.OK = len(bad) == 0
	if v.OK {
		v.Reason = fmt.Sprintf("every report file matches the digests recorded for drill %s started %s", run.Drill, run.Started.UTC().Format(time.RFC3339))
	} else {
		v.Reason = fmt.Sprintf("%s (drill %s started %s)", strings.Join(bad, ", "), run.Drill, run.Started.UTC().Format(time.RFC3339))
	}
	return v
}

func statErr(path string) error {
	_, err := os.Lstat(path)
	return err
}

// Err is nil when every file matched; otherwise it wraps ErrReportTampered and names the files.
func (v *Verification) Err() error {
	if v.OK {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrReportTampered, v.Reason)
}

type reportID struct {
	Drill   string    `json:"drill"`
	Started time.Time `json:"started"`
}

// reportIdentity reads the drill name and start time from a report.json.
func reportIdentity(path string) (reportID, error) {
	var id reportID
	data, err := localfile.ReadFile(path, 64<<20)
	if err != nil {
		return id, err
	}
	err = json.Unmarshal(data, &id)
	return id, err
}

// RecoveryCovers says in words what the measured recovery time is (drills/runner_recovery.go):
// the report's every rendering carries it beside the number.
const RecoveryCovers = "the traffic shift only: from the evacuation's start in the failover journal (the plan decided) " +
	"to the first router write, read back, after which the lost region had no weight and every class was on warm receivers. " +
	"Not in it: noticing the loss, verifying and repairing replicas, restoring and booting the candidates (all done before the evacuation), " +
	"nor the drain wait and withdrawal after that write"

// EvidenceRow is one line of the evidence block as the Markdown, HTML and text render it.
type EvidenceRow struct {
	Key, Label, Value string
}

// EvidenceRows is the evidence block, in order, for every rendering (Markdown, HTML, JUnit
// properties, the terminal). Key is the JUnit property name.
func (rep *Report) EvidenceRows() []EvidenceRow {
	ev := rep.Evidence
	file := func(f FileDigest) string {
		if f.Digest == "" {
			return fmt.Sprintf("%s (not digested: %s)", f.Path, f.Error)
		}
		return fmt.Sprintf("%s (%s, %d bytes)", f.Digest, f.Path, f.Bytes)
	}
	rows := []EvidenceRow{
		{"lifeboat.version", "Lifeboat version", ev.Version},
		{"lifeboat.manifest", "Release drilled (manifest digest)", file(ev.Manifest)},
		{"lifeboat.model", "Model", ev.Model},
		{"lifeboat.drill_file", "Drill file", file(ev.DrillFile)},
		{"lifeboat.fleet_file", "Fleet file", file(ev.FleetFile)},
		{"lifeboat.operator", "Operator", ev.Operator},
	}
	switch {
	case len(ev.Approvals) == 0 && ev.ApproveAll:
		rows = append(rows, EvidenceRow{"lifeboat.approvals", "Approvals", "approved in advance by --approve-all (the drill file lists no step under approve:, so none was asked)"})
	case len(ev.Approvals) == 0:
		rows = append(rows, EvidenceRow{"lifeboat.approvals", "Approvals", "none asked (the drill file lists no step under approve:)"})
	}
	for i, a := range ev.Approvals {
		verdict := "approved"
		if !a.Approved {
			verdict = "REFUSED"
		}
		v := fmt.Sprintf("%s %s by %s via %s at %s", a.Step, verdict, a.By, a.Via, a.At.UTC().Format(time.RFC3339))
		if a.Detail != "" {
			v += " (" + a.Detail + ")"
		}
		rows = append(rows, EvidenceRow{fmt.Sprintf("lifeboat.approval.%d", i+1), "Approval", v})
	}
	rec := "not measured"
	if ev.RecoverySeconds != nil {
		rec = fmt.Sprintf("%.3f s", *ev.RecoverySeconds)
	}
	rows = append(rows,
		EvidenceRow{"lifeboat.started", "Started", ev.Started.UTC().Format(time.RFC3339Nano)},
		EvidenceRow{"lifeboat.finished", "Finished", ev.Finished.UTC().Format(time.RFC3339Nano)},
		EvidenceRow{"lifeboat.rto_s", "RTO", fmt.Sprintf("%g s", ev.RTOSeconds)},
		EvidenceRow{"lifeboat.recovery_s", "Measured recovery", rec},
		EvidenceRow{"lifeboat.recovery_covers", "What the recovery time covers", RecoveryCovers},
		EvidenceRow{"lifeboat.verdict", "Verdict", ev.Verdict},
		EvidenceRow{"lifeboat.report_digests", "Report files", "their SHA-256 digests are in " + SumsFile + " beside this file and in the drill history in the fleet's state store: `lifeboat drill history --fleet FLEET --verify DIR` checks them"},
	)
	return rows
}
