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

// ReadMessage returns the next non-empty line without its line ending
// (LF or CRLF). A message longer than limit is skipped and reported as an
// [*OversizeError] (message_too_large, with the line's first bytes); at most
// limit+2 bytes of a line are ever buffered.
// The context is not consulted: closing the reader ends a blocked read.
func (c *StdioConn) ReadMessage(context.Context) ([]byte, error) {
	for {
		var line, prefix []byte
		tooLong, eof := false, false
		for {
			chunk, err := c.r.ReadSlice('\n')
			if !tooLong {
				if int64(len(line)+len(chunk)) > c.limit+2 { // room for CR LF
					line = append(line, chunk[:min(len(chunk), max(0, OversizePrefixBytes-len(line)))]...)
					prefix = append([]byte(nil), line[:min(len(line), OversizePrefixBytes)]...)
					tooLong, line = true, nil
				} else {
					line = append(line, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				return nil, err
			}
			break
		}
		body := line
		if n := len(body); n > 0 && body[n-1] == '\n' {
			body = body[:n-1]
		}
		msg := trimLine(body)
		if tooLong || int64(len(body)) > c.limit+1 || int64(len(msg)) > c.limit { // one CR may end a line
			if !tooLong {
				prefix = append([]byte(nil), body[:min(len(body), OversizePrefixBytes)]...)
			}
			return nil, &OversizeError{Err: protocol.MessageTooLarge(c.limit, -1), Prefix: prefix}
		}
		if len(msg) > 0 {
			return msg, nil
		}
		if eof {
			return nil, io.EOF
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
