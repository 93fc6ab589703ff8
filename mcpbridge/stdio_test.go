package mcpbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/mcpbridge"
)

// rawHost speaks newline-delimited JSON-RPC to a bridge over pipes, line
// by line, as a careless or hostile host might.
type rawHost struct {
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

// startRawHost runs the bridge over t's pipes until the test ends.
func startRawHost(t *testing.T, b *mcpbridge.Bridge, maxLine int) *rawHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &rawHost{in: inW, lines: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		h.done <- b.Run(ctx, &mcpbridge.StdioTransport{Reader: inR, Writer: outW, MaxLineBytes: maxLine})
		_ = outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		cancel()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop")
		}
	})
	return h
}

func (h *rawHost) send(t *testing.T, line string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { _, err := io.WriteString(h.in, line+"\n"); errc <- err }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("the bridge stopped reading: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the bridge does not read its input")
	}
}

// next returns the next line from the bridge.
func (h *rawHost) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatalf("the bridge closed its output")
		}
		return l
	case err := <-h.done:
		t.Fatalf("the bridge stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer from the bridge")
	}
	return ""
}

// answer is a JSON-RPC response as the host reads it.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decodeAnswer(t *testing.T, line string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal([]byte(line), &a); err != nil || a.JSONRPC != "2.0" {
		t.Fatalf("not a JSON-RPC answer: %q (%v)", line, err)
	}
	return a
}

// TestStdioMalformedLines: each kind of malformed line gets a JSON-RPC
// error (parse error or invalid request, with the id when it is known)
// and the bridge keeps serving: a ping after each gets its answer, and a
// valid tools/list at the end works.
func TestStdioMalformedLines(t *testing.T) {
	const maxLine = 4096
	fake := newFake()
	b, err := mcpbridge.New(context.Background(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	h := startRawHost(t, b, maxLine)

	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if a := decodeAnswer(t, h.next(t)); a.Error != nil || string(a.ID) != "1" {
		t.Fatalf("initialize: %+v", a)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	const none = 0 // no answer expected (a JSON-RPC response from the host)
	tests := []struct {
		name   string
		line   string
		code   int64
		wantID string
	}{
		{"not JSON", `hello there`, -32700, "null"},
		{"truncated JSON", `{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700, "null"},
		{"data after the value", `{"jsonrpc":"2.0","id":6,"method":"ping"} trailing`, -32700, "null"},
		{"binary", "\x00\xff\xfe{", -32700, "null"},
		{"a number", `42`, -32600, "null"},
		{"a string", `"ping"`, -32600, "null"},
		{"null", `null`, -32600, "null"},
		{"an empty object", `{}`, -32600, "null"},
		{"another version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":7}`, -32600, `"m"`},
		{"id an object", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, "null"},
		{"an empty batch", `[]`, -32600, "null"},
		{"a batch on 2025-06-18", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, "null"},
		{"a batch of garbage", `[1,2,3]`, -32600, "null"},
		{"an over-long line", `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", 3*maxLine) + `"}}`, -32600, "null"},
		{"a response nobody asked for", `{"jsonrpc":"2.0","id":12345,"result":{}}`, none, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.send(t, tc.line)
			pingID := fmt.Sprintf(`"ping-%d"`, i)
			h.send(t, `{"jsonrpc":"2.0","id":`+pingID+`,"method":"ping"}`)
			var got []answer
			for {
				a := decodeAnswer(t, h.next(t))
				if string(a.ID) == pingID {
					if a.Error != nil {
						t.Fatalf("ping after the line failed: %+v", a.Error)
					}
					break
				}
				got = append(got, a)
			}
			if tc.code == none {
				if len(got) != 0 {
					t.Fatalf("answers %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Error == nil {
				t.Fatalf("answers %+v, want one error %d", got, tc.code)
			}
			if got[0].Error.Code != tc.code || string(got[0].ID) != tc.wantID {
				t.Errorf("error %d id %s (%s), want %d id %s", got[0].Error.Code, got[0].ID, got[0].Error.Message, tc.code, tc.wantID)
			}
		})
	}

	h.send(t, `{"jsonrpc":"2.0","id":100,"method":"tools/list"}`)
	a := decodeAnswer(t, h.next(t))
	var res mcp.ListToolsResult
	if a.Error != nil || json.Unmarshal(a.Result, &res) != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list after the malformed lines: %+v", a)
	}
}

// TestStdioBatchOnOlderVersion: on MCP 2025-03-26, which has batches, a
// valid batch still reaches the SDK and is answered as a batch.
func TestStdioBatchOnOlderVersion(t *testing.T) {
	fake := newFake()
	b, err := mcpbridge.New(context.Background(), func(ctx context.Context) (*client.Session, error) { return dialFake(ctx, t, fake) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	h := startRawHost(t, b, 0)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	decodeAnswer(t, h.next(t))
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(t, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
	var batch []answer
	if err := json.Unmarshal([]byte(h.next(t)), &batch); err != nil || len(batch) != 2 {
		t.Fatalf("batch answer: %v %+v", err, batch)
	}
}
