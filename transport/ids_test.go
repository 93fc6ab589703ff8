package transport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// TestSessionBoundsIDs: in a session, a cancel whose request_id is longer
// than protocol.MaxIDBytes is answered malformed_message naming
// request_id, and a request with a longer id is answered malformed_message
// with that id (Spec 09 section 2.3; issue 35 item 24: it was a null id),
// its message and details repeating neither id (issue 26 item 21).
func TestSessionBoundsIDs(t *testing.T) {
	h := &slowHandler{release: make(chan struct{})}
	client, server := transport.NewMemoryPair()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = transport.ServeSession(ctx, h, server, nil) }()
	recv(t, client) // the manifest
	long := strings.Repeat("a", 64<<10)

	send(t, client, protocol.TypeCancel, "c1", map[string]any{"request_id": long})
	got := recv(t, client)
	e := decodeError(t, mustEncode(t, got))
	if got.IDString() != "c1" || e.Code != protocol.CodeMalformedMessage || e.Details == nil || e.Details.Field != "request_id" {
		t.Errorf("cancel with a long request_id: %s %s", got.IDString(), got.Payload)
	}
	send(t, client, protocol.TypeIntentRequest, long, map[string]any{})
	got = recv(t, client)
	e = decodeError(t, mustEncode(t, got))
	if got.IDString() != long || e.Code != protocol.CodeMalformedMessage || e.Details == nil || e.Details.Field != "id" {
		t.Errorf("request with a long id: id %d bytes (want the request's %d), %s", len(got.IDString()), len(long), got.Payload)
	}
	if strings.Contains(string(got.Payload), "aaaa") {
		t.Errorf("the id is echoed: %.200s", got.Payload)
	}
}

func mustEncode(t *testing.T, env protocol.Envelope) []byte {
	t.Helper()
	raw, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
