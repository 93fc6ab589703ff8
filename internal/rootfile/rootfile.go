// Package rootfile holds the file operations the workspace and code
// domains share on an [os.Root]: an atomic write and the test for the
// root's refusal of a path that leaves it.
package rootfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"
)

// MaxNameBytes is the longest file name the domains accept.
const MaxNameBytes = 255

// WriteAtomic writes content to name inside root through a temporary file
// in the same directory and a rename, so a reader never sees half a file
// and a symbolic link at name is replaced, never followed. The temporary
// file is removed when the write fails. Errors are the root's, unwrapped
// by nothing, for the caller to turn into its own.
func WriteAtomic(root *os.Root, name string, content []byte, perm fs.FileMode) error {
	dir, base := path.Split(name)
	var tmp string
	var f *os.File
	for i := 0; ; i++ {
		tmp = fmt.Sprintf("%s.%s.manglecp-%d.tmp", dir, base, time.Now().UnixNano()+int64(i))
		if len(path.Base(tmp)) > MaxNameBytes {
			tmp = fmt.Sprintf("%s.manglecp-%d.tmp", dir, time.Now().UnixNano()+int64(i))
		}
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || i > 10 {
			return err
		}
	}
	_, err := f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// IsEscape reports whether err is an [os.Root]'s refusal of a path that
// leads outside the root (os does not export that error).
func IsEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
