package transport

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAllMatchesIOReadAll: reading a body into a buffer of its
// declared length gives what io.ReadAll gives, whatever the declared
// length says and whatever buffer it is given to reuse, and passes the
// reader's error on.
func TestReadAllMatchesIOReadAll(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4096, 100_000} {
		body := strings.Repeat("x", n)
		for _, declared := range []int64{-1, 0, int64(n), int64(n) + 10, int64(n) / 2} {
			for _, room := range []int{0, 100, 200_000} {
				buf := bytes.Repeat([]byte("y"), room) // stale bytes: none may show
				got, err := readAll(iotest.HalfReader(strings.NewReader(body)), declared, 1<<20, buf)
				if err != nil || !bytes.Equal(got, []byte(body)) {
					t.Errorf("n=%d declared=%d room=%d: %d bytes, %v", n, declared, room, len(got), err)
				}
				if fits := int64(room) > max(declared, 511); fits && n > 0 && n < room && &got[:1][0] != &buf[0] {
					t.Errorf("n=%d declared=%d room=%d: a buffer with room was not reused", n, declared, room)
				}
			}
		}
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), 10, 100, nil); err != io.ErrUnexpectedEOF {
		t.Errorf("error %v, want the reader's", err)
	}
}
