package drills

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
)

// FinishOptions say what follows a drill that ran: the reports written, the history appended,
// the verdict notified and the evidence signed (Finish).
type FinishOptions struct {
	// ReportDir receives report.json, report.md, report.html and junit.xml ("": none written).
	ReportDir string
	// Signer signs report.json (the evidence): report.json.sigstore.json beside it. It needs
	// ReportDir; load it before the drill, so that nothing is read again after it.
	Signer *signature.Signer
	// Notify is told the report (the fleet's notify:, the caller's hook); nil: none.
	Notify func(*Report)
	// Warn is told what went wrong but does not fail the drill (the history not recorded).
	Warn func(string)
}

// Finished says what Finish signed.
type Finished struct {
	SignedBy  string // the key id ("": not signed)
	Signature string // where the signature is
}

// Finish is what follows Run, in order: the reports first (the history records their digests,
// see drill history --verify), then the history in the fleet's state store (after an interrupt
// too: the history says the drill was interrupted, so ctx's cancellation is ignored), the
// notification, and last the signature of report.json. A report that could not be written is
// the error (after the history and the notification); a history not recorded is only warned.
func (r *Runner) Finish(ctx context.Context, rep *Report, o FinishOptions) (Finished, error) {
	warn := o.Warn
	if warn == nil {
		warn = func(s string) { r.log().Warn(s) }
	}
	var digests ReportDigests
	var writeErr error
	if o.ReportDir != "" {
		digests, writeErr = WriteReports(o.ReportDir, rep)
	}
	absDir := o.ReportDir
	if p, err := filepath.Abs(o.ReportDir); err == nil && o.ReportDir != "" {
		absDir = p
	}
	hctx := context.WithoutCancel(ctx)
	open := r.Open
	if open == nil {
		open = func(ctx context.Context, u string) (providers.Store, error) {
			return nil, fmt.Errorf("%s: no way to open the state store (Runner.Open)", u)
		}
	}
	if st, err := open(hctx, r.Fleet.State); err == nil {
		if err := AppendHistory(hctx, st, rep, absDir, digests); err != nil {
			warn(err.Error())
		}
		st.Close()
	} else {
		warn(fmt.Sprintf("drill history not recorded: %v", err))
	}
	if o.Notify != nil {
		o.Notify(rep)
	}
	if writeErr != nil {
		return Finished{}, writeErr
	}
	if o.Signer == nil || o.ReportDir == "" {
		return Finished{}, nil
	}
	where, err := signEvidence(hctx, o.Signer, filepath.Join(o.ReportDir, "report.json"))
	if err != nil {
		return Finished{}, err
	}
	return Finished{SignedBy: o.Signer.KeyID(), Signature: where}, nil
}

// signEvidence signs a file the drill wrote: the signature beside it.
func signEvidence(ctx context.Context, signer *signature.Signer, path string) (string, error) {
	data, err := localfile.ReadFile(path, manifest.MaxManifestBytes)
	if err != nil {
		return "", err
	}
	b, err := signer.SignBlob(ctx, data)
	if err != nil {
		return "", err
	}
	out := signature.SidecarName(path)
	if err := providers.WriteFileAtomic(out, 0o644, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}); err != nil {
		return "", fmt.Errorf("%s: %v", filepath.Base(out), err)
	}
	return out, nil
}
