//go:build integration

package execlauncher

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/internal/sample"
	"lifeboat/internal/testbed"
	"lifeboat/verify/warm"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m)) }

// lifeboatBin is the real lifeboat binary (its engine-sim is the launched replica).
func lifeboatBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the lifeboat binary")
	}
	return testbed.LifeboatBinary(t)
}

func editFile(t *testing.T, p string, fn func(string) string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(fn(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// groupGone reports whether no process of the group is left.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

func TestExecLauncherEngineSim(t *testing.T) {
	bin := lifeboatBin(t)
	for _, tc := range []struct {
		name    string
		opts    sample.Options
		simArgs string
		breakIt func(t *testing.T, l *sample.Layout)
		probe   func(o *warm.ProbeOptions)
		want    warm.Verdict
		detail  string // in the reason (or the log tail for EXITED)
	}{
		{name: "warm", want: warm.Warm},
		{name: "warm AWQ without LoRA", opts: sample.Options{Quant: "awq", NoLoRA: true}, want: warm.Warm},
		{name: "no tokenizer", breakIt: func(t *testing.T, l *sample.Layout) {
			os.Remove(l.Path("model/tokenizer.json"))
		}, want: warm.Exited, detail: "Can't load tokenizer"},
		{name: "truncated shard", breakIt: func(t *testing.T, l *sample.Layout) {
			p := filepath.Join(l.ModelDir, l.Shards[1])
			st, _ := os.Stat(p)
			if err := os.Truncate(p, st.Size()-100); err != nil {
				t.Fatal(err)
			}
		}, want: warm.Exited, detail: "Error while deserializing header"},
		{name: "missing LoRA adapter", breakIt: func(t *testing.T, l *sample.Layout) {
			os.RemoveAll(l.Path("model/loras/" + sample.LoRAName))
		}, want: warm.Exited, detail: "Loading lora sql-lora failed"},
		{name: "quantization mismatch", opts: sample.Options{Quant: "awq", NoLoRA: true}, breakIt: func(t *testing.T, l *sample.Layout) {
			editFile(t, l.EngineFile, func(s string) string { return strings.Replace(s, "quantization: awq", "quantization: gptq", 1) })
		}, want: warm.Exited, detail: "does not match"},
		{name: "max-model-len over limit", breakIt: func(t *testing.T, l *sample.Layout) {
			editFile(t, l.EngineFile, func(s string) string { return strings.Replace(s, "max-model-len: 8192", "max-model-len: 200000", 1) })
		}, want: warm.Exited, detail: "greater than the derived max_model_len"},
		{name: "missing chat template", breakIt: func(t *testing.T, l *sample.Layout) {
			if err := l.MutateJSON("model/tokenizer_config.json", func(d map[string]any) error { delete(d, "chat_template"); return nil }); err != nil {
				t.Fatal(err)
			}
		}, want: warm.ChatFailed, detail: "HTTP 400"},
		{name: "missing chat template, completions only", breakIt: func(t *testing.T, l *sample.Layout) {
			if err := l.MutateJSON("model/tokenizer_config.json", func(d map[string]any) error { delete(d, "chat_template"); return nil }); err != nil {
				t.Fatal(err)
			}
		}, probe: func(o *warm.ProbeOptions) { o.CompletionsOnly = true }, want: warm.Warm},
		{name: "slow load", simArgs: "--sim-load-delay 2s", want: warm.Warm},
		{name: "saturated", simArgs: "--sim-saturate --sim-saturate-wait 300ms", want: warm.Saturated, detail: "num_requests_waiting"},
		{name: "saturated (slow too)", simArgs: "--sim-saturate", probe: func(o *warm.ProbeOptions) { o.TTFTBudget = time.Second }, want: warm.Saturated},
		{name: "engine dies", simArgs: "--sim-engine-dead-after 1", want: warm.EngineDead, detail: "EngineCore"},
		{name: "crashes", simArgs: "--sim-crash-after 1", want: warm.Exited, detail: "simulated crash"},
		{name: "slow TTFT", simArgs: "--sim-prefill-rate 20", probe: func(o *warm.ProbeOptions) { o.TTFTBudget = 100 * time.Millisecond }, want: warm.Slow, detail: "budget 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := sample.Generate(context.Background(), t.TempDir(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if tc.breakIt != nil {
				tc.breakIt(t, l)
			}
			la := &Launcher{Command: bin + " engine-sim {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}} " + tc.simArgs, Grace: 5 * time.Second}
			inst, err := la.Launch(context.Background(), launch.Spec{ModelDir: l.ModelDir, EngineConfig: l.EngineFile, LogPath: filepath.Join(t.TempDir(), "logs", "replica.log")})
			if err != nil {
				t.Fatal(err)
			}
			pgid := inst.(*execInstance).PGID()
			o := warm.ProbeOptions{Models: []string{sample.DefaultServedName}, Timeout: 60 * time.Second, RequestTimeout: 30 * time.Second, StallTimeout: 10 * time.Second}
			if !tc.opts.NoLoRA {
				o.LoRAs = []string{sample.LoRAName}
			}
			if tc.probe != nil {
				tc.probe(&o)
			}
			res := warm.ProbeInstance(context.Background(), inst, o)
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := inst.Stop(sctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			if !groupGone(pgid) {
				t.Errorf("process group %d still has members after Stop", pgid)
			}
			js, _ := json.MarshalIndent(res, "", "  ")
			where := res.Reason
			if tc.want == warm.Exited {
				where = res.LogTail
			}
			if res.Verdict != tc.want || !strings.Contains(where, tc.detail) {
				t.Fatalf("verdict %s, want %s with %q\n%s", res.Verdict, tc.want, tc.detail, js)
			}
			if tc.want == warm.Warm {
				tm := res.Timings
				if tm.ListenS == nil || tm.HealthyS == nil || tm.TTFTS == nil || tm.TokensPerS == nil || tm.WarmS == nil || *tm.TokensPerS <= 0 {
					t.Errorf("timings incomplete:\n%s", js)
				}
				if tc.simArgs != "" && *tm.ListenS < 2 {
					t.Errorf("listen_s %.3f with a 2 s load delay", *tm.ListenS)
				}
			}
			t.Logf("%s: %s", res.Verdict, res.Reason)
		})
	}
}

// TestExecLauncherStopsGroupOnCancel: cancelling the Launch context stops the whole process group,
// children included.
func TestExecLauncherStopsGroupOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	la := &Launcher{Command: `sh -c 'sleep 300 & sleep 300; echo never'`, Grace: 2 * time.Second}
	inst, err := la.Launch(ctx, launch.Spec{})
	if err != nil {
		t.Fatal(err)
	}
	pgid := inst.(*execInstance).PGID()
	defer os.Remove(inst.(*execInstance).LogPath())
	time.Sleep(100 * time.Millisecond)
	if groupGone(pgid) {
		t.Fatal("group not running")
	}
	cancel()
	select {
	case <-inst.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("not stopped after cancel")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			t.Fatal("group members left behind")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExecLauncherEarlyExit: an exit before listening is EXITED with the log tail, fast.
func TestExecLauncherEarlyExit(t *testing.T) {
	la := &Launcher{Command: `sh -c 'echo loading {{.ModelDir}}; echo "ValueError: boom" >&2; exit 3'`}
	inst, err := la.Launch(context.Background(), launch.Spec{ModelDir: "/m", LogPath: filepath.Join(t.TempDir(), "r.log")})
	if err != nil {
		t.Fatal(err)
	}
	res := warm.ProbeInstance(context.Background(), inst, warm.ProbeOptions{Models: []string{"m"}, Timeout: time.Minute})
	if res.Verdict != warm.Exited || !strings.Contains(res.LogTail, "loading /m\nValueError: boom") || !strings.Contains(res.Reason, "exit status 3") {
		t.Errorf("%+v", res)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestBaseEnv: a replica gets the allowlist and the names passed, nothing else of Lifeboat's
// environment.
func TestBaseEnv(t *testing.T) {
	got := BaseEnv([]string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "LANG=C.UTF-8", "LIFEBOAT_KEY_PASSWORD=x", "COSIGN_PASSWORD=y",
		"AWS_SECRET_ACCESS_KEY=z", "HF_TOKEN=t", "LC=no", "PATHX=no"}, []string{"HF_TOKEN"})
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "LANG=C.UTF-8", "HF_TOKEN=t"}
	if !slices.Equal(got, want) {
		t.Fatalf("BaseEnv: %v, want %v", got, want)
	}
}

// TestLaunchGate: with Starting, the command runs only after Starting returned nil; an error
// from it ends the process without running the command.
func TestLaunchGate(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	l := &Launcher{Command: "touch " + mark}
	_, err := l.Launch(context.Background(), launch.Spec{LogPath: filepath.Join(dir, "a.log"), Starting: func(st launch.Started) error {
		if st.PGID <= 1 || st.Start == "" {
			t.Errorf("Starting got %+v", st)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Error("the command ran before Starting returned")
		}
		return errors.New("record not written")
	}})
	if err == nil || !strings.Contains(err.Error(), "record not written") {
		t.Fatalf("Launch: %v", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the command ran although Starting failed")
	}
	inst, err := l.Launch(context.Background(), launch.Spec{LogPath: filepath.Join(dir, "b.log"), Starting: func(launch.Started) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	<-inst.Exited()
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the command did not run after Starting: %v", err)
	}
}

// TestReplicaLogNeverWritesThroughALink: a symbolic or hard link planted at the replica's log
// path once made root overwrite the file it pointed to.
func TestReplicaLogNeverWritesThroughALink(t *testing.T) {
	for _, kind := range []string{"symlink", "hardlink"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "shadow")
			os.WriteFile(victim, []byte("root:secret\n"), 0o600)
			logPath := filepath.Join(dir, "replica.log")
			if kind == "symlink" {
				os.Symlink(victim, logPath)
			} else {
				os.Link(victim, logPath)
			}
			l := &Launcher{Command: "/bin/sh -c 'echo overwritten'", Grace: time.Second}
			inst, err := l.Launch(context.Background(), launch.Spec{LogPath: logPath})
			if err != nil {
				t.Fatal(err)
			}
			<-inst.Exited()
			inst.Stop(context.Background())
			if b, _ := os.ReadFile(victim); string(b) != "root:secret\n" {
				t.Fatalf("the linked file was written: %q", b)
			}
			if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "overwritten") {
				t.Fatalf("the log is not at %s: %q", logPath, b)
			}
			if fi, _ := os.Lstat(logPath); fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("log mode %v: readable by others (launcher env and arguments end up in it)", fi.Mode())
			}
		})
	}
}
