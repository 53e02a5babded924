package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/spf13/cobra"

	"lifeboat/manifest"
	"lifeboat/manifest/lint"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
	"lifeboat/providers/oci"
	"lifeboat/verify/replicate"
)

func (a *app) manifestCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "manifest",
		Short: "Build, inspect, compare and lint DR manifests",
		Example: `  lifeboat manifest build --model ./llama --engine engine.yaml --deploy k8s/ --out dr/manifest.json
  lifeboat manifest lint dr/manifest.json --model ./llama
  lifeboat manifest diff dr/manifest-prev.json dr/manifest.json`,
		Long: `A DR manifest is one JSON file — a valid OCI image manifest with ModelPack media types —
listing every file a vLLM replica needs, in three parts of the DR bundle:

  model/…   the model repository as-is (weights, tokenizer, configs, chat template, LoRA adapters)
  engine/…  the vLLM engine config (vllm serve --config)
  deploy/…  deployment files (Kubernetes YAML, Dockerfile, lock files)

Each file carries its sha256 digest, size, role, the checksums object stores report natively
(CRC32C, CRC64NVME, CRC32, MD5), so replicas can be verified without a download, and its
BLAKE3, which deep verification re-hashes with.`,
	}
	c.AddCommand(a.manifestBuildCmd(), a.manifestShowCmd(), a.manifestDiffCmd(), a.manifestLintCmd(), a.manifestPushCmd(),
		a.manifestSignCmd(), a.manifestVerifySigCmd())
	return c
}

func (a *app) manifestBuildCmd() *cobra.Command {
	var o manifest.BuildOptions
	var out string
	var timestamp bool
	c := &cobra.Command{
		Use:   "build --model DIR|URL [--engine FILE] [--deploy PATH]... [--name NAME] --out FILE",
		Short: "Hash a model repository, engine config and deployment files into a DR manifest",
		Long: `Build walks the model directory, the engine config and the deployment paths, hashes every
file once (sha256, MD5, CRC32C, CRC64NVME, CRC32, BLAKE3 in one read pass, files in parallel across
cores, constant memory) and writes the manifest. The same inputs always give a byte-identical
manifest: layers are sorted by path and no timestamp is written unless --timestamp is given.

Refused, with the file named: symlinks that leave the model root, symlinked directories,
special files (devices, sockets, pipes), paths that are not valid UTF-8. The .git and .cache
directories at the model root are tool metadata and are skipped.

Engine and deployment files up to 1 MiB are embedded in the manifest, so 'manifest lint'
can check them from the manifest alone. So are the model's small configuration files (up to
256 KiB: config.json, generation_config.json, tokenizer_config.json, chat templates…), so that
'manifest diff' shows what changed inside them; weights and tokenizer vocabularies never are.

--model may also be a store URL whose prefix holds the model repository (the same files a local
directory would hold, config.json at the top):

  s3://BUCKET/PREFIX[?region=R][&endpoint=URL]   gs://BUCKET/PREFIX   az://ACCOUNT/CONTAINER/PREFIX

Each object is streamed once through the same hashers (objects in parallel, constant memory);
the same naming rules apply (an object name that is not a safe relative path fails the build)
and the result is byte-identical to a build from a local copy. file:///PATH is the local
directory PATH. Credentials come from each SDK's default chain (AWS_*, GOOGLE_APPLICATION_CREDENTIALS,
AZURE_STORAGE_CONNECTION_STRING…), never from the URL. --engine and --deploy stay local paths.`,
		Example: `  lifeboat manifest build --model ./llama --engine engine.yaml --deploy k8s/ --deploy Dockerfile \
      --name llama-3.1-8b-instruct --out dr/manifest.json
  lifeboat manifest build --model ./llama --out - | jq '.layers | length'
  lifeboat manifest build --model 's3://hf-mirror/llama-3.1-8b/?region=us-east-1' --engine engine.yaml --out dr/manifest.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			if o.ModelDir == "" || out == "" {
				return usageErr("manifest build needs --model DIR and --out FILE (see --help)")
			}
			if isStoreURL(o.ModelDir) {
				loc, err := providers.ParseURL(o.ModelDir)
				if err != nil {
					return usageErr("--model: %v", err)
				}
				if loc.Scheme == "file" {
					o.ModelDir = loc.Path // a local directory: the local walker and its checks
				} else {
					st, err := a.openStore(cmd.Context(), o.ModelDir)
					if err != nil {
						return err
					}
					defer st.Close()
					o.ModelStore, o.ModelDir = st, ""
				}
			}
			if timestamp {
				o.Created = time.Now()
			}
			bar := a.newProgress("hashing")
			o.Progress, o.Total, o.Log = bar.Add, bar.SetTotal, a.log
			start := time.Now()
			m, err := manifest.Build(cmd.Context(), o)
			bar.Done()
			if err != nil {
				return err
			}
			el := time.Since(start)
			data, err := m.Marshal()
			if err != nil {
				return err
			}
			if err := writeOut(out, data, a); err != nil {
				return usageErr("write manifest: %v", err)
			}
			sum := m.Summarize()
			rate := float64(sum.Bytes) / el.Seconds()
			res := map[string]any{
				"manifest": out, "digest": digest.FromBytes(data).String(), "files": sum.Files, "bytes": sum.Bytes,
				"seconds": el.Seconds(), "bytes_per_second": rate, "model": modelJSON(sum.Model),
			}
			if a.output == "json" {
				if out == "-" {
					return nil // stdout holds the manifest itself
				}
				return a.writeJSON(res)
			}
			w := a.stdout
			if out == "-" {
				w = a.stderr
			}
			fmt.Fprintf(w, "wrote %s: %d files, %s hashed in %.2fs (%s/s)\nmanifest digest %s\n",
				out, sum.Files, humanBytes(sum.Bytes), el.Seconds(), humanBytes(int64(rate)), res["digest"])
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.ModelDir, "model", "", "model repository: a directory or a store URL (s3://, gs://, az://, file://) (required)")
	f.StringVar(&o.EngineFile, "engine", "", "vLLM engine config YAML (vllm serve --config)")
	f.StringArrayVar(&o.DeployPaths, "deploy", nil, "deployment file or directory (repeatable); directory contents go under deploy/ as-is")
	f.StringVar(&o.Name, "name", "", "manifest title (default: config.json _name_or_path)")
	f.StringVar(&out, "out", "", "where to write the manifest (required; - for stdout)")
	f.IntVarP(&o.Jobs, "jobs", "j", 0, "files hashed at once (default: number of CPUs)")
	f.BoolVar(&timestamp, "timestamp", false, "record the build time (makes the output differ run to run)")
	_ = c.MarkFlagDirname("model")
	_ = c.MarkFlagFilename("engine", "yaml", "yml")
	return c
}

// writeOut writes data to name atomically (temp file + rename), or to stdout for "-".
func writeOut(name string, data []byte, a *app) error {
	if name == "-" {
		_, err := a.rawStdout.Write(data)
		return err
	}
	return providers.WriteFileAtomic(name, 0o644, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// readManifest reads and parses a DR manifest: a local file, or oci://REGISTRY/REPO:TAG (or
// @sha256:…) — the manifest a registry holds at that reference (see manifestBytes).
func (a *app) readManifest(ctx context.Context, name string) (*manifest.Manifest, error) {
	data, err := a.manifestBytes(ctx, name)
	if err != nil {
		return nil, err
	}
	m, err := manifest.Parse(data, name)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	return m, nil
}

// manifestBytes reads a DR manifest's bytes, bounded (manifest.MaxManifestBytes), wherever a
// manifest path is accepted: a local file, or an oci:// reference, fetched from the registry
// with the credentials of the Docker configuration. A registry manifest given by digest
// (@sha256:…) is checked against it by the fetch. A local file that cannot be read, or a
// malformed reference, is bad input (exit 2); a registry that cannot be reached or refuses is
// the store's failure, classified as such.
func (a *app) manifestBytes(ctx context.Context, name string) ([]byte, error) {
	if !strings.HasPrefix(name, "oci://") {
		data, err := localfile.ReadFile(name, manifest.MaxManifestBytes)
		if err != nil {
			return nil, withCode(exitUsage, err)
		}
		return data, nil
	}
	s, err := a.openStore(ctx, name)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	data, err := oci.FetchManifest(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest from %s: %w", s, err)
	}
	return data, nil
}

func (a *app) manifestShowCmd() *cobra.Command {
	var files bool
	var manifestFile string
	c := &cobra.Command{
		Use:   "show [--manifest] FILE [--files]",
		Short: "Summarise a manifest by part and role",
		Example: `  lifeboat manifest show dr/manifest.json
  lifeboat manifest show dr/manifest.json --files -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			args, err := manifestArg(manifestFile, args, "manifest show")
			if err != nil {
				return err
			}
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			m, err := a.readManifest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			s := m.Summarize()
			if a.output == "json" {
				v := struct {
					manifest.Summary
					Model    modelSpecJSON `json:"model"`
					FileList []fileRow     `json:"file_list,omitempty"`
				}{Summary: s, Model: modelJSON(s.Model)}
				if files {
					v.FileList = fileRows(m)
				}
				return a.writeJSON(v)
			}
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "Manifest\t%s\n", args[0])
			fmt.Fprintf(w, "Model\t%s\n", orDash(s.Name))
			fmt.Fprintf(w, "\tfamily %s · format %s · params %s · precision %s · quantization %s\n",
				orDash(s.Family), orDash(s.Model.Format), orDash(s.Model.ParamSize), precisionText(s), orDash(s.Model.Quantization))
			fmt.Fprintf(w, "Files\t%d files, %s\n\n", s.Files, humanBytes(s.Bytes))
			fmt.Fprintln(w, "PART\tROLE\tFILES\tSIZE\t")
			for _, g := range s.Groups {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t\n", g.Part, g.Role, g.Files, humanBytes(g.Bytes))
			}
			for _, p := range []manifest.Part{manifest.PartEngine, manifest.PartDeployment} {
				if len(m.PartFiles(p)) == 0 {
					fmt.Fprintf(w, "%s\t(none)\t0\t-\t\n", p)
				}
			}
			if files {
				fmt.Fprintln(w, "\nPATH\tROLE\tSIZE\tSHA256\t")
				for _, f := range m.Files {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\n", f.Path, f.Role, humanBytes(f.Size), f.Sums.SHA256[:16])
				}
			}
			return w.Flush()
		},
	}
	c.Flags().BoolVar(&files, "files", false, "also list every file")
	c.Flags().StringVar(&manifestFile, "manifest", "", "the manifest (the same as giving FILE, as verify, replicate and restore take it)")
	return c
}

type fileRow struct {
	Path      string `json:"path"`
	Part      string `json:"part"`
	Role      string `json:"role"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	MD5       string `json:"md5"`
	CRC32C    string `json:"crc32c"`
	CRC64NVME string `json:"crc64nvme"`
	Embedded  bool   `json:"embedded"`
}

func fileRows(m *manifest.Manifest) []fileRow {
	out := make([]fileRow, 0, len(m.Files))
	for _, f := range m.Files {
		out = append(out, fileRow{f.Path, string(f.Part), string(f.Role), f.Size, f.Sums.SHA256, f.Sums.MD5, f.Sums.CRC32C, f.Sums.CRC64NVME, f.Data != nil})
	}
	return out
}

// precisionText is the model's precision, with each precision's share of the parameters when
// the checkpoint mixes them: "mxfp4 (91.4%) + bf16 (8.6%)".
func precisionText(s manifest.Summary) string {
	if len(s.Precisions) < 2 {
		return orDash(s.Model.Precision)
	}
	parts := make([]string, len(s.Precisions))
	for i, p := range s.Precisions {
		parts[i] = fmt.Sprintf("%s (%.1f%%)", p.Precision, 100*p.Share)
	}
	return strings.Join(parts, " + ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (a *app) manifestDiffCmd() *cobra.Command {
	var exitCode bool
	c := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "List files added, removed and changed between two manifests (for release reviews)",
		Long: `Diff compares two manifests by bundle path: added, removed and changed files (size, digest or
role), and changes to the model config (precision, quantization, parameter count…). Inside the
files a manifest embeds — the engine config, deployment files and the model's small configs
(config.json, generation_config.json, tokenizer_config.json, chat templates…) — it shows what
changed key by key (max-model-len: 8192 → 32768, rope_scaling: {…} → (removed), eos_token_id),
for a chat template its digests and the lines added and removed, and for other text (a
Dockerfile) the lines removed and added.
Exit status is 0 whether or not they differ, unless --exit-code is given (then 1 if they differ).`,
		Example: `  lifeboat manifest diff dr/manifest-v1.json dr/manifest-v2.json`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json"); err != nil {
				return err
			}
			oldM, err := a.readManifest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			newM, err := a.readManifest(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			d := manifest.Diff(oldM, newM)
			if a.output == "json" {
				if err := a.writeJSON(d); err != nil {
					return err
				}
			} else {
				// One table: every file row has the same column widths, also after a file's
				// content diff (lines outside the columns).
				var t table
				for _, c := range d.Changes {
					switch c.Kind {
					case "added":
						t.row("+ "+c.Path, string(c.Role), humanBytes(c.New.Size), short(c.New.Digest))
					case "removed":
						t.row("- "+c.Path, string(c.Role), humanBytes(c.Old.Size), short(c.Old.Digest))
					default:
						t.row("~ "+c.Path, string(c.Role), humanBytes(c.Old.Size)+" → "+humanBytes(c.New.Size), short(c.Old.Digest)+" → "+short(c.New.Digest))
						writeContentDiff(&t, c)
					}
				}
				for _, md := range d.Model {
					t.add(1, "~ model config "+md.Field, orDash(md.Old)+" → "+orDash(md.New))
				}
				t.text("%d added, %d removed, %d changed, %d unchanged", d.Added, d.Removed, d.Changed, d.Unchanged)
				if err := t.write(a.stdout); err != nil {
					return err
				}
			}
			if exitCode && !d.Empty() {
				return problem("the manifests differ (%d added, %d removed, %d changed)", d.Added, d.Removed, d.Changed)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&exitCode, "exit-code", false, "exit 1 when the manifests differ")
	return c
}

// writeContentDiff prints what changed inside a file, one line per setting and chat template.
func writeContentDiff(t *table, c manifest.Change) {
	for _, st := range c.Settings {
		t.text("    %s: %s", st.Key, st.Transition())
	}
	for _, ct := range c.ChatTemplates {
		name := "chat template"
		if ct.Name != "" {
			name += " " + strconv.Quote(ct.Name)
		}
		switch ct.Kind {
		case "added":
			t.text("    %s: added (sha256 %s, %d lines)", name, short(ct.NewSHA256), ct.AddedLines)
		case "removed":
			t.text("    %s: removed (sha256 %s, %d lines)", name, short(ct.OldSHA256), ct.RemovedLines)
		default:
			t.text("    %s: changed (sha256 %s→%s, +%d/-%d lines)", name, short(ct.OldSHA256), short(ct.NewSHA256), ct.AddedLines, ct.RemovedLines)
		}
	}
	for _, l := range c.Lines {
		t.text("    %s", l)
	}
	if c.Note != "" {
		t.text("    (%s)", c.Note)
	}
}

func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func (a *app) manifestLintCmd() *cobra.Command {
	var dirs lint.DirSource
	var listRules, strict, deep bool
	var manifestFile string
	c := &cobra.Command{
		Use:   "lint [--manifest] FILE --model DIR|URL | --bundle DIR|URL [--deep] [--strict] [-o text|json|junit]",
		Short: "Check a manifest and the repository it describes for DR gaps",
		Long: `Lint checks the manifest together with the model repository files it describes: config,
tokenizer, chat template, generation config, safetensors headers and index, quantization,
context length and RoPE, LoRA adapters, engine config and deployment files. Engine and
deployment files are read from the manifest itself (they are embedded at build time); with
--bundle, the bundle's own copies must be byte-identical to them.

The repository must be the one the manifest describes: every file's size is compared, every
non-weight file is hashed (BLAKE3, or SHA-256 for a manifest without BLAKE3 values), and
with --deep the weights too. A
difference is manifest-stale, an error: rebuild the manifest first.

Every finding has a stable rule id, a severity, the file and field, and a hint to fix it.
Exit 1 if any error (with --strict, also on warnings). Run --list-rules for every rule.

Both flags also take a store URL (s3://BUCKET/PREFIX[?region=R&endpoint=URL], gs://BUCKET/PREFIX,
az://ACCOUNT/CONTAINER/PREFIX), with the same meaning as for a directory:

  --model URL    the prefix holds the model repository itself (config.json at the top): the
                 URL you gave 'manifest build --model'.
  --bundle URL   the prefix holds a DR bundle — model/, engine/, deploy/ — i.e. a replica: the
                 URL you give 'verify' and 'replicate --to'.

Files are read with ranged reads (a safetensors header costs two small reads, not a download);
the store is listed once. A store that stays unreachable exits 4; a missing bucket or refused
credentials exit 2. file:///PATH is the local directory PATH.`,
		Example: `  lifeboat manifest lint dr/manifest.json --model ./llama
  lifeboat manifest lint dr/manifest.json --model ./llama -o junit > lint.xml
  lifeboat manifest lint dr/manifest.json --bundle /restore/llama   # a restored bundle
  lifeboat manifest lint dr/manifest.json --model 'gs://hf-mirror/llama-3.1-8b/'
  lifeboat manifest lint dr/manifest.json --bundle 's3://dr-use1/llama/?region=us-east-1'   # a replica
  lifeboat manifest lint --list-rules`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.checkOutput("text", "json", "junit"); err != nil {
				return err
			}
			if listRules {
				return a.printRules()
			}
			args, err := manifestArg(manifestFile, args, "manifest lint")
			if err != nil {
				return err
			}
			if dirs.Model == "" && dirs.Bundle == "" {
				return usageErr("manifest lint needs --model DIR (or --bundle DIR)")
			}
			m, err := a.readManifest(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			src, closeSrc, err := lint.OpenSource(cmd.Context(), m, dirs, a.openStore)
			if err != nil {
				return err // exitCode: a store that stayed unreachable 4, the rest is bad input 2
			}
			defer closeSrc()
			rep := lint.RunWith(cmd.Context(), m, src, lint.Options{Log: a.log, Deep: deep})
			if err := a.renderLint(args[0], rep, strict); err != nil {
				return err
			}
			switch {
			case rep.Errors > 0:
				return problem("lint %s: %d error(s), %d warning(s)", args[0], rep.Errors, rep.Warnings)
			case strict && rep.Warnings > 0:
				return problem("lint %s: %d warning(s), which fail with --strict", args[0], rep.Warnings)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&dirs.Model, "model", "", "the model repository the manifest describes: a directory or a store URL")
	f.StringVar(&dirs.Bundle, "bundle", "", "a DR bundle (model/, engine/, deploy/), e.g. a replica: a directory or a store URL")
	f.BoolVar(&listRules, "list-rules", false, "print every rule id, severity and summary, then exit")
	f.BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	f.StringVar(&manifestFile, "manifest", "", "the manifest (the same as giving FILE, as verify, replicate and restore take it)")
	f.BoolVar(&deep, "deep", false, "hash the weight files too (every other file is always hashed)")
	_ = c.MarkFlagDirname("model")
	_ = c.MarkFlagDirname("bundle")
	return c
}

func (a *app) printRules() error {
	rules := lint.Rules()
	if a.output == "json" {
		type row struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Summary  string `json:"summary"`
			Hint     string `json:"hint"`
		}
		out := make([]row, 0, len(rules))
		for _, r := range rules {
			out = append(out, row{r.ID, string(r.Severity), r.Summary, r.Hint})
		}
		return a.writeJSON(out)
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RULE\tSEVERITY\tCHECKS")
	for _, r := range rules {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.ID, r.Severity, r.Summary)
	}
	return w.Flush()
}

func (a *app) renderLint(name string, rep *lint.Report, strict bool) error {
	switch a.output {
	case "json":
		v := struct {
			*lint.Report
			Strict bool `json:"strict"`
			Passed bool `json:"passed"`
		}{rep, strict, rep.Errors == 0 && (!strict || rep.Warnings == 0)}
		return a.writeJSON(v)
	case "junit":
		return a.writeJUnit(lintSuites(name, rep, strict))
	}
	for _, f := range rep.Findings {
		if f.Rule == "manifest-stale" && f.Severity == lint.Error {
			fmt.Fprintln(a.stdout, "the repository differs from the manifest: rebuild the manifest (lifeboat manifest build) first — findings about changed files describe the manifest's copy")
			break
		}
	}
	for _, f := range rep.Findings {
		if f.Path != "" && strings.HasPrefix(f.Message, f.Path) {
			// The message already starts with the file (often file:line); don't say it twice.
			fmt.Fprintf(a.stdout, "%s[%s] %s\n", f.Severity, f.Rule, f.Message)
		} else {
			fmt.Fprintf(a.stdout, "%s[%s] %s: %s\n", f.Severity, f.Rule, orDash(f.Path), f.Message)
		}
		if f.Hint != "" {
			fmt.Fprintf(a.stdout, "    hint: %s\n", f.Hint)
		}
	}
	verdict, why := "PASS", ""
	switch {
	case rep.Errors > 0:
		verdict = "FAIL"
	case strict && rep.Warnings > 0:
		verdict, why = "FAIL", " (--strict: warnings fail)"
	}
	fmt.Fprintf(a.stdout, "%s %s: %d error(s), %d warning(s)%s, %d rules checked\n", verdict, name, rep.Errors, rep.Warnings, why, len(lint.Rules()))
	return nil
}

// modelSpecJSON is ModelPack's model config (whose camelCase names belong to the manifest file
// format) as Lifeboat's snake_case output shows it.
type modelSpecJSON struct {
	Architecture string `json:"architecture,omitempty"`
	Format       string `json:"format,omitempty"`
	ParamSize    string `json:"param_size,omitempty"`
	Precision    string `json:"precision,omitempty"`
	Quantization string `json:"quantization,omitempty"`
}

func modelJSON(s manifest.ModelSpec) modelSpecJSON {
	return modelSpecJSON{s.Architecture, s.Format, s.ParamSize, s.Precision, s.Quantization}
}

// manifestArg accepts the manifest as FILE or as --manifest FILE (the convention of verify,
// replicate and restore), and returns it as the only argument.
func manifestArg(flag string, args []string, cmd string) ([]string, error) {
	switch {
	case flag != "" && len(args) == 1 && args[0] != flag:
		return nil, usageErr("%s: the manifest is given twice (%s and --manifest %s)", cmd, args[0], flag)
	case flag != "":
		return []string{flag}, nil
	case len(args) == 1:
		return args, nil
	}
	return nil, usageErr("%s needs the manifest: --manifest FILE (or FILE) (see --help)", cmd)
}

func (a *app) manifestPushCmd() *cobra.Command {
	var from string
	var o replicate.Options
	c := &cobra.Command{
		Use:   "push MANIFEST --from DIR|URL oci://REGISTRY/REPO[:TAG] [-j N] [-o text|json]",
		Short: "Push a DR bundle to an OCI registry: every file as a blob, the config and the manifest",
		Long: `Push uploads the DR bundle at --from (a directory or a store URL holding model/, engine/,
deploy/) to an OCI registry as the artifact the manifest describes: every file as a blob (only
the blobs the repository lacks: a HEAD first), the ModelPack config, and the manifest itself,
byte for byte, tagged with TAG (default latest). oras and kit can then pull it; its digest is
the manifest file's sha256. It is 'lifeboat replicate --to oci://…' (the same checks on every
byte) followed by the manifest upload, which happens only when every blob is there.

Credentials come from the Docker configuration (DOCKER_CONFIG or ~/.docker/config.json, with its
credential helpers), as docker login and oras login leave them; never from the URL. Registries
on loopback are spoken to over plain HTTP, all others over HTTPS. A blob up to 8 MiB goes up
in one POST and PUT; a larger one is streamed in the PUT too (the registry commits it only if
its SHA-256 is the manifest's), and a PUT cut off is resumed from the offset the registry
reports it holds (the last 16 MiB sent stay in memory for that). Run again, an interrupted push uploads
only the blobs the repository still lacks (docs/registry.md, "Uploads").

Exit codes: 0 pushed; 1 files missing or corrupt in --from; 2 bad input or refused credentials;
4 the registry stayed unreachable.`,
		Example: `  lifeboat manifest push dr/manifest.json --from ./bundle oci://registry.example.com/models/llama:v1
  lifeboat manifest push dr/manifest.json --from 's3://dr-use1/llama/?region=us-east-1' oci://ghcr.io/acme/llama:v1`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			loc, err := providers.ParseURL(args[1])
			if err != nil {
				return usageErr("%v", err)
			}
			if loc.Scheme != "oci" {
				return usageErr("manifest push: %s is not a registry (want oci://REGISTRY/REPO[:TAG])", loc)
			}
			if from == "" {
				return usageErr("manifest push needs --from DIR|URL, the bundle the manifest describes")
			}
			m, err := a.replicateInput(cmd.Context(), args[0], from, args[1], &o)
			if err != nil {
				return err
			}
			return a.runReplicate(cmd.Context(), m, args[0], from, args[1], o)
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "the bundle to push: a directory or a store URL (required)")
	f.IntVarP(&o.Jobs, "jobs", "j", replicate.DefaultJobs, "files uploaded at once")
	return c
}
