//go:build unix

package browser

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ownedBySelf checks that the server's user owns the directory.
func ownedBySelf(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("it is owned by uid %d, not by the server's uid %d", st.Uid, os.Geteuid())
	}
	return nil
}
