package manglecp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestLongIDsAreRefusedAndNotLogged: a request whose id is longer than
// protocol.MaxIDBytes (here 1 MiB) gets a 400 malformed_message naming
// the field id, answering that id (Spec 09 section 2.3 says an error about
// a request echoes its id; issue 35 item 24: it was a null id), once,
// never in the message; and the log lines of the request stay small
// (issue 26 item 21: the log grew by 1 MiB per request).
func TestLongIDsAreRefusedAndNotLogged(t *testing.T) {
	h := newHarness(t, nil, nil)
	long := strings.Repeat("a", 1<<20)
	for _, tc := range []struct {
		path string
		typ  protocol.MessageType
		body map[string]any
	}{
		{"/manglecp/evaluate", protocol.TypeIntentRequest, diagnoseRequest()},
		{"/manglecp/invoke", protocol.TypeInvokeRequest, map[string]any{"macro_id": "m", "args": map[string]any{}}},
	} {
		before := len(h.logs.String())
		r := h.post(tc.path, envelope(t, tc.typ, long, tc.body), nil)
		logged := len(h.logs.String()) - before
		if r.status != http.StatusBadRequest {
			t.Fatalf("%s: status %d, want 400: %.300s", tc.path, r.status, r.raw)
		}
		e := r.errorPayload(t)
		if e.Code != protocol.CodeMalformedMessage || e.Details == nil || e.Details.Field != "id" || r.env.ID == nil || *r.env.ID != long {
			t.Errorf("%s: %.300s, want malformed_message on field id answering the request's id", tc.path, r.raw)
		}
		if len(r.raw) > len(long)+1024 || strings.Contains(e.Message, "aaaa") {
			t.Errorf("%s: the answer has %d bytes; its message %.100q", tc.path, len(r.raw), e.Message)
		}
		if logged > 4096 || strings.Contains(h.logs.String(), strings.Repeat("a", protocol.MaxIDBytes+1)) {
			t.Errorf("%s: %d bytes of log for one request", tc.path, logged)
		}
	}
	// At the bound, the id is echoed as sent.
	atBound := strings.Repeat("b", protocol.MaxIDBytes)
	if r := h.evaluate(atBound, diagnoseRequest()); r.status != http.StatusOK || r.env.ID == nil || *r.env.ID != atBound {
		t.Errorf("an id of %d bytes: status %d", protocol.MaxIDBytes, r.status)
	}
}
