package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestIDsAreBoundedAtDecode: an envelope id longer than MaxIDBytes is
// refused as malformed_message naming the field "id"; the error answers
// that id, as Spec 09 section 2.3 requires (issue 35 item 24: it was
// answered with a null id), and neither its message nor its details
// repeat it; a log line carries it bounded (LogID; issue 26 item 21: a
// 1 MiB id was logged in full).
func TestIDsAreBoundedAtDecode(t *testing.T) {
	esc := func(n int) string { return strings.Repeat(`\u0061`, n) }
	tests := []struct {
		name string
		id   string // JSON text of the id, without quotes
		ok   bool
	}{
		{"at the bound", strings.Repeat("a", protocol.MaxIDBytes), true},
		{"one byte over", strings.Repeat("a", protocol.MaxIDBytes+1), false},
		{"1 MiB", strings.Repeat("a", 1<<20), false},
		{"escaped, at the bound", esc(protocol.MaxIDBytes), true},
		{"escaped, one over", esc(protocol.MaxIDBytes + 1), false},
		{"two-byte runes at the bound", strings.Repeat("é", protocol.MaxIDBytes/2), true},
		{"two-byte runes one over", strings.Repeat("é", protocol.MaxIDBytes/2+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := `{"type":"intent_request","id":"` + tt.id + `","manglecp":"2026-02-draft","payload":{}}`
			env, perr := protocol.DecodeEnvelope([]byte(msg))
			if tt.ok {
				if perr != nil {
					t.Fatalf("refused: %v", perr)
				}
				return
			}
			if perr == nil || perr.Code != protocol.CodeMalformedMessage || perr.Details == nil || perr.Details.Field != "id" {
				t.Fatalf("got %+v, want malformed_message on field id", perr)
			}
			var want string
			if err := json.Unmarshal([]byte(`"`+tt.id+`"`), &want); err != nil {
				t.Fatal(err)
			}
			if env.IDString() != want {
				t.Errorf("the answer would not echo the id (%d bytes, want %d)", len(env.IDString()), len(want))
			}
			out := protocol.ErrorEnvelope(env.IDString(), perr)
			if out.IDString() != want {
				t.Errorf("the error's id has %d bytes, want the request's %d (Spec 09 section 2.3)", len(out.IDString()), len(want))
			}
			if strings.Contains(string(out.Payload), "aaaa") || strings.Contains(string(out.Payload), "éé") || len(out.Payload) > 512 {
				t.Errorf("the error's message or details repeat the id: %.200s", out.Payload)
			}
			if l := protocol.LogID(want); len(l) > 64 {
				t.Errorf("LogID keeps %d bytes", len(l))
			}
		})
	}
	if protocol.CheckID("request_id", strings.Repeat("x", protocol.MaxIDBytes)) != nil {
		t.Error("CheckID refuses an id at the bound")
	}
	if e := protocol.CheckID("request_id", strings.Repeat("x", protocol.MaxIDBytes+1)); e == nil || e.Details.Field != "request_id" {
		t.Errorf("CheckID: %v", e)
	}
}
