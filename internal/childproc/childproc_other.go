//go:build !linux

package childproc

import "syscall"

// Attr returns attributes for a child in its own process group when group is set. Without
// Pdeathsig the child outlives a killed parent; callers stop it on their normal paths.
func Attr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
