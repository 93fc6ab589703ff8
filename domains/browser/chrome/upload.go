package chrome

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// errNotRegular is a name in the upload directory that is not a regular
// file (a directory, a FIFO, a socket, a device).
var errNotRegular = errors.New("not a regular file")

// regularFile returns the file info of name in root when it is a regular
// file, without ever blocking: the type is checked before the file is
// opened (opening a FIFO for reading waits for a writer: an upload of a
// FIFO in the upload directory hung the call), and the open is
// non-blocking, so a FIFO swapped in between is refused too (the opened
// file must be the regular file that was checked).
func regularFile(root *os.Root, name string) (fs.FileInfo, error) {
	fi, err := root.Stat(name) // follows symbolic links, inside root only
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opened, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !opened.Mode().IsRegular() || !os.SameFile(fi, opened) {
		return nil, errNotRegular
	}
	return opened, nil
}
