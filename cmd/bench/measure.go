package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lifeboat/internal/childproc"
	"lifeboat/internal/emulators"
)

// outcome is one finished command: wall time, peak resident memory, CPU time, exit code and
// captured output.
type outcome struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	maxRSS int64         // bytes
	code   int           // exit code; -1 if it did not start or was killed
	stdout string
	stderr string
	err    error // only for "could not run at all"
}

// command is a command line with the environment it needs on top of the bench's own.
type command struct {
	argv []string
	env  []string
}

// shim is the maxrss program (see cmd/bench/maxrss) every measured command runs under, so
// that its peak memory is its own and not the bench's; built by buildShim.
var shim string

// buildShim builds the maxrss program into dir.
func buildShim(ctx context.Context, goTool, dir string) error {
	root, err := emulators.RepoRoot()
	if err != nil {
		return err
	}
	shim = filepath.Join(dir, "maxrss")
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", shim, "./cmd/bench/maxrss")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building cmd/bench/maxrss: %v\n%s", err, out)
	}
	return nil
}

// run runs c under the maxrss shim, output captured, and measures it: wall time, CPU time and
// peak memory are the command's own (the shim's start-up is not counted). A non-zero exit is not
// an error here: callers decide what an exit code means (rclone check exits 1 for differences,
// lifeboat verify 1 for a broken replica).
func (c command) run(ctx context.Context) outcome {
	res, err := os.CreateTemp("", "lifeboat-bench-maxrss-")
	if err != nil {
		return outcome{code: -1, err: err}
	}
	res.Close()
	defer os.Remove(res.Name())
	cmd := exec.CommandContext(ctx, shim, append([]string{res.Name()}, c.argv...)...)
	cmd.Env = append(os.Environ(), c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Killed with the bench if the bench dies (and the command with the shim).
	cmd.SysProcAttr = childproc.Attr(false)
	start := time.Now()
	err = cmd.Run()
	o := outcome{wall: time.Since(start), code: -1, stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		o.err = err
	}
	if ctx.Err() != nil {
		o.err = ctx.Err()
	}
	if o.err != nil {
		return o
	}
	var rssKB, floorKB, wallNS, cpuNS int64
	data, _ := os.ReadFile(res.Name())
	if _, err := fmt.Sscan(string(data), &rssKB, &floorKB, &wallNS, &o.code, &cpuNS); err != nil {
		o.err = fmt.Errorf("%s did not run (%v): %s", c.argv[0], err, strings.TrimSpace(o.stderr))
		return o
	}
	if o.code == 127 && rssKB == 0 {
		o.err = fmt.Errorf("%s could not be started: %s", c.argv[0], strings.TrimSpace(o.stderr))
	}
	o.wall, o.cpu, o.maxRSS = time.Duration(wallNS), time.Duration(cpuNS), rssKB*1024
	return o
}

// round is one timed run of a contender: its commands, one after another or all at once.
type round struct {
	wall   time.Duration // sequential: the sum; concurrent: the slowest command
	cpu    time.Duration // the commands' CPU time
	host   time.Duration // CPU time the whole machine spent meanwhile (every process)
	others map[string]time.Duration
	outs   []outcome
}

// series is the timed rounds of one contender.
type series struct {
	rounds []round
	maxRSS int64
}

func (s *series) median() time.Duration {
	if len(s.rounds) == 0 {
		return 0
	}
	w := make([]time.Duration, len(s.rounds))
	for i, r := range s.rounds {
		w[i] = r.wall
	}
	slices.Sort(w)
	return w[len(w)/2]
}

// last is the last round's outcomes.
func (s *series) last() []outcome { return s.rounds[len(s.rounds)-1].outs }

// mean averages f over the rounds.
func (s *series) mean(f func(round) time.Duration) time.Duration {
	var sum time.Duration
	for _, r := range s.rounds {
		sum += f(r)
	}
	return sum / time.Duration(max(1, len(s.rounds)))
}

// contender is one tool being timed.
type contender struct {
	name       string
	concurrent bool // cmds all at once (else one after another)
	cmds       []command
	// before, if set, runs untimed at the start of each of its rounds (re-warming the page cache).
	before func() error
	s      series
}

// watched are processes whose CPU time each round records besides the commands': the
// emulators. pid 0 is the bench itself (fake-gcs-server runs in it).
var watched = map[string]int{}

// interleave times the contenders `runs` rounds each, round-robin — A B C A B C … — so that a
// burst of load from elsewhere on the machine hits them all alike. warmup rounds run first and
// are not counted.
func interleave(ctx context.Context, runs, warmup int, cs ...*contender) error {
	for i := range warmup + runs {
		for _, c := range cs {
			r, err := runRound(ctx, c)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if i >= warmup {
				c.s.rounds = append(c.s.rounds, r)
				for _, o := range r.outs {
					c.s.maxRSS = max(c.s.maxRSS, o.maxRSS)
				}
			}
		}
	}
	return nil
}

func runRound(ctx context.Context, c *contender) (round, error) {
	r := round{outs: make([]outcome, len(c.cmds)), others: map[string]time.Duration{}}
	if c.before != nil {
		if err := c.before(); err != nil {
			return r, err
		}
	}
	host0 := hostBusy()
	others0 := map[string]time.Duration{}
	for name, pid := range watched {
		others0[name] = procCPU(pid)
	}
	if c.concurrent {
		var wg sync.WaitGroup
		for i, cmd := range c.cmds {
			wg.Add(1)
			go func() { defer wg.Done(); r.outs[i] = cmd.run(ctx) }()
		}
		wg.Wait()
	} else {
		for i, cmd := range c.cmds {
			r.outs[i] = cmd.run(ctx)
		}
	}
	r.host = hostBusy() - host0
	for name, pid := range watched {
		r.others[name] = procCPU(pid) - others0[name]
	}
	for i, o := range r.outs {
		if o.err != nil {
			return r, fmt.Errorf("%s: %w", c.cmds[i].argv[0], o.err)
		}
		r.cpu += o.cpu
		if c.concurrent {
			r.wall = max(r.wall, o.wall)
		} else {
			r.wall += o.wall
		}
	}
	return r, nil
}

// clockTick is USER_HZ, the unit of /proc CPU times (100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// hostBusy is the CPU time the machine has spent outside idle and iowait since boot (/proc/stat).
func hostBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal …
	var busy int64
	for i, v := range f {
		if i == 0 || i == 4 || i == 5 || i > 8 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * clockTick
}

// procCPU is the user + system time of a process and its waited-for children; for pid 0, of this
// process alone.
func procCPU(pid int) time.Duration {
	name := "/proc/self/stat"
	if pid != 0 {
		name = "/proc/" + strconv.Itoa(pid) + "/stat"
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3 (state); utime is field 14
	fields := []int{11, 12, 13, 14}         // utime, stime, cutime, cstime
	if pid == 0 {
		fields = fields[:2] // our children are the measured commands, counted apart
	}
	var ticks int64
	for _, k := range fields {
		if k < len(f) {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * clockTick
}

// findPID returns the process whose command line holds every one of words in sequence, or 0.
func findPID(words ...string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(data), "\x00")
		for i := range args {
			if i+len(words) <= len(args) && slices.Equal(args[i:i+len(words)], words) {
				return pid
			}
		}
	}
	return 0
}

// loadavg is the 1-minute load average.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// redactor removes secrets from anything the bench prints.
type redactor []string

func (r redactor) clean(s string) string {
	for _, secret := range r {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "<redacted>")
		}
	}
	return s
}

// tail returns the last n non-empty lines of s, each indented.
func tail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, "      "+strings.TrimRight(l, " \r"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func mb(b int64) string { return fmt.Sprintf("%.1f", float64(b)/1e6) }

// cpuBreakdown says where the machine's CPU time went during a contender's rounds (means per
// round): the tool's own processes, each emulator, and everything else running on the machine.
func cpuBreakdown(c *contender, emulators ...string) string {
	wall := c.s.mean(func(r round) time.Duration { return r.wall })
	tool := c.s.mean(func(r round) time.Duration { return r.cpu })
	host := c.s.mean(func(r round) time.Duration { return r.host })
	rest := host - tool
	var parts []string
	for _, name := range emulators {
		if _, ok := watched[name]; !ok {
			continue
		}
		d := c.s.mean(func(r round) time.Duration { return r.others[name] })
		rest -= d
		parts = append(parts, fmt.Sprintf("%s %.2f", name, d.Seconds()))
	}
	out := fmt.Sprintf("%.2fs wall × %d CPUs = %.2f CPU-s; used: the tool %.2f", wall.Seconds(), runtime.NumCPU(),
		wall.Seconds()*float64(runtime.NumCPU()), tool.Seconds())
	if len(parts) > 0 {
		out += ", " + strings.Join(parts, ", ")
	}
	return out + fmt.Sprintf(", anything else on the machine %.2f", max(0, rest).Seconds())
}
