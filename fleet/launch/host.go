package launch

import (
	"os"
	"strconv"
	"strings"
)

// ThisHost names the machine and its boot, so that a pid recorded by a launcher (in a drill
// record, on a Kubernetes boot's owner object) is only ever compared on the host and boot it was
// recorded on.
func ThisHost() (host, boot string) {
	host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		boot = strings.TrimSpace(string(b))
	}
	return host, boot
}

// ProcStart is the start time of process pid (clock ticks since boot, from /proc), "" when there
// is no such process: a pid and its start time name one process, a reused pid another.
func ProcStart(pid int) string {
	st, s := procState(pid)
	if st == 0 {
		return ""
	}
	return s
}

func procState(pid int) (state byte, start string) {
	if pid <= 0 {
		return 0, ""
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces and parentheses
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, ""
	}
	return f[0][0], f[19] // state(3) … starttime(22)
}
