package execlauncher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"lifeboat/fleet/launch"
	"lifeboat/internal/base/wait"
	"lifeboat/providers"
)

// Launcher runs a command template on this host. The template is split into argv like a
// shell would (single quotes, double quotes, backslash escapes; no shell is run, no expansion),
// then each {{.Field}} of Vars in a word is replaced by its value (plain substitution, no
// template language), so a model directory with spaces stays one argument. Example:
//
//	vllm serve {{.ModelDir}} --config {{.EngineConfig}} --host {{.Host}} --port {{.Port}}
type Launcher struct {
	Command string        // the command template (required)
	Host    string        // loopback address to bind; default "127.0.0.1"
	Port    int           // 0 = pick a free port
	Env     []string      // KEY=VALUE added after the base environment and before Spec.Env
	Grace   time.Duration // SIGTERM → SIGKILL grace on Stop; default 10s
}

// Launch starts the command in its own process group. Cancelling ctx stops it (like Stop).
func (l *Launcher) Launch(ctx context.Context, s launch.Spec) (launch.Instance, error) {
	host := l.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := l.Port
	if port == 0 {
		p, err := freeLoopbackPort(host)
		if err != nil {
			return nil, fmt.Errorf("exec launcher: pick a free port: %w", err)
		}
		port = p
	}
	argv, err := l.CommandArgs(Vars{ModelDir: s.ModelDir, EngineConfig: s.EngineConfig, Host: host, Port: port})
	if err != nil {
		return nil, err
	}
	logPath := s.LogPath
	var logf *os.File
	if logPath == "" {
		logf, err = os.CreateTemp("", "lifeboat-replica-*.log")
	} else {
		logf, err = createLog(logPath)
	}
	if err != nil {
		return nil, fmt.Errorf("exec launcher: log file: %w", err)
	}
	baseURL := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	name, args := argv[0], argv[1:]
	var gateR, gateW *os.File
	if s.Starting != nil {
		// The command runs only once the gate (fd 3) says so: sh waits on it, then execs the
		// command in the same process (same pid, start time and group). argv is passed as "$@":
		// nothing in it is expanded.
		if gateR, gateW, err = os.Pipe(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("exec launcher: %w", err)
		}
		defer gateR.Close()
		defer gateW.Close()
		name, args = "/bin/sh", append([]string{"-c", gateScript, "lifeboat-gate"}, argv...)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(BaseEnv(os.Environ(), s.PassEnv), l.Env...), s.Env...)
	mark := ""
	if s.Starting != nil {
		if mark, err = newMark(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("exec launcher: %w", err)
		}
		cmd.Env = append(cmd.Env, launch.MarkEnv+"="+mark) // last: nothing configured overrides it
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if gateR != nil {
		cmd.ExtraFiles = []*os.File{gateR}
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("exec launcher: start %s: %w", argv[0], err)
	}
	if gateW != nil {
		_ = gateR.Close()
		pid := cmd.Process.Pid
		err := s.Starting(launch.Started{PGID: pid, Start: launch.ProcStart(pid), BaseURL: baseURL, Mark: mark})
		if err == nil {
			_, err = gateW.Write([]byte("run\n"))
		}
		if err != nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = cmd.Wait()
			logf.Close()
			return nil, fmt.Errorf("exec launcher: %s not started: %w", argv[0], err)
		}
	}
	grace := l.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	inst := &execInstance{
		cmd: cmd, pgid: cmd.Process.Pid, logPath: logf.Name(), grace: grace,
		baseURL: baseURL,
		exited:  make(chan struct{}),
		secrets: append(secretValues(l.Env, s.Env), providers.SecretFlagValues(argv)...),
	}
	go func() {
		err := cmd.Wait()
		logf.Close()
		inst.exitErr = err
		close(inst.exited)
	}()
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				sctx, cancel := context.WithTimeout(context.Background(), grace+5*time.Second)
				defer cancel()
				_ = inst.Stop(sctx)
			case <-inst.exited:
			}
		}()
	}
	return inst, nil
}

// gateScript waits for "run" on fd 3 before exec'ing its arguments; anything else (EOF: the
// launching process died before recording the replica) exits 125 without running them.
const gateScript = `IFS= read -r go <&3 && [ "$go" = run ] || exit 125; exec 3<&-; exec "$@"`

// BaseEnvNames are the variables of Lifeboat's own environment a replica gets: the search path,
// home, temp dir, time zone and locale. Everything else (keys, passwords, cloud credentials,
// webhook URLs) stays home unless the fleet's launcher names it in pass_env or sets it in env.
var BaseEnvNames = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_*"}

// BaseEnv is environ cut down to BaseEnvNames and the names in pass.
func BaseEnv(environ, pass []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		keep := slices.Contains(pass, k)
		for _, n := range BaseEnvNames {
			keep = keep || k == n || strings.HasSuffix(n, "*") && strings.HasPrefix(k, strings.TrimSuffix(n, "*"))
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

type execInstance struct {
	cmd     *exec.Cmd
	pgid    int
	logPath string
	baseURL string
	grace   time.Duration
	exited  chan struct{}
	exitErr error // written before exited is closed
	secrets []string
	stopMu  sync.Mutex
}

func (e *execInstance) BaseURL() string         { return e.baseURL }
func (e *execInstance) Exited() <-chan struct{} { return e.exited }

var _ launch.ProcessGroup = (*execInstance)(nil)

// PGID is the process group of the replica (its leader's pid).
func (e *execInstance) PGID() int { return e.pgid }

// createLog makes a fresh log file at p: whatever is there is removed first and the new file is
// created exclusively without following links, so a symbolic or hard link planted at p never makes
// us write (as root, perhaps) into the file it points to.
func createLog(p string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
}

// LogPath is the file holding the replica's stdout and stderr.
func (e *execInstance) LogPath() string { return e.logPath }

func (e *execInstance) ExitErr() error {
	select {
	case <-e.exited:
		return e.exitErr
	default:
		return nil
	}
}

// LogTail is the end of the replica's log with every secret removed: the values of the
// launcher's secret-named env (HF_TOKEN…), and what providers.Redact removes.
func (e *execInstance) LogTail(n int) string {
	return providers.RedactValues(tailFile(e.logPath, n), e.secrets)
}

// secretValues are the values of the secret-named KEY=VALUE pairs of env.
func secretValues(env ...[]string) []string {
	var out []string
	for _, kvs := range env {
		for _, kv := range kvs {
			if k, v, ok := strings.Cut(kv, "="); ok && providers.SecretEnvName(k) {
				out = append(out, v)
			}
		}
	}
	return out
}

// Stop sends SIGTERM to the whole process group, then SIGKILL after the grace period (or when ctx
// ends first), and waits for the leader to be reaped. Members that outlive the leader get SIGKILL.
func (e *execInstance) Stop(ctx context.Context) error {
	e.stopMu.Lock()
	defer e.stopMu.Unlock()
	select {
	case <-e.exited:
	default:
		_ = syscall.Kill(-e.pgid, syscall.SIGTERM)
		t := time.NewTimer(e.grace)
		select {
		case <-e.exited:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	_ = syscall.Kill(-e.pgid, syscall.SIGKILL) // stragglers in the group; ESRCH when none
	select {
	case <-e.exited:
	case <-ctx.Done():
		return fmt.Errorf("exec launcher: stop pid %d: %w", e.pgid, ctx.Err())
	}
	// Wait (bounded) until no member of the group is left.
	for syscall.Kill(-e.pgid, 0) == nil {
		if err := wait.Sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("exec launcher: process group %d still alive: %w", e.pgid, err)
		}
	}
	return nil
}

func freeLoopbackPort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailFile returns the last n lines of the file (reading at most its last 64 KiB).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-maxTail, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return ""
	}
	return launch.LastLines(string(data), n)
}

// newMark is a candidate's random mark (launch.Started.Mark): 32 hex digits.
func newMark() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("candidate mark: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
