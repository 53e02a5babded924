package lockowner

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// LockOwner is the process that holds a lock, as its holder recorded it: the host's machine id,
// the boot of its kernel, its pid namespace, its pid and its start time. Only an observer on the
// same host, boot and pid namespace can look at that pid; for any other the holder's liveness
// cannot be told (see OwnerChecker).
type Owner struct {
	Machine string `json:"machine,omitempty"` // /etc/machine-id
	Boot    string `json:"boot,omitempty"`    // /proc/sys/kernel/random/boot_id
	PIDNS   string `json:"pid_ns,omitempty"`  // /proc/self/ns/pid, e.g. pid:[4026531836]
	PID     int    `json:"pid"`
	Start   uint64 `json:"start,omitempty"` // field 22 of /proc/PID/stat: clock ticks after boot
}

// Liveness is what an observer can tell about a lock holder's process.
type Liveness int

const (
	// CannotTell: another host, an earlier boot of this one, another pid namespace, a record or a
	// host that does not identify itself, or a process that exists but whose start time cannot be
	// read (/proc mounted hidepid, another user's process). A lock so held is waited out: taken
	// over only once its record stayed unchanged for its TTL on the observer's own clock.
	CannotTell Liveness = iota
	// Alive: the recorded process runs (the pid exists, with the recorded start time).
	Alive
	// Gone: the recorded process provably no longer runs: kill(pid, 0) answers ESRCH, or the pid
	// now names a process with another start time, or the process is a zombie.
	Gone
)

func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Gone:
		return "gone"
	}
	return "cannot tell"
}

// OwnerChecker judges whether a lock holder's process still runs, from this host. The zero value
// looks at this host for real (on Linux: /proc and kill(2); elsewhere it cannot tell); each field
// replaces one source, for tests.
type Checker struct {
	// Self is this process as a LockOwner; nil: this host's identity.
	Self *Owner
	// ReadStat returns /proc/PID/stat; nil: the real file (Linux).
	ReadStat func(pid int) ([]byte, error)
	// Signal0 is kill(pid, 0): nil error or EPERM when the process exists, ESRCH when it does
	// not; nil: the real system call (Linux).
	Signal0 func(pid int) error
}

// JudgeOwner is what this host can tell of o: Gone only when proven, CannotTell whenever it
// cannot be known. It is the one judgement every package uses before breaking or taking over a
// lock (failover resume and abort, failover status, drill cleanup).
func Judge(o *Owner) (Liveness, string) { return (&Checker{}).Judge(o) }

// Judge says whether o runs, and why. Gone needs the same machine id, the same boot and the same
// pid namespace as this process — a different boot id is another host that shares the machine
// id (a cloned VM) as much as an earlier boot of this one, so it cannot be told — and then either
// kill(pid, 0) answering ESRCH, or the pid's start time differing from the recorded one, or the
// process being a zombie. EPERM means the process exists (another user's); a start time that
// cannot be read (hidepid) leaves it CannotTell.
func (c *Checker) Judge(o *Owner) (Liveness, string) {
	if o == nil || o.PID <= 0 || o.Machine == "" || o.Boot == "" || o.PIDNS == "" || o.Start == 0 {
		return CannotTell, "the lock record does not identify its holder's process"
	}
	me := c.Self
	if me == nil {
		me = ThisOwner()
	}
	switch {
	case me.Machine == "" || me.Boot == "" || me.PIDNS == "":
		return CannotTell, "this host cannot identify itself (machine id, boot id, pid namespace)"
	case o.Machine != me.Machine:
		return CannotTell, fmt.Sprintf("pid %d runs on another host", o.PID)
	case o.Boot != me.Boot:
		return CannotTell, fmt.Sprintf("pid %d ran on another host with this machine id, or on this host before its last reboot: cannot tell which", o.PID)
	case o.PIDNS != me.PIDNS:
		return CannotTell, fmt.Sprintf("pid %d runs in another pid namespace (%s)", o.PID, o.PIDNS)
	}
	return c.JudgeProcess(o.PID, o.Start)
}

// JudgeProcess is what this host can tell of process pid started at start (field 22 of
// /proc/PID/stat), once the caller knows pid names a process of this host, boot and pid
// namespace: Gone only on kill(pid, 0) answering ESRCH, a different start time or a zombie;
// CannotTell whenever the start time cannot be read (hidepid, another user's process) or, for a
// pid that exists, start is unknown (0). JudgeOwner and drill cleanup's judgement of a drill's own process both rest on it.
func JudgeProcess(pid int, start uint64) (Liveness, string) {
	return (&Checker{}).JudgeProcess(pid, start)
}

// JudgeProcess is JudgeProcess with c's sources.
func (c *Checker) JudgeProcess(pid int, start uint64) (Liveness, string) {
	if pid <= 0 {
		return CannotTell, fmt.Sprintf("pid %d: the record does not identify the process", pid)
	}
	signal0 := c.Signal0
	if signal0 == nil {
		signal0 = signalZero
	}
	switch err := signal0(pid); {
	case errors.Is(err, errNoProcess): // no process has the pid: whatever start time was recorded
		return Gone, fmt.Sprintf("pid %d no longer runs on this host", pid)
	case err != nil && !errors.Is(err, errNotPermitted):
		return CannotTell, fmt.Sprintf("pid %d: kill(0): %v", pid, err)
	case start == 0:
		return CannotTell, fmt.Sprintf("pid %d exists, and the record names no start time to tell whether it is the recorded process", pid)
	}
	readStat := c.ReadStat
	if readStat == nil {
		readStat = ReadProcStat
	}
	b, err := readStat(pid)
	if err != nil {
		return CannotTell, fmt.Sprintf("pid %d exists, but its start time cannot be read (%v): it may be the recorded process", pid, err)
	}
	got, state, ok := ParseProcStat(b)
	switch {
	case !ok:
		return CannotTell, fmt.Sprintf("pid %d exists, but its /proc stat cannot be read", pid)
	case got != start:
		return Gone, fmt.Sprintf("pid %d is now another process (started at tick %d, the recorded one at %d)", pid, got, start)
	case state == "Z" || state == "X":
		return Gone, fmt.Sprintf("pid %d has exited (state %s)", pid, state)
	}
	return Alive, fmt.Sprintf("pid %d runs, with the recorded start time", pid)
}

// IsGone is Judge reduced to what a taker acts on: true (and why) only when o provably no longer
// runs.
func (c *Checker) IsGone(o *Owner) (bool, string) {
	if l, why := c.Judge(o); l == Gone {
		return true, why
	}
	return false, ""
}

// parseProcStat reads the start time (field 22) and the state (field 3) of /proc/PID/stat.
func ParseProcStat(b []byte) (start uint64, state string, ok bool) {
	// "PID (COMM) S PPID ...": COMM may hold spaces and parentheses; the fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, "", false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil || start == 0 {
		return 0, "", false
	}
	return start, fields[0], true
}
