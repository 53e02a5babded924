package drills

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"lifeboat/fleet"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
)

// TestFinishOrder: Finish writes the reports, then the history (naming their digests), then
// notifies — with the history already readable — and signs report.json last; a report
// directory that cannot be written is the error, after the history and the notification.
func TestFinishOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(ctx context.Context, u string) (providers.Store, error) {
		return providers.Open(ctx, u, providers.Options{})
	}
	r := &Runner{Fleet: &fleet.Fleet{File: "fleet.yaml", State: "file://" + filepath.Join(dir, "state")}, Open: open}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	history := func() []HistoryEntry {
		st, err := open(ctx, r.Fleet.State)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		h, err := History(ctx, st)
		if err != nil && !errors.Is(err, providers.ErrNotFound) {
			t.Fatal(err)
		}
		return h
	}
	rep := &Report{Schema: SchemaID, Drill: "lose-eu", Lost: "eu-west-1", Started: time.Now().UTC(), Steps: []StepResult{}}
	var steps []string
	reports := filepath.Join(dir, "report")
	fin, err := r.Finish(ctx, rep, FinishOptions{ReportDir: reports, Signer: signer,
		Notify: func(*Report) {
			steps = append(steps, "notify")
			if len(history()) != 1 {
				t.Error("notified before the history recorded the drill")
			}
			if _, err := os.Stat(filepath.Join(reports, ReportJSON)); err != nil {
				t.Errorf("notified before the reports were written: %v", err)
			}
			if _, err := os.Stat(signature.SidecarName(filepath.Join(reports, ReportJSON))); err == nil {
				t.Error("report.json signed before the notification")
			}
		},
		Warn: func(w string) { t.Errorf("warning: %s", w) }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []string{"notify"}) {
		t.Errorf("notified %v, want once", steps)
	}
	if fin.SignedBy != signer.KeyID() || fin.Signature != signature.SidecarName(filepath.Join(reports, ReportJSON)) {
		t.Errorf("Finished %+v, want signed by %s beside report.json", fin, signer.KeyID())
	}
	data, err := os.ReadFile(filepath.Join(reports, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := os.ReadFile(fin.Signature)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signature.Verify(data, [][]byte{bundle}, []*signature.PublicKey{signature.PublicKeyOf(signer)}); err != nil {
		t.Errorf("the signature does not verify report.json: %v", err)
	}
	if h := history(); len(h) != 1 || h[0].Drill != "lose-eu" || len(h[0].Reports) == 0 {
		t.Errorf("history %+v, want one entry of lose-eu naming the reports' digests", h)
	}

	// A report directory that cannot be written: the history and the notification still happen.
	blocked := filepath.Join(dir, "blocked")
	if err := os.WriteFile(blocked, []byte("a file, not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	notified := false
	if _, err := r.Finish(ctx, rep, FinishOptions{ReportDir: filepath.Join(blocked, "report"), Signer: signer,
		Notify: func(*Report) { notified = true }, Warn: func(string) {}}); err == nil {
		t.Error("Finish with an unwritable report directory: no error")
	}
	if !notified || len(history()) != 2 {
		t.Errorf("after a report write failure: notified %v, %d history entries (want true, 2)", notified, len(history()))
	}
}

// TestCheckApprovals: a drill with approval steps is refused before anything runs when nobody
// can answer; --approve-all or a terminal lets it run; teardown never needs approval.
func TestCheckApprovals(t *testing.T) {
	d := &Drill{File: "drill.yaml", Steps: []string{"boot", "failover", StepTeardown}, Approve: []string{"failover", StepTeardown}}
	if got := d.ApprovalSteps(); !slices.Equal(got, []string{"failover"}) {
		t.Errorf("ApprovalSteps %v, want [failover]", got)
	}
	err := CheckApprovals(d, false, false)
	if !errors.Is(err, ErrNoApprover) || err.Error() != "drill.yaml: step(s) failover need approval (approve:) and there is no terminal to ask: run on a terminal, or with --approve-all" {
		t.Errorf("no approver: %v", err)
	}
	if CheckApprovals(d, true, false) != nil || CheckApprovals(d, false, true) != nil {
		t.Error("refused with --approve-all or a terminal")
	}
	if err := CheckApprovals(&Drill{File: "d.yaml", Steps: []string{"boot", StepTeardown}, Approve: []string{StepTeardown}}, false, false); err != nil {
		t.Errorf("only teardown approved: %v", err)
	}
	ctx := context.Background()
	all, via := Approvals(true, nil)
	if ok, err := all(ctx, "failover"); !ok || err != nil || via != ApproveViaAll {
		t.Errorf("all: %v %v %q", ok, err, via)
	}
	none, via := Approvals(false, nil)
	if ok, err := none(ctx, "failover"); ok || err == nil || via != ApproveViaNone {
		t.Errorf("no one to ask: %v %v %q", ok, err, via)
	}
	asked := ""
	ask, via := Approvals(false, func(_ context.Context, step string) (bool, error) { asked = step; return false, nil })
	if ok, _ := ask(ctx, "failover"); ok || asked != "failover" || via != ApproveViaTerminal {
		t.Errorf("terminal: %v asked %q %q", ok, asked, via)
	}
}
