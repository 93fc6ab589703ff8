// Package tailbuf keeps the last bytes written to a writer: the tail of a
// child process's standard error, quoted in the message when the process
// fails (the client's stdio transport, the conformance runner's).
package tailbuf

import (
	"io"
	"sync"
)

// Buffer keeps the last Max bytes written to it. It is safe for
// concurrent use.
type Buffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the tail of what was written so far, with p; it never
// fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String returns the kept bytes.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*Buffer)(nil)
