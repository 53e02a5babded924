package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"lifeboat/internal/base/shell"
	"lifeboat/providers"
	"lifeboat/providers/checksum"
	"lifeboat/verify"
)

func (a *app) verifyCmd() *cobra.Command {
	var (
		manifestFile string
		deep, strict bool
		jobs         int
		timeout      time.Duration
		digest       string
	)
	c := &cobra.Command{
		Use:   "verify --manifest FILE URL... [--deep [--digest sha256]] [-j N] [-o text|json|junit]",
		Short: "Check that replicas hold exactly the manifest's files (quick: native checksums; --deep: every byte)",
		Long: `Verify checks each replica — a URL naming the prefix that holds the DR bundle (model/,
engine/, deploy/) — against the manifest, all replicas at once.

Quick (default) reads metadata only: one listing of each bundle directory, plus a stat of
just the objects a listing cannot prove (S3 objects uploaded in parts). A file is OK only
when its size and a full-object native checksum (S3 CRC64NVME/CRC32C/CRC32/SHA-256 or a
plain-MD5 ETag, GCS CRC32C/MD5, Azure Content-MD5) equal the manifest's. --deep streams every
byte and re-hashes it (several files at once, the last big ones as parallel ranged reads,
constant memory). The hash is the manifest's BLAKE3, which every manifest Lifeboat builds
records: as collision-resistant as SHA-256 and about 2.7× faster per core. --digest sha256
re-derives the SHA-256 layer digests instead (the OCI identity itself, for an audit); a
manifest without BLAKE3 values is always checked by SHA-256.

File statuses:
  OK                 size and a checksum (quick) or every byte (deep) match
  MISSING            in the manifest, not in the replica
  SIZE_MISMATCH      present with another size
  CHECKSUM_MISMATCH  a native full-object checksum differs (quick)
  CORRUPT            the bytes hash to something else (deep)
  UNVERIFIED         present, same size, nothing comparable: a composite "-N" checksum, an
                     Azure blob without Content-MD5, a local file; --deep settles it
  EXTRA              in the replica, not in the manifest (a warning)
  ERROR              could not be checked (unreachable, permission)
Replica status: OK, FAILED, UNVERIFIED; NOT_FOUND, DENIED, MISCONFIGURED or ERROR (exit 2: fix
the URL or the configuration, the hint says what to set); UNREACHABLE (exit 4).

Exit status: 1 if any file is MISSING, SIZE_MISMATCH, CHECKSUM_MISMATCH or CORRUPT (with
--strict also UNVERIFIED); otherwise 2 if a replica's bucket, container or directory does not
exist or its credentials are refused, or for a bad URL or manifest; otherwise 4 if a replica
stayed unreachable after retries (or --timeout passed); otherwise 0.

-o junit writes one suite per replica and one case per file: failed statuses fail the case,
ERROR is a JUnit error, UNVERIFIED is skipped (a failure with --strict), EXTRA passes with a
note in system-out.

Replica URLs:

  /abs/path, ./rel/path, file:///abs/path        a local directory
  s3://BUCKET/PREFIX[?region=R][&endpoint=URL]   S3, or an S3-compatible store with endpoint
  gs://BUCKET/PREFIX                            Google Cloud Storage (honours STORAGE_EMULATOR_HOST)
  az://ACCOUNT/CONTAINER/PREFIX                 Azure Blob Storage

Credentials come from each SDK's default chain or environment (AWS_PROFILE/AWS_ACCESS_KEY_ID…,
GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_CONNECTION_STRING or az login), never from the URL;
they are never printed.`,
		Example: `  lifeboat verify --manifest dr/manifest.json s3://models-use1/llama/ gs://models-euw4/llama/ \
      az://drstore/models/llama/
  lifeboat verify --manifest dr/manifest.json --deep -j 32 s3://models-use1/llama/
  lifeboat verify --manifest dr/manifest.json ./restored -o junit > verify.xml`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json", "junit"); err != nil {
				return err
			}
			switch {
			case manifestFile == "":
				return usageErr("verify needs --manifest FILE (see --help)")
			case len(args) == 0:
				return usageErr("verify needs at least one replica URL (see --help)")
			case jobs < 0:
				return usageErr("-j %d: want a positive number of requests in flight", jobs)
			case digest != "auto" && digest != string(checksum.SHA256):
				return usageErr("--digest %q: want auto (BLAKE3 where the manifest records it) or sha256", digest)
			case digest != "auto" && !deep:
				return usageErr("--digest applies to --deep only: quick verification compares the stores' own checksums")
			}
			if !deep {
				defer quickGC(manifestFile)()
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			// The listings do not need the manifest: each starts as soon as its store is open,
			// while the manifest is read and parsed. Errors are still reported as before — the
			// manifest's first, then the first bad URL's — and cancel the listings.
			o := verify.Options{Jobs: jobs}
			if digest == string(checksum.SHA256) {
				o.Digest = checksum.SHA256
			}
			run, done := a.startVerify(ctx, len(args), deep, o)
			defer done()
			opened := a.openStoresThen(ctx, args, run.Start)
			m, err := a.readManifest(ctx, manifestFile)
			if err != nil {
				run.Cancel() // at once: no listing outlives a bad manifest by the other stores' set-up
			}
			stores, openErr := opened()
			defer func() {
				for _, s := range stores {
					s.Close()
				}
			}()
			if err != nil {
				return err
			}
			if openErr != nil {
				run.Cancel()
				return openErr
			}
			rep := run.Finish(m)
			a.addNearby(ctx, rep)
			rep.Manifest = manifestFile
			addFixes(rep, manifestFile, args)
			if err := a.reportVerify(rep, strict); err != nil {
				return err
			}
			return withFixes(rep.Err(strict), rep)
		},
	}
	f := c.Flags()
	f.StringVar(&manifestFile, "manifest", "", "the DR manifest to verify against (required)")
	f.BoolVar(&deep, "deep", false, "read every byte and re-hash it (default: metadata only)")
	f.StringVar(&digest, "digest", "auto", "with --deep, the hash that proves the bytes: auto (BLAKE3 where the manifest records it, else SHA-256) or sha256")
	f.IntVarP(&jobs, "jobs", "j", 0, fmt.Sprintf("requests and reads in flight, across all replicas (default %d)", verify.DefaultJobs))
	f.BoolVar(&strict, "strict", false, "exit 1 when a file is UNVERIFIED too")
	f.DurationVar(&timeout, "timeout", 0, "give up after this long; unfinished replicas are UNREACHABLE (default: no limit)")
	_ = c.MarkFlagFilename("manifest", "json")
	return c
}

// openStores opens every replica URL; any bad one is bad input before anything is read.
func (a *app) openStores(ctx context.Context, urls []string) ([]providers.Store, error) {
	return a.openStoresThen(ctx, urls, nil)()
}

// openStoresThen opens every replica URL concurrently — an S3 client's set-up alone reads the
// shared config files and parses the CA bundle — and calls opened(i, store) as each is ready,
// unless a URL is malformed (then nothing is read before the usage error). The returned wait
// gives every store opened, to be closed, and the error of the first URL that failed, in the
// order given, as opening them one by one would.
func (a *app) openStoresThen(ctx context.Context, urls []string, opened func(int, providers.Store)) (wait func() ([]providers.Store, error)) {
	for _, u := range urls {
		if _, err := providers.ParseURL(u); err != nil {
			opened = nil
			break
		}
	}
	stores := make([]providers.Store, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = a.openStore(ctx, u)
			if errs[i] == nil && opened != nil {
				opened(i, stores[i])
			}
		}()
	}
	return func() ([]providers.Store, error) {
		wg.Wait()
		var out []providers.Store
		for _, s := range stores {
			if s != nil {
				out = append(out, s)
			}
		}
		for _, err := range errs {
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
}

// quickGCPercent is the GOGC of a quick verification of a manifest up to quickGCMaxManifest.
// Its heap is small (the manifest and the listings: a few MB for hundreds of files) and
// short-lived, and with the default 100 the run spends about a sixth of its CPU collecting it
// as it grows from the runtime's 4 MB first goal; at 400 a 200-file verification is not
// collected at all after the packages' initialisation, and its peak heap stays under 10 MB. A
// bigger manifest keeps the default, since 5× its live heap would be real memory; so does a deep
// verification, whose heap is the range buffers, allocated once.
const (
	quickGCPercent     = 400
	quickGCMaxManifest = 8 << 20
)

// quickGC sets quickGCPercent for a quick verification against the manifest file, unless the
// user chose GOGC or GOMEMLIMIT, and returns what restores the previous setting.
func quickGC(manifestFile string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	if fi, err := os.Stat(manifestFile); err != nil || fi.Size() > quickGCMaxManifest {
		return func() {} // reading it will say what is wrong
	}
	old := debug.SetGCPercent(quickGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// startVerify prepares the verification of n replicas, with a progress bar for a deep run; done
// ends the bar.
func (a *app) startVerify(ctx context.Context, n int, deep bool, o verify.Options) (run *verify.Run, done func()) {
	mode := verify.ModeQuick
	if deep {
		mode = verify.ModeDeep
	}
	done = func() {}
	if deep {
		bar := a.newProgress("verifying")
		done = bar.Done
		var total atomic.Int64
		o.Planned = func(n int64) { bar.SetTotal(0, total.Add(n)) }
		o.Progress = bar.Add
	}
	return verify.NewRun(ctx, n, mode, o), done
}

// reportVerify renders the report in the -o format; outside text, replica errors also go to stderr.
func (a *app) reportVerify(rep *verify.Report, strict bool) error {
	var err error
	switch a.output {
	case "json":
		err = a.writeJSON(rep)
	case "junit":
		err = a.writeJUnit(verifySuites(rep, strict))
	default:
		err = renderVerify(a.stdout, rep)
	}
	if err != nil || a.output == "text" {
		return err
	}
	for _, r := range rep.Replicas {
		if r.Error != "" {
			fmt.Fprintf(a.stderr, "lifeboat: %s\n", r.Error)
		}
	}
	return nil
}

// addFixes sets the Fix of every FAILED replica of rep: the replicate command that repairs it from
// a replica that did not fail — one proven OK first, else one UNVERIFIED (replicate checks every
// byte it copies against the manifest, so an unproven source cannot slip a bad file in). urls
// are the replicas as the user named them (the arguments of verify, the fleet's replica URLs for
// check), in the report's order; manifestRef is the manifest as given. A FAILED replica left
// without a Fix has no replica to repair from (renderVerify says so).
func addFixes(rep *verify.Report, manifestRef string, urls []string) {
	from := -1
	for _, want := range []verify.ReplicaStatus{verify.ReplicaOK, verify.ReplicaUnverified} {
		for i, r := range rep.Replicas {
			if from < 0 && r.Status == want && i < len(urls) {
				from = i
			}
		}
	}
	for i := range rep.Replicas {
		r := &rep.Replicas[i]
		if r.Status != verify.ReplicaFailed || from < 0 || i >= len(urls) {
			continue
		}
		r.Fix = repairCommand(manifestRef, urls[from], urls[i])
	}
}

// withFixes adds the replicas' repair commands to err, one a line after it (the last line of an
// error is the next command to paste), so that they reach stderr — and -o json's "error" — also
// under -q, where the table that shows them is not printed.
func withFixes(err error, rep *verify.Report) error {
	if err == nil || rep == nil {
		return err
	}
	var fixes []string
	for _, r := range rep.Replicas {
		if r.Fix != "" {
			fixes = append(fixes, r.Fix)
		}
	}
	if len(fixes) == 0 {
		return err
	}
	return fmt.Errorf("%w; to repair:\n  %s", err, strings.Join(fixes, "\n  "))
}

// repairCommand is the replicate command line that repairs the replica to from the replica from,
// quoted to paste into a shell.
func repairCommand(manifestRef, from, to string) string {
	return strings.Join([]string{"lifeboat", "replicate", "--manifest", shell.Quote(providers.Redact(manifestRef)),
		"--from", shell.Quote(providers.Redact(from)), "--to", shell.Quote(providers.Redact(to))}, " ")
}

// statusOrder puts the statuses that need attention first in the per-replica summary.
var statusOrder = []verify.Status{
	verify.StatusOK, verify.StatusMissing, verify.StatusSizeMismatch, verify.StatusChecksumMismatch,
	verify.StatusCorrupt, verify.StatusUnverified, verify.StatusError,
}

// summary renders "15 files: 12 OK, 1 MISSING, …; 1 EXTRA".
func summary(r verify.ReplicaResult) string {
	n := 0
	var parts []string
	for _, s := range statusOrder {
		if c := r.Counts[s]; c > 0 || s == verify.StatusOK {
			parts = append(parts, fmt.Sprintf("%d %s", c, s))
		}
		n += r.Counts[s]
	}
	out := fmt.Sprintf("%d files: %s", n, strings.Join(parts, ", "))
	if e := r.Counts[verify.StatusExtra]; e > 0 {
		out += fmt.Sprintf("; %d EXTRA", e)
	}
	return out
}

// renderVerify prints, for each replica, one summary line and then exactly which files differ and
// how (and, for a replica with failed files, the command that repairs it); then one line over all
// replicas. The replicas' lines share their column widths, and so do all the findings below them
// (one table), however long a region name or URL is.
func renderVerify(w io.Writer, rep *verify.Report) error {
	const head, finding = 0, 1
	regions, noun := false, "replica"
	for _, r := range rep.Replicas {
		if r.Region != "" {
			regions, noun = true, "region"
		}
	}
	var t table
	byStatus := map[verify.ReplicaStatus]int{}
	for _, r := range rep.Replicas {
		byStatus[r.Status]++
		cells := []string{fmt.Sprintf("%-11s", r.Status)}
		if regions {
			cells = append(cells, orDash(r.Region))
		}
		t.add(head, append(cells, r.URL, summary(r), fmt.Sprintf("(%s, %.2fs)", rep.Mode, r.Seconds))...)
		if r.Error != "" {
			t.add(finding, "  error", r.Error)
		}
		for _, wmsg := range r.Warnings {
			t.add(finding, "  warning", wmsg)
		}
		if strings.HasPrefix(r.URL, "oci://") && rep.Mode == string(verify.ModeQuick) {
			t.add(finding, "  note", registryQuickNote)
		}
		if r.Diagnosis != "" {
			// Every file is missing: one finding, not one per file.
			t.add(finding, "  "+string(verify.StatusMissing), fmt.Sprintf("all %d files of the manifest", r.Counts[verify.StatusMissing]), r.Diagnosis)
			for _, f := range r.Files {
				if f.Status == verify.StatusExtra {
					t.add(finding, "  "+string(f.Status), f.Path, how(f))
				}
			}
		} else if r.Error == "" || r.Counts[verify.StatusError] < len(r.Files) { // else nothing was checked; the error says why
			// UNVERIFIED files that share a reason are summed up in one line when there are many.
			unverified := map[string][]string{}
			for _, f := range r.Files {
				if f.Status == verify.StatusUnverified {
					unverified[f.Detail] = append(unverified[f.Detail], f.Path)
				}
			}
			for _, f := range r.Files {
				switch f.Status {
				case verify.StatusOK:
					continue
				case verify.StatusUnverified:
					if paths := unverified[f.Detail]; len(paths) > 3 {
						if paths[0] == f.Path {
							t.add(finding, "  "+string(f.Status), fmt.Sprintf("%d files, e.g. %s", len(paths), pathText(f.Path)), f.Detail)
						}
						continue
					}
				}
				t.add(finding, "  "+string(f.Status), pathText(f.Path), how(f))
			}
		}
		switch {
		case r.Fix != "":
			t.add(finding, "  fix", r.Fix)
		case r.Status == verify.ReplicaFailed:
			t.add(finding, "  fix", fmt.Sprintf("no %s holds a good copy to repair from: replicate from the bundle the manifest was built from (lifeboat replicate --manifest %s --from BUNDLE --to %s)",
				noun, shell.Quote(providers.Redact(orDash(rep.Manifest))), shell.Quote(r.URL)))
		}
	}
	var parts []string
	for _, s := range []verify.ReplicaStatus{verify.ReplicaOK, verify.ReplicaFailed, verify.ReplicaUnverified, verify.ReplicaNotFound,
		verify.ReplicaDenied, verify.ReplicaMisconfigured, verify.ReplicaError, verify.ReplicaUnreachable} {
		if byStatus[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", byStatus[s], s))
		}
	}
	t.text("%d replica(s), %s verification: %s", len(rep.Replicas), rep.Mode, strings.Join(parts, ", "))
	return t.write(w)
}

// how says how a file differs: expected vs actual.
func how(f verify.FileResult) string {
	e, a := f.Expected, f.Actual
	src := ""
	if a.Source != "" {
		src = " (" + a.Source + ")"
	}
	switch f.Status {
	case verify.StatusMissing:
		return fmt.Sprintf("expected %s, sha256 %s", bytesExact(e.Size), shortHex(e.SHA256))
	case verify.StatusSizeMismatch:
		return fmt.Sprintf("expected %s, actual %s%s", bytesExact(e.Size), bytesExact(a.Size), src)
	case verify.StatusChecksumMismatch, verify.StatusCorrupt:
		var diffs []string
		for _, p := range []struct{ alg, exp, act string }{
			{"blake3", e.BLAKE3, a.BLAKE3}, {"sha256", e.SHA256, a.SHA256}, {"crc64nvme", e.CRC64NVME, a.CRC64NVME}, {"crc32c", e.CRC32C, a.CRC32C},
			{"crc32", e.CRC32, a.CRC32}, {"md5", e.MD5, a.MD5},
		} {
			if p.act != "" && p.exp != "" && !strings.EqualFold(p.act, p.exp) {
				if p.alg == "sha256" || p.alg == "blake3" {
					p.exp, p.act = shortHex(p.exp), shortHex(p.act)
				}
				diffs = append(diffs, fmt.Sprintf("%s expected %s, actual %s", p.alg, p.exp, p.act))
			}
		}
		out := strings.Join(diffs, "; ") + src
		if _, more, ok := strings.Cut(f.Detail, "; "); ok && f.Status == verify.StatusCorrupt {
			out += "; " + more
		}
		return out
	case verify.StatusExtra:
		return fmt.Sprintf("%s, not in the manifest", bytesExact(a.Size))
	}
	return f.Detail
}

// bytesExact renders a size exactly (a truncation by a few bytes must show), with a readable
// form beside it when large.
func bytesExact(n *int64) string {
	if n == nil {
		return "?"
	}
	if *n < 10000 {
		return fmt.Sprintf("%d B", *n)
	}
	return fmt.Sprintf("%d B (%s)", *n, humanBytes(*n))
}

func shortHex(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

// verifySuites renders one suite per replica and one case per file: failed statuses are
// failures, ERROR an error, UNVERIFIED skipped (a failure with --strict), EXTRA a note.
func verifySuites(rep *verify.Report, strict bool) junitSuites {
	out := junitSuites{Name: "lifeboat verify " + rep.Manifest}
	for _, r := range rep.Replicas {
		name := r.URL
		if r.Region != "" {
			name = r.Region + " " + r.URL // a CI test view names the region first
		}
		su := junitSuite{Name: name, Time: fmt.Sprintf("%.3f", r.Seconds)}
		if r.Error != "" {
			su.SystemErr = r.Error
		}
		files := append([]verify.FileResult(nil), r.Files...)
		sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
		for _, f := range files {
			tc := junitCase{Name: f.Path, ClassName: "lifeboat.verify"}
			msg := fmt.Sprintf("%s: %s", f.Status, how(f))
			switch {
			case f.Status.Failed(), strict && f.Status == verify.StatusUnverified:
				tc.Failure = &junitFailure{Message: msg, Type: string(f.Status), Text: f.Detail}
				su.Failures++
			case f.Status == verify.StatusError:
				tc.Error = &junitFailure{Message: msg, Type: string(f.Status), Text: f.Detail}
				su.Errors++
			case f.Status == verify.StatusUnverified:
				tc.Skipped = &junitSkipped{Message: msg}
				su.Skipped++
			case f.Status == verify.StatusExtra:
				tc.SystemOut = msg
			default:
				tc.SystemOut = f.Detail
			}
			su.Cases = append(su.Cases, tc)
			su.Tests++
		}
		out.Suites = append(out.Suites, su)
	}
	return out
}

// registryQuickNote qualifies a quick verification of a registry replica.
const registryQuickNote = "a registry is content-addressed: quick verify checked that a blob with each file's SHA-256 exists (a HEAD per file), " +
	"a cryptographic check only against a registry that verifies digests on upload (distribution does); " +
	"bytes corrupted on the registry's disk afterwards are seen only by --deep"
