package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// oversizePeer is a server that answers an intent named "big" with an
// answer of size bytes and any other with a small intent_response.
func oversizePeer(t *testing.T, req []byte, size int) []byte {
	t.Helper()
	env, perr := protocol.DecodeEnvelope(req)
	if perr != nil {
		t.Errorf("the peer got %q: %v", req, perr)
		return nil
	}
	if strings.Contains(string(env.Payload), `"big"`) {
		return []byte(`{"type":"intent_response","id":` + string(mustJSON(t, env.IDString())) + `,"manglecp":"` + protocol.Version + `","payload":{"pad":"` + strings.Repeat("a", size) + `"}}`)
	}
	out, _ := protocol.NewEnvelope(protocol.TypeIntentResponse, env.IDString(), protocol.IntentResponse{MacroTools: []protocol.MacroTool{}})
	raw, _ := out.Encode()
	return raw
}

func mustJSON(t *testing.T, s string) []byte {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func oversizeManifest() []byte {
	env, _ := protocol.NewEnvelope(protocol.TypeManifest, "", protocol.Manifest{ServerName: "big", Status: protocol.StatusReady,
		Protocol: protocol.ProtocolInfo{Manglecp: protocol.Version}})
	raw, _ := env.Encode()
	return raw
}

// TestSessionAnswerTooLarge: on a session transport (stdio, WebSocket) an
// answer longer than Options.MaxReplyBytes fails the call it answers with a
// local message_too_large, at once, and the session goes on: before, over
// stdio the call waited until its context ended, and over WebSocket the
// connection was closed (issue 26 item 9).
func TestSessionAnswerTooLarge(t *testing.T) {
	const limit = 64 << 10
	opts := (&Options{MaxReplyBytes: limit, MaxAttempts: 1, SkipFactValidation: true}).withDefaults()
	dial := map[string]func(t *testing.T) *Session{
		"stdio": func(t *testing.T) *Session {
			toClient, fromServer := io.Pipe()
			fromClient, toServer := io.Pipe()
			go func() {
				defer fromServer.Close()
				_, _ = fromServer.Write(append(oversizeManifest(), '\n'))
				sc := bufio.NewScanner(fromClient)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					if _, err := fromServer.Write(append(oversizePeer(t, sc.Bytes(), 4*limit), '\n')); err != nil {
						return
					}
				}
			}()
			conn := transport.NewStdioConn(toClient, toServer, limit, func() error { toServer.Close(); return toClient.Close() })
			s, err := newSession(context.Background(), conn, opts, "stdio", nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"websocket": func(t *testing.T) *Session {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer c.CloseNow()
				ctx := r.Context()
				_ = c.Write(ctx, websocket.MessageText, oversizeManifest())
				for {
					_, req, err := c.Read(ctx)
					if err != nil {
						return
					}
					if err := c.Write(ctx, websocket.MessageText, oversizePeer(t, req, 4*limit)); err != nil {
						return
					}
				}
			}))
			t.Cleanup(hs.Close)
			s, err := Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), &opts)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range dial {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range 2 {
				_, err := s.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "big"}})
				var ce *Error
				if !errors.As(err, &ce) || !ce.Local || ce.Payload.Code != protocol.CodeMessageTooLarge || !strings.Contains(ce.Payload.Message, "MaxReplyBytes") {
					t.Fatalf("call %d: error %v, want a local message_too_large naming MaxReplyBytes", i, err)
				}
				if _, err := s.Evaluate(ctx, &protocol.IntentRequest{Intent: protocol.Intent{Name: "small"}}); err != nil {
					t.Fatalf("after the long answer the session does not answer: %v", err)
				}
			}
		})
	}
}
