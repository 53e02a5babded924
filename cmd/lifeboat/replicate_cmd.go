package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	"lifeboat/manifest"
	"lifeboat/providers"
	"lifeboat/providers/oci"
	"lifeboat/verify"
	"lifeboat/verify/replicate"
)

func (a *app) replicateCmd() *cobra.Command {
	var manifestFile, from, to string
	var o replicate.Options
	c := &cobra.Command{
		Use:     "replicate --manifest FILE --from URL --to URL [--dry-run] [--deep] [-j N] [-o text|json]",
		Short:   "Copy to a replica only what it lacks or holds wrong, checking every byte against the manifest",
		Long:    replicateLong,
		Example: replicateExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := a.replicateInput(cmd.Context(), manifestFile, from, to, &o)
			if err != nil {
				return err
			}
			return a.runReplicate(cmd.Context(), m, manifestFile, from, to, o)
		},
	}
	f := c.Flags()
	f.StringVar(&manifestFile, "manifest", "", "the DR manifest (required)")
	f.StringVar(&from, "from", "", "the replica to copy from: a directory or a store URL (required)")
	f.StringVar(&to, "to", "", "the replica to seed or repair: a directory or a store URL (required)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and change nothing")
	f.BoolVar(&o.Deep, "deep", false, "plan from a deep verification of the target (re-read every byte): also repairs bytes that rotted under intact checksums")
	f.IntVarP(&o.Jobs, "jobs", "j", replicate.DefaultJobs, "files copied at once")
	_ = c.MarkFlagFilename("manifest", "json")
	return c
}

const replicateLong = `Replicate seeds or repairs the replica --to from the replica --from. A replica URL names the
prefix that holds the DR bundle (model/, engine/, deploy/ — the manifest's paths):

  /abs/path, ./rel/path, file:///abs/path        a local directory (created if missing)
  s3://BUCKET/PREFIX[?region=R][&endpoint=URL]   S3, or an S3-compatible store with endpoint
  gs://BUCKET/PREFIX                            Google Cloud Storage (honours STORAGE_EMULATOR_HOST)
  az://ACCOUNT/CONTAINER/PREFIX                 Azure Blob Storage

Credentials come from each SDK's default chain (AWS_*/AWS_PROFILE, GOOGLE_APPLICATION_CREDENTIALS,
AZURE_STORAGE_CONNECTION_STRING or the default Azure credential), never from the URL.

What is copied: the target is verified quickly first (see 'lifeboat verify'); files that are
OK are left alone, and MISSING, SIZE_MISMATCH and CHECKSUM_MISMATCH files are copied. An
UNVERIFIED file (same size, no comparable native checksum — e.g. an Azure blob uploaded in
blocks without Content-MD5) is copied again on S3, GCS and Azure, which makes it
quick-verifiable; a local directory keeps no native checksums, so there it is re-read and
copied only if its SHA-256 differs. Files in the target that the manifest does not list are
reported and left alone. With --deep the target is verified deeply instead (every byte read
and hashed, as 'lifeboat verify --deep' does), so that CORRUPT files — bytes that rotted under
a stored checksum that still describes what was written — are copied again too.

How: each file streams from the source into the target (no local copy) and every byte is
checked against the manifest's size and checksums on the way; a mismatch commits nothing. The
target records a native full-object checksum as it writes (S3 CRC64NVME, GCS CRC32C, Azure
Content-MD5), so the copy is quick-verifiable forever after. Nothing partial ever appears under
a file's name, so an interrupted run is resumed by running it again. A source file whose bytes
do not match the manifest fails with that reason and is never written; engine and deployment
files embedded in the manifest are written from the manifest itself. Broken connections and
truncated bodies are retried (3 attempts per file).

Output: the plan as a table (path, why, size, from, result), then a summary and the target's
quick verification afterwards. --dry-run prints the plan and writes nothing.

Exit codes: 0 done, or nothing to do (with --dry-run: the plan can be carried out);
1 some files could not be repaired (missing or corrupt in the source); 2 bad input (manifest,
URL, missing bucket, refused credentials); 4 a store stayed unreachable.`

const replicateExample = `  # seed a new replica from a local bundle, then repair it whenever verify finds a problem
  lifeboat replicate --manifest dr/manifest.json --from ./bundle --to 's3://dr-use1/llama/?region=us-east-1'
  lifeboat replicate --manifest dr/manifest.json --from 's3://dr-use1/llama/?region=us-east-1' \
      --to az://drweu/models/llama/ --dry-run
  lifeboat replicate --manifest dr/manifest.json --from gs://dr-usc1/llama/ --to /restore/llama -j 8 -o json`

// replicateInput checks the flags and reads the manifest; a local --to is created (unless this
// is a dry run, which only plans).
func (a *app) replicateInput(ctx context.Context, manifestFile, from, to string, o *replicate.Options) (*manifest.Manifest, error) {
	if err := a.checkOutput("text", "json"); err != nil {
		return nil, err
	}
	if manifestFile == "" || from == "" || to == "" {
		return nil, usageErr("replicate needs --manifest FILE, --from URL and --to URL (see --help)")
	}
	if o.Jobs < 0 {
		return nil, usageErr("-j %d: must be at least 1", o.Jobs)
	}
	fromLoc, err := providers.ParseURL(from)
	if err != nil {
		return nil, usageErr("--from: %v", err)
	}
	toLoc, err := providers.ParseURL(to)
	if err != nil {
		return nil, usageErr("--to: %v", err)
	}
	if fromLoc.String() == toLoc.String() {
		return nil, usageErr("--from and --to name the same replica (%s)", toLoc)
	}
	m, err := a.readManifest(ctx, manifestFile)
	if err != nil {
		return nil, err
	}
	if fromLoc.Scheme == "file" {
		if st, err := os.Stat(fromLoc.Path); err != nil || !st.IsDir() {
			return nil, usageErr("--from %s is not a directory", fromLoc.Path)
		}
	}
	if toLoc.Scheme == "file" {
		if st, err := os.Stat(toLoc.Path); err == nil && !st.IsDir() {
			return nil, usageErr("--to %s is not a directory", toLoc.Path)
		}
		o.CreatesTarget = true
		if !o.DryRun {
			if err := os.MkdirAll(toLoc.Path, 0o755); err != nil {
				return nil, usageErr("--to: %v", err)
			}
		}
	}
	return m, nil
}

// runReplicate opens both stores, runs the copy with a progress bar and renders the report.
func (a *app) runReplicate(ctx context.Context, m *manifest.Manifest, manifestFile, from, to string, o replicate.Options) error {
	src, err := a.openStore(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := a.openStore(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()

	bar := a.newProgress("replicating")
	o.Progress, o.Total, o.Log = bar.Add, bar.SetTotal, a.log
	rep, err := replicate.Run(ctx, m, src, dst, o)
	bar.Done()
	if err != nil {
		return err
	}
	if a.output == "json" {
		v := struct {
			Manifest string `json:"manifest"`
			*replicate.Report
		}{manifestFile, rep}
		if err := a.writeJSON(v); err != nil {
			return err
		}
	} else if err := a.renderReplicate(rep, "replicate"); err != nil {
		return err
	}
	if providers.IsRegistry(dst) && o.Deep && rep.Copied > 0 && rep.Target != nil {
		// replicate.Run re-read the registry after copying (--deep): the status printed above is
		// that re-read's. A registry keeps the content it already has for a digest, so say why a
		// repair did not happen.
		var bad []string
		for _, f := range rep.Target.Files {
			if f.Status.Failed() {
				bad = append(bad, pathText(f.Path))
			}
		}
		if len(bad) > 0 {
			return problem("%s still serves wrong bytes for %s after the upload: a registry keeps the blob it has for a digest, so a blob corrupted on its storage must be deleted there (and garbage-collected) before replicate can repair it", dst, strings.Join(bad, ", "))
		}
	}
	if err := replicateErr(rep); err != nil {
		return err
	}
	if providers.IsRegistry(dst) && !o.DryRun {
		return a.pushManifestTo(ctx, dst, manifestFile)
	}
	return nil
}

// pushManifestTo stores the manifest file, byte for byte, in a registry replica whose blobs are
// all there: what makes the replica pullable by oras or kit and resolvable by its tag.
func (a *app) pushManifestTo(ctx context.Context, dst providers.Store, manifestFile string) error {
	data, err := a.manifestBytes(ctx, manifestFile)
	if err != nil {
		return err
	}
	dg, err := oci.PushManifest(ctx, dst, data)
	if err != nil {
		return err
	}
	if a.output != "json" {
		fmt.Fprintf(a.stdout, "manifest pushed: %s@%s\n", dst, dg)
	} else {
		a.log.Info("manifest pushed", "replica", dst.String(), "digest", dg.String())
	}
	return nil
}

// renderReplicate prints a replicate or restore run (op names which, for the wording).
func (a *app) renderReplicate(rep *replicate.Report, op string) error {
	w := a.stdout
	verb := "Replicating"
	if op == "restore" {
		verb = "Restoring"
	}
	if rep.DryRun {
		verb = "Plan (dry run, nothing is written)"
	}
	fmt.Fprintf(w, "%s: %s → %s\n", verb, rep.From, rep.To)
	if len(rep.Files) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PATH\tREASON\tSIZE\tFROM\tRESULT")
		for _, c := range rep.Files {
			result := string(c.Outcome)
			switch {
			case c.Outcome == replicate.OutcomeFailed:
				result = "FAILED: " + string(c.Failure)
			case rep.DryRun:
				result = "would copy"
			case c.Outcome == replicate.OutcomeCopied && c.Attempts > 1:
				result = fmt.Sprintf("copied (%d attempts)", c.Attempts)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", pathText(c.Path), c.Reason, humanBytes(c.Size), c.From, result)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, c := range rep.Files {
			if c.Detail != "" && a.verbose {
				fmt.Fprintf(w, "  %s: %s: %s\n", pathText(c.Path), c.Reason, c.Detail)
			}
			if c.Error != "" {
				fmt.Fprintf(w, "  %s: %s\n", pathText(c.Path), c.Error)
			}
		}
	}
	for _, p := range rep.Extra {
		fmt.Fprintf(w, "extra (not in the manifest, left alone): %s\n", pathText(p))
	}

	var planned int
	var plannedBytes int64
	for _, c := range rep.Files {
		if c.Outcome != replicate.OutcomeFailed {
			planned++
			plannedBytes += c.Size
		}
	}
	intact := fmt.Sprintf("%d already OK", rep.AlreadyOK)
	if rep.RereadOK > 0 {
		intact += fmt.Sprintf(", %d re-read intact", rep.RereadOK)
	}
	extra := ""
	if len(rep.Extra) > 0 {
		extra = fmt.Sprintf(", %d extra left alone", len(rep.Extra))
	}
	switch {
	case rep.DryRun:
		fmt.Fprintf(w, "%s: %d file(s), %s to copy, %d cannot be repaired; %s%s\n",
			rep.Status, planned, humanBytes(plannedBytes), rep.Failed, intact, extra)
	case len(rep.Files) == 0:
		fmt.Fprintf(w, "%s: nothing to do; %s%s\n", rep.Status, intact, extra)
	default:
		fmt.Fprintf(w, "%s: %d copied (%s), %d failed; %s%s (%.1fs)\n",
			rep.Status, rep.Copied, humanBytes(rep.Bytes), rep.Failed, intact, extra, rep.Seconds)
	}
	if t := rep.Target; t != nil && op == "restore" {
		n := 0
		for _, c := range t.Counts {
			n += c
		}
		if len(rep.Unproven) == 0 && rep.Status != replicate.Failed {
			fmt.Fprintf(w, "restored: all %d files of the manifest are in place and proven (written and checked by this run, or re-read intact)\n", n-t.Counts[verify.StatusExtra])
		}
	} else if t != nil {
		fmt.Fprintf(w, "target after replicate: %s (%s)\n", t.Status, replCountsLine(t.Counts))
		if t.Status == verify.ReplicaUnverified && len(rep.Unproven) == 0 {
			fmt.Fprintln(w, "  (the target keeps no native checksums; every file was written or re-read and checked by this run)")
		}
	}
	if len(rep.Unproven) > 0 {
		fmt.Fprintf(w, "not proven intact after the run (changed by someone else?): %s\n", strings.Join(rep.Unproven, ", "))
	}
	return nil
}

// replCountsLine renders status counts in a fixed order: "15 OK, 1 EXTRA".
func replCountsLine(counts map[verify.Status]int) string {
	var parts []string
	for _, s := range []verify.Status{verify.StatusOK, verify.StatusMissing, verify.StatusSizeMismatch, verify.StatusChecksumMismatch,
		verify.StatusCorrupt, verify.StatusUnverified, verify.StatusError, verify.StatusExtra} {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		return "no files"
	}
	return strings.Join(parts, ", ")
}

// replicateErr is the run's outcome as an error for exitCode: files that could not be repaired
// (1), a store that stayed unreachable (4).
func replicateErr(rep *replicate.Report) error {
	switch rep.Status {
	case replicate.Failed:
		if rep.Failed == 0 && rep.Target != nil {
			// Every copy succeeded, but the check after them did not prove the target.
			var bad []string
			for _, f := range rep.Target.Files {
				if f.Status.Failed() {
					bad = append(bad, pathText(f.Path)+" "+string(f.Status))
				}
			}
			for _, p := range rep.Unproven {
				bad = append(bad, pathText(p)+" not proven")
			}
			return problem("the target is not intact after copying: %s", strings.Join(bad, ", "))
		}
		return problem("%d file(s) could not be copied", rep.Failed)
	case replicate.Unreachable:
		return unreachable("%s or %s stayed unreachable", rep.From, rep.To)
	case replicate.WriteFailed:
		return problem("%d file(s) could not be written to %s on this host (see each file's error: disk full, read-only, a path in the way)", rep.Failed, rep.To)
	}
	return nil
}

// pathText is a path as text output shows it: as is when every character is a printable
// non-space, else Go-quoted, so that a key from a store (whose C1 controls, bidi overrides or
// newlines the key rules let through) cannot forge lines, colours or OK verdicts on a terminal.
func pathText(p string) string {
	for _, r := range p {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || unicode.Is(unicode.Cf, r) {
			return strconv.Quote(p)
		}
	}
	return p
}
