package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
)

// maxMessageBytes bounds one message read from a server: a larger
// Content-Length ends the connection before anything is allocated.
const maxMessageBytes = 64 << 20

// ErrClosed is returned by calls on a connection that has ended (the
// server exited, was killed, or sent something that is not LSP).
var ErrClosed = errors.New("lsp: connection closed")

// ResponseError is an error a server answered a request with.
type ResponseError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("lsp: server error %d: %s", e.Code, e.Message)
}

// RequestHandler answers a request the server sends to the client
// (workspace/configuration, window/workDoneProgress/create, ...). It
// returns the result, or an error answered as a JSON-RPC error.
type RequestHandler func(method string, params json.RawMessage) (any, error)

// NotificationHandler receives a notification the server sends
// (textDocument/publishDiagnostics, window/logMessage, ...).
type NotificationHandler func(method string, params json.RawMessage)

// wire is one JSON-RPC 2.0 message in either direction.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *ResponseError  `json:"error,omitempty"`
}

type reply struct {
	result json.RawMessage
	err    error
}

// Conn is a JSON-RPC 2.0 connection with LSP's base protocol framing
// (Content-Length headers) over a byte stream, the client's side of it.
// One goroutine reads; [Conn.Close] ends it and waits for it. Its methods
// are safe for concurrent use.
type Conn struct {
	w        io.WriteCloser
	r        io.ReadCloser
	onReq    RequestHandler
	onNotify NotificationHandler

	wmu sync.Mutex // serializes writes

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	err     error // why the connection ended; nil while it runs

	done    chan struct{}  // closed when the reader has returned
	writers sync.WaitGroup // answers to the server's requests being written
}

// NewConn starts reading r and writing w. Requests and notifications from
// the server go to onReq and onNotify (either may be nil: requests are then
// answered with "method not found", notifications dropped); they run on
// the reading goroutine, so they must not block.
func NewConn(r io.ReadCloser, w io.WriteCloser, onReq RequestHandler, onNotify NotificationHandler) *Conn {
	c := &Conn{w: w, r: r, onReq: onReq, onNotify: onNotify, pending: map[int64]chan reply{}, done: make(chan struct{})}
	go c.read()
	return c
}

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it runs).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a request and waits for its answer, decoded into result
// (which may be nil). When ctx ends first it sends $/cancelRequest and
// returns ctx's error.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	c.nextID++
	id := c.nextID
	ch := make(chan reply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	idRaw := json.RawMessage(strconv.FormatInt(id, 10))
	if err := c.send(&wire{ID: idRaw, Method: method}, params); err != nil {
		c.forget(id)
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if result == nil || len(r.result) == 0 || string(r.result) == "null" {
			return nil
		}
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("lsp: %s: decode result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		_ = c.Notify("$/cancelRequest", map[string]any{"id": id})
		return ctx.Err()
	case <-c.done:
		return c.Err()
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	return c.send(&wire{Method: method}, params)
}

func (c *Conn) send(m *wire, params any) error {
	m.JSONRPC = "2.0"
	if params != nil {
		raw, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("lsp: %s: encode params: %w", m.Method, err)
		}
		m.Params = raw
	}
	return c.write(m)
}

func (c *Conn) write(m *wire) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return c.Err()
	default:
	}
	if _, err := fmt.Fprintf(c.w, "Content-Length: %d\r\n\r\n", len(body)); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	if _, err := c.w.Write(body); err != nil {
		return fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return nil
}

// Close closes both streams and waits for the reading goroutine.
func (c *Conn) Close() error {
	werr := c.w.Close() // not under wmu: it unblocks a write stuck on a full pipe
	rerr := c.r.Close()
	<-c.done
	c.writers.Wait()
	return errors.Join(werr, rerr)
}

// read reads messages until the stream ends, then fails every pending
// call.
func (c *Conn) read() {
	br := bufio.NewReaderSize(c.r, 64<<10)
	var err error
	for {
		var m *wire
		m, err = readMessage(br)
		if err != nil {
			break
		}
		c.dispatch(m)
	}
	c.mu.Lock()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || strings.Contains(err.Error(), "file already closed") {
		c.err = ErrClosed
	} else {
		c.err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	for id, ch := range c.pending {
		ch <- reply{err: c.err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *Conn) dispatch(m *wire) {
	switch {
	case m.Method != "" && len(m.ID) > 0: // a request from the server
		var result any
		var err error
		if c.onReq != nil {
			result, err = c.onReq(m.Method, m.Params)
		} else {
			err = &ResponseError{Code: -32601, Message: "method not found"}
		}
		out := &wire{JSONRPC: "2.0", ID: m.ID}
		if err != nil {
			var re *ResponseError
			if !errors.As(err, &re) {
				re = &ResponseError{Code: -32603, Message: err.Error()}
			}
			out.Error = re
		} else {
			raw, merr := json.Marshal(result)
			if merr != nil {
				raw = []byte("null")
			}
			out.Result = raw
		}
		c.writers.Add(1)
		go func() { // never block the reader on a write
			defer c.writers.Done()
			_ = c.write(out)
		}()
	case m.Method != "": // a notification
		if c.onNotify != nil {
			c.onNotify(m.Method, m.Params)
		}
	default: // a response
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if !ok {
			return
		}
		if m.Error != nil {
			ch <- reply{err: m.Error}
		} else {
			ch <- reply{result: m.Result}
		}
	}
}

// readMessage reads one framed message: headers, a blank line, then
// Content-Length bytes of JSON.
func readMessage(br *bufio.Reader) (*wire, error) {
	tp := textproto.NewReader(br)
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("bad Content-Length %q", h.Get("Content-Length"))
	}
	if n > maxMessageBytes {
		return nil, fmt.Errorf("message of %d bytes exceeds the limit of %d", n, maxMessageBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	m := &wire{}
	if err := json.Unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("not JSON-RPC: %w", err)
	}
	return m, nil
}
