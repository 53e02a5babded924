package warm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/manifest"
	"lifeboat/manifest/modelrepo"
	"lifeboat/manifest/signature"
	"lifeboat/providers"
	"lifeboat/providers/localfile"
	"lifeboat/verify/replicate"
)

// BootOptions say what Boot restores, how it launches the replica and what warm means.
type BootOptions struct {
	// Manifest is the DR manifest of the replica; From is the replica's store. From may be nil
	// when Workdir already holds a restore of this manifest proven earlier (see Boot).
	Manifest *manifest.Manifest
	From     providers.Store
	// Workdir holds the restored bundle (Workdir/bundle), the restore record and the replica's
	// log (Workdir/replica.log). It is kept across runs, so a second boot skips the restore.
	Workdir string
	// NoRestore boots what is at an endpoint: nothing is restored (an endpoint launcher).
	NoRestore bool
	// ModelInPlace: the launcher restores the model where the replica runs (the Kubernetes
	// launcher's init container), so only the manifest's engine and deployment parts are restored
	// into Workdir; the launcher gets the whole manifest (Spec.Manifest).
	ModelInPlace bool
	Launcher     launch.Launcher
	Env          []string // KEY=VALUE for the launched replica
	PassEnv      []string // names of Lifeboat's environment passed as they are (Spec.PassEnv)
	// Starting is told the replica's process group before its command runs (Spec.Starting).
	Starting func(launch.Started) error
	// Probe says what warm means; Models and LoRAs default to the engine config's
	// served-model-name(s) (else the model directory, as vLLM does) and lora-modules names.
	Probe   ProbeOptions
	Restore replicate.Options
	// Keep leaves the replica running; BootResult.Instance is then the running replica.
	Keep bool
	// StopTimeout bounds the teardown (default 30 s).
	StopTimeout time.Duration

	// Trust is the fleet's trust: for the manifest at ManifestRef (failover.Fleet.BootOptions
	// fills both in); Boot enforces it before anything is restored or launched, unless the
	// caller already did (Trusted, the check it made on the same bytes as Manifest). OpenSigned
	// reads the manifest and finds its signatures (nil: a local file); Warn is told the warning
	// of require: false (nil: slog's default logger).
	Trust       *signature.Policy
	ManifestRef string
	Trusted     *signature.Enforced
	OpenSigned  signature.Opener
	Warn        func(string)
}

// BootResult is what Boot found. JSON field names are stable.
type BootResult struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// OK: the restore (if any) ended OK and the replica was judged WARM.
	OK bool `json:"ok"`
	// Restore is the restore's report; nil when it was skipped or not needed.
	Restore *replicate.RestoreReport `json:"restore,omitempty"`
	// RestoreSkipped says why no restore ran ("" when one ran).
	RestoreSkipped string            `json:"restore_skipped,omitempty"`
	Layout         *replicate.Layout `json:"layout,omitempty"`
	Models         []string          `json:"models"`
	LoRAs          []string          `json:"loras"`
	URL            string            `json:"url,omitempty"`
	LogPath        string            `json:"log_path,omitempty"`
	Timings        BootTimings       `json:"timings"`
	Probe          *ProbeResult      `json:"probe,omitempty"`
	Kept           bool              `json:"kept"`
	// Instance is the running replica when Keep was set (else it has been stopped).
	Instance launch.Instance `json:"-"`
}

// BootTimings are seconds; null when the phase did not run.
type BootTimings struct {
	RestoreS   *float64 `json:"restore_s"`
	LaunchS    *float64 `json:"launch_s"`
	ListenS    *float64 `json:"listen_s"`
	HealthyS   *float64 `json:"healthy_s"`
	TTFTS      *float64 `json:"ttft_s"`
	TokensPerS *float64 `json:"tokens_per_s"`
	WarmS      *float64 `json:"warm_s"`
	StopS      *float64 `json:"stop_s"`
	TotalS     *float64 `json:"total_s"`
}

// ErrBootInput marks a problem with Boot's input (no manifest, no launcher, a bad engine config).
var ErrBootInput = errors.New("boot")

// Boot restores a replica into a working directory if needed, launches it, probes it and stops
// it (unless Keep):
//
//   - Workdir. It is created 0700 if missing and refused (ErrBootInput wrapping ErrUnsafeWorkdir)
//     when it is a symbolic link, owned by someone else, or writable by others (PrepareWorkdir).
//   - Restore. When Workdir holds a restore of the same manifest recorded as proven by an earlier
//     run (a record only the caller could have written), and every file still has the size,
//     modification time, change time and inode recorded then, the restore is
//     skipped; otherwise replicate.Restore runs (it keeps the files it proves intact and fetches the rest).
//     A restore that fails for some files still boots what was restored — that is the replica an
//     outage would get, and the probe names what breaks — but the result is not OK. A store that
//     stays unreachable ends Boot with an error wrapping providers.ErrUnreachable.
//   - Launch, with the restored model directory and engine config.
//   - Probe (ProbeInstance): the verdict and timings.
//   - Stop, unless Keep.
//
// An error is returned only when nothing could be judged (bad input, unreachable store, launch
// failure); a replica that is not warm is a result, not an error.
func Boot(ctx context.Context, o BootOptions) (*BootResult, error) {
	start := time.Now()
	res := &BootResult{Models: []string{}, LoRAs: []string{}}
	defer func() { res.Timings.TotalS = secs(time.Since(start)) }()
	if o.Launcher == nil {
		return res, fmt.Errorf("%w: no launcher", ErrBootInput)
	}
	if err := o.enforceTrust(ctx); err != nil {
		return res, err
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 30 * time.Second
	}
	restoreOK := true
	spec := launch.Spec{Env: o.Env, PassEnv: o.PassEnv, Starting: o.Starting}
	if !o.NoRestore {
		if o.Manifest == nil || o.Workdir == "" {
			return res, fmt.Errorf("%w: a manifest and a working directory are needed to restore", ErrBootInput)
		}
		wd, err := filepath.Abs(o.Workdir)
		if err != nil {
			return res, err
		}
		if err := PrepareWorkdir(wd); err != nil {
			return res, fmt.Errorf("%w: %w", ErrBootInput, err)
		}
		bundle := filepath.Join(wd, "bundle")
		t0 := time.Now()
		local := o.LocalManifest()
		if why := restoredEarlier(wd, local); why != "" {
			res.RestoreSkipped = why
		} else {
			if o.From == nil {
				return res, fmt.Errorf("%w: no replica to restore from", ErrBootInput)
			}
			_ = os.Remove(recordPath(wd))
			rep, err := replicate.Restore(ctx, local, o.From, bundle, o.Restore)
			res.Restore = rep
			res.Timings.RestoreS = secs(time.Since(t0))
			if err != nil {
				if rep != nil && rep.Report != nil && rep.Status == replicate.Unreachable && !errors.Is(err, providers.ErrUnreachable) {
					return res, fmt.Errorf("restore: %w: %v", providers.ErrUnreachable, err)
				}
				return res, fmt.Errorf("restore: %w", err)
			}
			switch rep.Status {
			case replicate.Unreachable:
				return res, fmt.Errorf("restore from %s: %w", o.From, providers.ErrUnreachable)
			case replicate.OK:
				if err := writeRecord(wd, local); err != nil {
					return res, err
				}
			default:
				restoreOK = false
			}
		}
		res.Layout = replicate.BundleLayout(local, bundle)
		spec.ModelDir, spec.EngineConfig = res.Layout.ModelDir, res.Layout.EngineConfig
		spec.DeployDir, spec.Manifest = res.Layout.DeployDir, o.Manifest
		spec.LogPath = filepath.Join(wd, "replica.log")

		// What the replica should serve, from the engine config as restored.
		if err := expectFromEngine(&o.Probe, spec); err != nil {
			return res, err
		}
	}
	res.Models = append(res.Models, o.Probe.Models...)
	res.LoRAs = append(res.LoRAs, o.Probe.LoRAs...)

	t1 := time.Now()
	lctx := ctx
	if o.Keep {
		// a kept replica lives until its caller stops it: a drill interrupted by Ctrl-C still
		// needs its candidates to ramp the router back before its teardown stops them
		lctx = context.WithoutCancel(ctx)
	}
	inst, err := o.Launcher.Launch(lctx, spec)
	res.Timings.LaunchS = secs(time.Since(t1))
	if err != nil {
		return res, fmt.Errorf("launch: %w", err)
	}
	res.URL = inst.BaseURL()
	if lp, ok := inst.(interface{ LogPath() string }); ok {
		res.LogPath = lp.LogPath()
	}
	pr := ProbeInstance(ctx, inst, o.Probe)
	res.Probe = &pr
	res.Verdict, res.Reason = pr.Verdict, pr.Reason
	res.Timings.ListenS, res.Timings.HealthyS, res.Timings.TTFTS = pr.Timings.ListenS, pr.Timings.HealthyS, pr.Timings.TTFTS
	res.Timings.TokensPerS, res.Timings.WarmS = pr.Timings.TokensPerS, pr.Timings.WarmS
	res.OK = restoreOK && pr.Verdict == Warm
	if !restoreOK && res.Restore != nil {
		res.Reason = fmt.Sprintf("%s (and the restore ended %s: %d file(s) failed)", res.Reason, res.Restore.Status, res.Restore.Failed)
	}

	if o.Keep && pr.Verdict == Warm {
		res.Kept, res.Instance = true, inst
		return res, nil
	}
	t2 := time.Now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.StopTimeout)
	defer cancel()
	err = inst.Stop(sctx)
	res.Timings.StopS = secs(time.Since(t2))
	if err != nil {
		return res, fmt.Errorf("stop: %w", err)
	}
	return res, nil
}

// LocalManifest is what Boot restores into Workdir: the manifest, without its model part when
// ModelInPlace.
func (o *BootOptions) LocalManifest() *manifest.Manifest {
	if o.ModelInPlace && o.Manifest != nil {
		return withoutModel(o.Manifest)
	}
	return o.Manifest
}

// withoutModel is m without its model part: what a launcher that restores the model where the
// replica runs needs on this host.
func withoutModel(m *manifest.Manifest) *manifest.Manifest {
	c := *m
	c.Files = nil
	for _, f := range m.Files {
		if f.Part != manifest.PartModel {
			c.Files = append(c.Files, f)
		}
	}
	return &c
}

// expectFromEngine fills the probe's expected served names and LoRA adapters from the engine
// config, as vLLM would serve them: served-model-name, else the model directory as given.
func expectFromEngine(po *ProbeOptions, spec launch.Spec) error {
	var cfg *modelrepo.EngineConfig
	if spec.EngineConfig != "" {
		data, err := localfile.ReadFile(spec.EngineConfig, modelrepo.MaxEngineConfigBytes)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			cfg, _ = modelrepo.ParseEngineConfig(data, spec.EngineConfig)
		}
	}
	if len(po.Models) == 0 {
		if cfg != nil && len(cfg.ServedModelNames) > 0 {
			po.Models = append([]string{}, cfg.ServedModelNames...)
		} else {
			po.Models = []string{spec.ModelDir}
		}
	}
	if len(po.LoRAs) == 0 && cfg != nil {
		for _, m := range cfg.LoRAModules {
			po.LoRAs = append(po.LoRAs, m.Name)
		}
	}
	return nil
}

// The restore record: written after a restore ended OK, it lets the next boot skip the restore
// while the files are untouched (same size, mtime, ctime and inode as when they were proven).
type restoreRecord struct {
	Manifest string               `json:"manifest"` // fingerprint of the manifest's files
	Files    map[string]fileStamp `json:"files"`
}

// fileStamp identifies one proven file. The inode and change time are in it because a
// modification time can be set back by anyone who can write the file (touch -d); a ctime cannot.
type fileStamp struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	Ctime   int64  `json:"ctime_ns"`
	Ino     uint64 `json:"ino"`
}

func recordPath(wd string) string { return filepath.Join(wd, "restore.json") }

func manifestFingerprint(m *manifest.Manifest) string {
	h := sha256.New()
	for _, f := range m.Files {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\n", f.Path, f.Size, f.Digest, f.Sums.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func stamps(bundle string, m *manifest.Manifest) (map[string]fileStamp, error) {
	out := make(map[string]fileStamp, len(m.Files))
	for _, f := range m.Files {
		p, err := replicate.RestorePath(bundle, f.Path)
		if err != nil {
			return nil, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() || fi.Size() != f.Size {
			return nil, fmt.Errorf("%s changed", f.Path)
		}
		st := fileStamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
		st.Ctime, st.Ino = changeStamp(fi)
		out[f.Path] = st
	}
	return out, nil
}

func writeRecord(wd string, m *manifest.Manifest) error {
	st, err := stamps(filepath.Join(wd, "bundle"), m)
	if err != nil {
		return fmt.Errorf("restore record: %w", err)
	}
	data, err := json.MarshalIndent(restoreRecord{Manifest: manifestFingerprint(m), Files: st}, "", "  ")
	if err != nil {
		return err
	}
	// A fresh private file (O_EXCL, random name) renamed over the record: nothing planted in the
	// working directory is followed or written through.
	tmp, err := os.CreateTemp(wd, ".restore.json-*")
	if err != nil {
		return fmt.Errorf("restore record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("restore record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("restore record: %w", err)
	}
	return os.Rename(tmp.Name(), recordPath(wd))
}

// readRecord reads the restore record only if it is a regular file owned by the caller and
// writable by nobody else, in a working directory that is itself safe (PrepareWorkdir's rules):
// a record someone else could have written proves nothing.
func readRecord(wd string) ([]byte, bool) {
	if localfile.CheckDir(wd, "working directory") != nil {
		return nil, false
	}
	f, err := os.OpenFile(recordPath(wd), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || localfile.Owner(fi) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 || fi.Size() > 64<<20 {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	return data, err == nil
}

// RestoredEarlier reports whether workdir holds a restore of m that an earlier Boot proved, with
// every file unchanged since: Boot will not need the replica's store.
func RestoredEarlier(workdir string, m *manifest.Manifest) bool {
	wd, err := filepath.Abs(workdir)
	return err == nil && restoredEarlier(wd, m) != ""
}

// restoredEarlier returns why the restore can be skipped, or "".
func restoredEarlier(wd string, m *manifest.Manifest) string {
	data, ok := readRecord(wd)
	if !ok {
		return ""
	}
	var rec restoreRecord
	if json.Unmarshal(data, &rec) != nil || rec.Manifest != manifestFingerprint(m) || len(rec.Files) != len(m.Files) {
		return ""
	}
	st, err := stamps(filepath.Join(wd, "bundle"), m)
	if err != nil {
		return ""
	}
	for p, s := range st {
		if rec.Files[p] != s {
			return ""
		}
	}
	return fmt.Sprintf("restored and verified earlier into %s; all %d files unchanged since (size, mtime, ctime, inode)", filepath.Join(wd, "bundle"), len(m.Files))
}
