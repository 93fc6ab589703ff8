package workspace

import (
	"errors"
	"syscall"

	udiff "github.com/aymanbagabas/go-udiff"
)

// unified is the unified diff of an edit of the file shown, with a/ and
// b/ labels as git writes them.
func unified(shown, before, after string) string {
	return udiff.Unified("a/"+shown, "b/"+shown, before, after)
}

// isErrno reports whether err wraps the system error n.
func isErrno(err error, n syscall.Errno) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && errno == n
}
