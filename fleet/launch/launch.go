package launch

import (
	"context"
	"strings"

	"lifeboat/manifest"
)

// Spec is what a launcher needs to start one candidate replica.
type Spec struct {
	ModelDir     string   // the restored model directory (vllm serve's positional argument)
	EngineConfig string   // the engine config YAML (vllm serve --config)
	Env          []string // KEY=VALUE pairs added to the launched process's environment
	// PassEnv names variables of Lifeboat's own environment passed to the replica as they are
	// (the fleet's launcher pass_env); nothing else of it is, beyond execlauncher.BaseEnvNames.
	PassEnv []string
	// Starting, when set, is told the replica's process group once the process exists and
	// before its command runs: the process waits for it, and an error (or this process dying)
	// ends it without running the command. A drill writes the group to its record there, so
	// that no candidate ever runs unrecorded.
	Starting func(Started) error
	LogPath  string // where stdout and stderr go; "" = a new file under os.TempDir()
	// DeployDir is the restored bundle's deployment part (the DR manifest's third part) and
	// Manifest the manifest that proves it: what a launcher that applies the bundle's own
	// deployment (Kubernetes) needs. Empty/nil when nothing was restored.
	DeployDir string
	Manifest  *manifest.Manifest
}

// Launcher starts a candidate replica. Launch returns once the replica has been started — not once
// it is ready: readiness is the prober's job (see warm.Probe). A Kubernetes launcher (apply the
// Deployment, wait for the pod, port-forward) fits the same two interfaces.
type Launcher interface {
	Launch(ctx context.Context, s Spec) (Instance, error)
}

// Instance is a launched (or pre-existing) replica.
type Instance interface {
	// BaseURL is where the OpenAI-compatible server listens, e.g. "http://127.0.0.1:41234".
	BaseURL() string
	// Exited is closed when the replica's process has exited; nil when the launcher does not
	// own a process (endpoint).
	Exited() <-chan struct{}
	// ExitErr is the exit status once Exited is closed (nil for a clean exit or no process).
	ExitErr() error
	// LogTail returns the last n lines of the replica's log ("" when there is none).
	LogTail(n int) string
	// Stop tears the replica down (no-op for endpoint). It is idempotent and waits until the
	// process group is gone or ctx is done.
	Stop(ctx context.Context) error
}

// ProcessGroup is an Instance that runs as a process group on this host (exec): a drill
// records the group, so that a clean-up after the drill's process died finds and stops it.
type ProcessGroup interface {
	Instance
	PGID() int
}

// LastLines is the last n lines of s, a trailing newline aside: what LogTail(n) returns of a log.
func LastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if n <= 0 || s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// MarkEnv is the environment variable that carries a candidate's Started.Mark.
const MarkEnv = "LIFEBOAT_CANDIDATE"

// Started is a replica process as Spec.Starting is told it, before its command runs.
//
// A launcher that starts no process here (kubernetes) tells it Namespace and Run instead, before
// it writes anything to the cluster: what its objects will be labelled with.
type Started struct {
	PGID    int    // its process group (its leader's pid)
	Start   string // the leader's start time (/proc/PID/stat field 22)
	BaseURL string // where it will serve
	// Mark is a random token the process and its children carry in their environment as
	// LIFEBOAT_CANDIDATE=<Mark>: what proves, from /proc/PID/environ, that a process group is
	// this candidate — a session id cannot, in a PID namespace (it reads 0 there).
	Mark string

	Namespace string // the namespace its objects go to (kubernetes)
	Run       string // the boot's run label on every object it applies (kubernetes)
}
