package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLineBytes is the longest line a [StdioTransport] accepts from
// a host when MaxLineBytes is 0: 8 MiB, far above any tools/call a model
// makes (the facts of one evaluation are bounded by the MangleCP server's
// max_message_bytes anyway).
const DefaultMaxLineBytes = 8 << 20

// StdioTransport is the MCP stdio transport (newline-delimited JSON-RPC)
// with a host that may send anything. It wraps the SDK's [mcp.IOTransport]:
// each line is checked before the SDK sees it, and a line the SDK would
// fail the whole connection on gets a JSON-RPC error answer instead, and
// the session goes on:
//
//   - a line that is not JSON (or has data after the value): parse error
//     -32700, id null;
//   - JSON that is not a JSON-RPC 2.0 message (a scalar, an empty object,
//     another version, a method that is not a string, an id that is
//     neither a string nor a number, an empty batch, a batch on MCP
//     2025-06-18 or later): invalid request -32600, with the message's id
//     when it has a usable one, else null;
//   - a line longer than MaxLineBytes: invalid request -32600, id null.
//     At most MaxLineBytes of a line are ever buffered; the rest is read
//     and dropped.
//
// Blank lines are skipped. Everything else goes to the SDK unchanged.
type StdioTransport struct {
	// Reader is the host's output (the bridge's standard input).
	Reader io.Reader
	// Writer is the host's input (the bridge's standard output). The
	// transport never closes it.
	Writer io.Writer
	// MaxLineBytes bounds one line from the host; 0 means
	// [DefaultMaxLineBytes].
	MaxLineBytes int
}

// Connect implements [mcp.Transport]. It starts a goroutine that reads
// Reader until it ends or the connection is closed (a read blocked on
// Reader itself ends only with Reader, as in the SDK's IOTransport).
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	w := &lockedWriter{w: t.Writer}
	pr, pw := io.Pipe()
	f := &lineFilter{out: pw, answer: w, limit: limit}
	go f.run(t.Reader)
	// The SDK's own bound is never the one that trips: the filter passes
	// no line longer than limit, and the SDK's decoder reads at most one
	// line ahead.
	inner := &mcp.IOTransport{Reader: pr, Writer: w, MaxLineLength: 2*limit + 64<<10}
	return inner.Connect(ctx)
}

// lockedWriter serialises whole lines from the SDK and from the filter on
// the host's input; Close leaves the underlying writer open.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lockedWriter) Close() error { return nil }

// lineFilter reads the host's lines, answers the malformed ones and
// passes the others to the SDK through out.
type lineFilter struct {
	out    *io.PipeWriter
	answer io.Writer
	limit  int
	// batches says whether JSON-RPC batches may go to the SDK: only on
	// the MCP versions before 2025-06-18, as the host's initialize asked.
	batches bool
}

// run reads r line by line until it ends, a write to the SDK fails (the
// connection was closed) or an answer cannot be written.
func (f *lineFilter) run(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, f.limit)
		if tooLong {
			if werr := f.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("line longer than %d bytes", f.limit)); werr != nil {
				f.out.CloseWithError(werr)
				return
			}
		} else if len(line) > 0 {
			if werr := f.handle(line); werr != nil {
				f.out.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			f.out.CloseWithError(err) // nil: the SDK sees io.EOF
			return
		}
	}
}

// readLine returns the next line without its line ending and surrounding
// blanks. A line longer than limit is read to its end and dropped
// (tooLong); at most limit bytes of it are buffered.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+2 { // room for CR LF
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, true, rerr
		}
		return bytes.TrimSpace(line), false, rerr
	}
}

// handle passes one line to the SDK, or answers it when the SDK could not
// take it. The error is the SDK's pipe or the host's writer failing.
func (f *lineFilter) handle(line []byte) error {
	if !json.Valid(line) {
		return f.reject(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value")
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return f.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: an empty batch")
		}
		if !f.batches {
			return f.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: JSON-RPC batches are not part of MCP 2025-06-18 and later")
		}
		seen := map[jsonrpc.ID]bool{}
		for _, raw := range batch {
			msg, err := jsonrpc.DecodeMessage(raw)
			if err != nil {
				return f.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch holds something that is not a JSON-RPC 2.0 message")
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
				if seen[req.ID] {
					return f.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: a batch repeats a request id")
				}
				seen[req.ID] = true
			}
		}
		return f.pass(line)
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return f.reject(usableID(line), jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC 2.0 request, notification or response")
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		// The SDK answers an older version it supports with that version,
		// anything else with 2025-06-18 or later.
		f.batches = p.ProtocolVersion >= "2024-11-05" && p.ProtocolVersion < "2025-06-18"
	}
	return f.pass(line)
}

// pass writes one line to the SDK.
func (f *lineFilter) pass(line []byte) error {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, err := f.out.Write(buf)
	return err
}

// errorAnswer is a JSON-RPC error response; ID is null when the request's
// id is unknown.
type errorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// reject answers a line the SDK could not take.
func (f *lineFilter) reject(id json.RawMessage, code int64, msg string) error {
	a := errorAnswer{JSONRPC: "2.0", ID: id}
	if a.ID == nil {
		a.ID = json.RawMessage("null")
	}
	a.Error.Code, a.Error.Message = code, msg
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = f.answer.Write(append(raw, '\n'))
	return err
}

// usableID returns the id of a JSON object when it is a string or an
// integer, as JSON-RPC ids are, so that the answer can name it; nil
// otherwise.
func usableID(line []byte) json.RawMessage {
	var obj struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &obj) != nil || len(obj.ID) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(obj.ID, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string:
	case float64:
		if _, err := jsonrpc.MakeID(v); err != nil {
			return nil
		}
	default:
		return nil
	}
	if len(obj.ID) > 256 {
		return nil // echo client input only bounded
	}
	return obj.ID
}
