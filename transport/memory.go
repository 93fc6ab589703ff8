package transport

import (
	"context"
	"io"
	"sync"
)

// NewMemoryPair returns two connected in-memory Conns: what one writes the
// other reads. It lets a client and a server talk in one process, for tests
// and embedding. Close is a half-close, like closing stdin: the other end
// reads io.EOF after the messages already sent, and may still answer.
func NewMemoryPair() (Conn, Conn) {
	ab, ba := newPipe(), newPipe()
	return &memConn{in: ba, out: ab}, &memConn{in: ab, out: ba}
}

// pipe is one direction of a pair.
type pipe struct {
	ch   chan []byte
	done chan struct{}
	once sync.Once
}

func newPipe() *pipe { return &pipe{ch: make(chan []byte, 64), done: make(chan struct{})} }

type memConn struct {
	in, out *pipe
}

// ReadMessage returns the next message, io.EOF once the other end closed
// and everything it sent was read, or ctx's error.
func (c *memConn) ReadMessage(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in.ch:
		return m, nil
	case <-c.in.done:
		select {
		case m := <-c.in.ch:
			return m, nil
		default:
			return nil, io.EOF
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// WriteMessage hands a copy of msg to the other end.
func (c *memConn) WriteMessage(ctx context.Context, msg []byte) error {
	cp := append([]byte(nil), msg...)
	select {
	case <-c.out.done:
		return io.ErrClosedPipe
	default:
	}
	select {
	case c.out.ch <- cp:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends this side's writing; it may be called more than once.
func (c *memConn) Close() error {
	c.out.once.Do(func() { close(c.out.done) })
	return nil
}
