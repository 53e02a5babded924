//go:build !linux && !darwin

package warm

import "os"

// changeStamp is zero where the platform's stat has no portable change time: the restore
// record then compares size and modification time only.
func changeStamp(fi os.FileInfo) (ctimeNs int64, ino uint64) { return 0, 0 }
