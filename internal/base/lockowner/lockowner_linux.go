package lockowner

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

var (
	errNoProcess    error = syscall.ESRCH
	errNotPermitted error = syscall.EPERM
)

func signalZero(pid int) error { return syscall.Kill(pid, 0) }

// readProcStat reads /proc/PID/stat, bounded.
func ReadProcStat(pid int) ([]byte, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}

var self struct {
	once sync.Once
	o    *Owner
}

// thisOwner describes this process; fields it cannot learn stay empty (and then no one can judge
// it gone). Read once: a process's identity does not change while it runs.
func ThisOwner() *Owner {
	self.once.Do(func() {
		o := &Owner{PID: os.Getpid()}
		o.Machine = firstOf(smallFile("/etc/machine-id"), smallFile("/var/lib/dbus/machine-id"))
		o.Boot = smallFile("/proc/sys/kernel/random/boot_id")
		o.PIDNS, _ = os.Readlink("/proc/self/ns/pid")
		if b, err := ReadProcStat(o.PID); err == nil {
			o.Start, _, _ = ParseProcStat(b)
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
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line)
}
