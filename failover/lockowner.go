package failover

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// LockOwner is the process that holds a lock: a holder on this host (same machine id, boot and
// pid namespace) whose pid is gone, or now names a process with another start time (the pid was
// reused), is dead.
type LockOwner struct {
	Machine string `json:"machine,omitempty"` // /etc/machine-id
	Boot    string `json:"boot,omitempty"`    // /proc/sys/kernel/random/boot_id
	PIDNS   string `json:"pid_ns,omitempty"`  // /proc/self/ns/pid, e.g. pid:[4026531836]
	PID     int    `json:"pid"`
	Start   uint64 `json:"start,omitempty"` // field 22 of /proc/PID/stat: clock ticks after boot
}

var self struct {
	once sync.Once
	o    *LockOwner
}

// thisOwner describes this process; fields it cannot learn stay empty (and then no one can judge
// it dead).
func thisOwner() *LockOwner {
	self.once.Do(func() {
		o := &LockOwner{PID: os.Getpid()}
		if runtime.GOOS == "linux" {
			o.Machine = firstOf(smallFile("/etc/machine-id"), smallFile("/var/lib/dbus/machine-id"))
			o.Boot = smallFile("/proc/sys/kernel/random/boot_id")
			o.PIDNS, _ = os.Readlink("/proc/self/ns/pid")
			o.Start, _, _ = procStart(o.PID)
		}
		self.o = o
	})
	c := *self.o
	return &c
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// smallFile is a short local file's first line (bounded), "" when it cannot be read.
func smallFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 256))
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}

// procStart reads a process's start time and state from /proc/PID/stat; exists false when
// there is no such process.
func procStart(pid int) (start uint64, state string, exists bool) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", !os.IsNotExist(err)
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	// "PID (COMM) S PPID ...": COMM may hold spaces and parentheses; the fields follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", true
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, "", true
	}
	start, _ = strconv.ParseUint(fields[19], 10, 64)
	return start, fields[0], true
}

// dead says whether o is a process on this host that no longer runs, and why; false when that
// cannot be known (another host, another boot is handled as dead, a missing field is not).
func (o *LockOwner) dead() (bool, string) {
	if o == nil || o.PID <= 0 || o.Machine == "" || o.Boot == "" || o.PIDNS == "" || o.Start == 0 {
		return false, ""
	}
	me := thisOwner()
	if me.Machine == "" || me.Boot == "" || me.PIDNS == "" || o.Machine != me.Machine || o.PIDNS != me.PIDNS {
		return false, "" // another host, or a pid namespace this process cannot see into
	}
	if o.Boot != me.Boot {
		return true, fmt.Sprintf("pid %d ran on this host before its last reboot", o.PID)
	}
	start, state, exists := procStart(o.PID)
	switch {
	case !exists:
		return true, fmt.Sprintf("pid %d no longer runs on this host", o.PID)
	case start == 0:
		return false, "" // unreadable
	case start != o.Start:
		return true, fmt.Sprintf("pid %d is now another process (started at tick %d, the holder at %d)", o.PID, start, o.Start)
	case state == "Z" || state == "X":
		return true, fmt.Sprintf("pid %d has exited (state %s)", o.PID, state)
	}
	return false, ""
}
