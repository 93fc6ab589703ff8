package transport

import (
	"bufio"
	"context"
	"io"
	"sync"

	"github.com/manglecp/manglecp/protocol"
)

// StdioConn frames messages as lines (Spec 02 section 4.3): one JSON
// message per line on r, answers as lines on w. A line longer than limit
// is skipped and reported as message_too_large without being buffered.
type StdioConn struct {
	r     *bufio.Reader
	w     io.Writer
	limit int64
	close func() error
	once  sync.Once
}

// NewStdioConn reads lines from r and writes lines to w. closeFn, if not
// nil, is called once by Close.
func NewStdioConn(r io.Reader, w io.Writer, limit int64, closeFn func() error) *StdioConn {
	return &StdioConn{r: bufio.NewReaderSize(r, 64<<10), w: w, limit: limit, close: closeFn}
}

// ReadMessage returns the next non-empty line without its newline. The
// context is not consulted: closing the reader ends a blocked read.
func (c *StdioConn) ReadMessage(context.Context) ([]byte, error) {
	for {
		var line []byte
		tooLong := false
		for {
			chunk, err := c.r.ReadSlice('\n')
			if !tooLong {
				if int64(len(line)+len(chunk)) > c.limit+1 { // +1: the newline
					tooLong, line = true, nil
				} else {
					line = append(line, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				if err == io.EOF && len(line) > 0 && !tooLong {
					return trimLine(line), nil // a last line without newline
				}
				if err == io.EOF && tooLong {
					return nil, protocol.MessageTooLarge(c.limit, -1)
				}
				return nil, err
			}
			break
		}
		if tooLong {
			return nil, protocol.MessageTooLarge(c.limit, -1)
		}
		if msg := trimLine(line); len(msg) > 0 {
			return msg, nil
		}
	}
}

func trimLine(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// WriteMessage writes msg and a newline in one write.
func (c *StdioConn) WriteMessage(_ context.Context, msg []byte) error {
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, err := c.w.Write(buf)
	return err
}

// Close calls the close function given to NewStdioConn, once.
func (c *StdioConn) Close() error {
	var err error
	c.once.Do(func() {
		if c.close != nil {
			err = c.close()
		}
	})
	return err
}
