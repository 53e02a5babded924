package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"lifeboat/internal/base/shell"
	"lifeboat/manifest"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/verify/replicate"
)

func (a *app) restoreCmd() *cobra.Command {
	var manifestFile, from, to, fleetFile, pin string
	var trustKeys []string
	var o replicate.Options
	c := &cobra.Command{
		Use:   "restore --manifest FILE --from URL --to DIR [--fleet FILE | --key PUB...] [--manifest-digest sha256:HEX] [-j N] [-o text|json]",
		Short: "Materialise a replica into a local directory, checking every byte against the manifest",
		Long: `Restore copies the DR bundle of a replica (--from: a directory or a store URL, as for
'lifeboat replicate') into the local directory --to, with the bundle layout the manifest names:
DIR/model (the model repository, what 'vllm serve' is given), DIR/engine (the engine config) and
DIR/deploy.

Every byte is checked against the manifest's size and checksums while it streams; a file is
written to a temporary name and renamed into place only when it matched, so nothing half-written
ever appears under a file's name, and the files written are not read a second time. Running it
again resumes: a file already in DIR is kept only if it is proven intact (same size, and its
SHA-256 re-read matches the manifest); anything missing or different is fetched again. A manifest
path that would land outside DIR (absolute, "..", or through a symbolic link leading out of DIR)
refuses the whole restore before anything is written. Files in DIR the manifest does not list are
reported and left alone.

Exit codes: 0 the bundle in DIR is complete and proven; 1 some files could not be restored
(missing or corrupt in the source); 2 bad input (manifest, URL, DIR, a path outside DIR);
3 refused: --fleet's trust: (or --key) accepts no signature on the manifest, or its digest is
not --manifest-digest; 4 the store stayed
unreachable.

Signatures: with --key PUB (repeatable) or --fleet FILE whose trust: lists accepted keys, the
manifest must carry a valid signature by one of them ('lifeboat manifest sign'), checked before
anything is copied, on the very bytes then used (docs/signing.md).

Pinning: with --manifest-digest sha256:HEX the manifest's bytes must have that digest, or the
restore is refused (exit 3) before anything is copied. The Kubernetes launcher passes the digest
of the manifest it verified to its init container this way, so a manifest swapped in the
ConfigMap between the boot's checks and the pod's restore is not used (docs/security.md).`,
		Example: `  lifeboat restore --manifest dr/manifest.json --from 's3://dr-use1/llama/?region=us-east-1' --to /srv/restore/llama
  lifeboat restore --manifest dr/manifest.json --from gs://dr-usc1/llama/ --to ./llama -j 8 -o json
  vllm serve ./llama/model --config ./llama/engine/engine.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			ts, err := a.restoreTrust(fleetFile, trustKeys, &manifestFile)
			if err != nil {
				return err
			}
			if manifestFile == "" || from == "" || to == "" {
				return usageErr("restore needs --manifest FILE, --from URL and --to DIR (see --help)")
			}
			if o.Jobs < 0 {
				return usageErr("-j %d: must be at least 1", o.Jobs)
			}
			m, checked, err := a.readPinnedManifest(cmd.Context(), manifestFile, pin, ts)
			if err != nil {
				return err
			}
			// The library's gate, told the check made above on the very bytes parsed: a
			// policy with no check recorded would be enforced by Restore itself.
			o.Trust = &replicate.Trust{Policy: ts, ManifestRef: manifestFile, Open: a.signedOpener(manifest.MaxManifestBytes), Checked: checked}
			bar := a.newProgress("restoring")
			o.Progress, o.Total, o.Log = bar.Add, bar.SetTotal, a.log
			rep, err := a.restore(cmd.Context(), m, from, to, o)
			bar.Done()
			if err != nil {
				return err
			}
			return a.reportRestore(manifestFile, rep)
		},
	}
	f := c.Flags()
	f.StringVar(&manifestFile, "manifest", "", "the DR manifest (required)")
	f.StringVar(&from, "from", "", "the replica to restore from: a directory or a store URL (required)")
	f.StringVar(&to, "to", "", "the local directory to restore into, created if missing (required)")
	f.IntVarP(&o.Jobs, "jobs", "j", replicate.DefaultJobs, "files copied at once")
	f.StringVar(&fleetFile, "fleet", "", "require a signature by a key of this fleet's trust: section (and default --manifest to its model.manifest)")
	f.StringArrayVar(&trustKeys, "key", nil, "require a signature by this PEM public key (repeatable)")
	f.StringVar(&pin, "manifest-digest", "", "refuse the manifest unless its bytes have this digest (sha256:HEX): what a boot verified, pinned")
	_ = c.MarkFlagFilename("manifest", "json")
	_ = c.MarkFlagDirname("to")
	return c
}

// readPinnedManifest reads the manifest at ref, verified first when ts is set, and with pin
// (sha256:HEX) the bytes read must have that digest: the signature check, the digest check and
// the parse all see the same bytes. It returns the check made (nil: none).
func (a *app) readPinnedManifest(ctx context.Context, ref, pin string, ts *trustSpec) (*manifest.Manifest, *signature.Enforced, error) {
	var want string
	if pin != "" {
		var ok bool
		want, ok = strings.CutPrefix(pin, "sha256:")
		if b, err := hex.DecodeString(want); !ok || err != nil || len(b) != sha256.Size || strings.ToLower(want) != want {
			return nil, nil, usageErr("--manifest-digest %q: want sha256: and 64 lower-case hex digits", pin)
		}
	}
	e, err := a.enforceTrust(ctx, ref, ts, "restore")
	if err != nil {
		return nil, nil, err
	}
	if pin == "" {
		m, err := a.parseTrusted(ctx, ref, e)
		return m, e, err
	}
	var data []byte
	if e != nil {
		data = e.Data
	} else if data, err = a.manifestBytes(ctx, ref); err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, nil, withCode(exitRefused, fmt.Errorf("restore refused: the manifest %s is sha256:%s, not the %s it was pinned to (--manifest-digest): it changed after it was verified; nothing was copied",
			providers.Redact(ref), got, pin))
	}
	m, err := manifest.Parse(data, ref)
	if err != nil {
		return nil, nil, withCode(exitUsage, err)
	}
	return m, e, nil
}

// restoreTrust is what restore accepts as the manifest's signer: --fleet's trust: and --key.
func (a *app) restoreTrust(fleetFile string, keyFiles []string, manifestFile *string) (*trustSpec, error) {
	var ts *trustSpec
	if fleetFile != "" {
		fl, err := a.loadFleet(fleetFile)
		if err != nil {
			return nil, err
		}
		if *manifestFile == "" {
			*manifestFile = fl.Model.Manifest
		}
		ts = fleetTrust(fl, fleetFile)
	}
	if len(keyFiles) == 0 {
		return ts, nil
	}
	if ts == nil {
		ts = &trustSpec{Require: true}
	}
	ts.Require = true
	for _, k := range keyFiles {
		pk, err := signature.LoadPublicKey(k)
		if err != nil {
			return nil, usageErr("--key: %v", err)
		}
		ts.Keys = append(ts.Keys, pk)
		ts.VerifyArgs = strings.TrimSpace(ts.VerifyArgs + " --key " + shell.Quote(k))
	}
	return ts, nil
}

// restore checks the arguments, opens the source and runs replicate.Restore. Its errors carry exit
// codes (2 bad input, 4 unreachable); per-file failures are in the report.
func (a *app) restore(ctx context.Context, m *manifest.Manifest, from, to string, o replicate.Options) (*replicate.RestoreReport, error) {
	fromLoc, err := providers.ParseURL(from)
	if err != nil {
		return nil, usageErr("--from: %v", err)
	}
	toLoc, err := providers.ParseURL(to)
	if err != nil {
		return nil, usageErr("--to: %v", err)
	}
	if toLoc.Scheme != "file" {
		return nil, usageErr("--to %s: restore writes a local directory; to seed a store use 'lifeboat replicate'", to)
	}
	if fromLoc.String() == toLoc.String() {
		return nil, usageErr("--from and --to name the same directory (%s)", toLoc)
	}
	if fromLoc.Scheme == "file" {
		if st, err := os.Stat(fromLoc.Path); err != nil || !st.IsDir() {
			return nil, usageErr("--from %s is not a directory", fromLoc.Path)
		}
	}
	if st, err := os.Stat(toLoc.Path); err == nil && !st.IsDir() {
		return nil, usageErr("--to %s is not a directory", toLoc.Path)
	}
	src, err := a.openStore(ctx, from)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	rep, err := replicate.Restore(ctx, m, src, toLoc.Path, o)
	if err != nil {
		if errors.Is(err, replicate.ErrOutsideDir) {
			return rep, withCode(exitUsage, err)
		}
		if rep != nil && rep.Report != nil && rep.Status == replicate.Unreachable {
			return rep, unreachable("%v", err)
		}
		if rep == nil || rep.Report == nil {
			return rep, withCode(exitUsage, fmt.Errorf("--to %s: %w", toLoc.Path, err))
		}
		return rep, err
	}
	return rep, nil
}

func (a *app) reportRestore(manifestFile string, rep *replicate.RestoreReport) error {
	if a.output == "json" {
		v := struct {
			Manifest string `json:"manifest"`
			*replicate.Report
			Dir    string            `json:"dir"`
			Layout *replicate.Layout `json:"layout,omitempty"`
		}{manifestFile, rep.Report, rep.Dir, rep.Layout}
		if err := a.writeJSON(v); err != nil {
			return err
		}
	} else {
		if err := a.renderReplicate(rep.Report, "restore"); err != nil {
			return err
		}
		if l := rep.Layout; l != nil {
			fmt.Fprintf(a.stdout, "restored bundle: model %s", l.ModelDir)
			if l.EngineConfig != "" {
				fmt.Fprintf(a.stdout, ", engine config %s", l.EngineConfig)
			}
			fmt.Fprintln(a.stdout)
		}
	}
	return replicateErr(rep.Report)
}
