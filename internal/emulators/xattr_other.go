//go:build !linux

package emulators

// supportsXattr is false where the standard library has no Setxattr: versitygw then keeps its
// metadata in a sidecar directory.
func supportsXattr(dir string) bool { return false }
