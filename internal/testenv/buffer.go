package testenv

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that is safe for concurrent use: the log sink
// of a server under test, which its goroutines write while the test reads.
// The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of what was written so far.
func (s *Buffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// Take returns what was written so far and empties the buffer.
func (s *Buffer) Take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}
