package childproc

import "syscall"

// Attr returns attributes for a child that dies with this process; group puts it in a new
// process group, so that a signal to -pid reaches everything it started.
func Attr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGKILL}
}
