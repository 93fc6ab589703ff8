package protocol_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestIDsAreBoundedAtDecode: an envelope id longer than MaxIDBytes is
// refused as malformed_message naming the field "id", and the answer is
// uncorrelated (null id) so none of it is echoed (issue 26 item 21: a 1 MiB
// request_id was echoed and logged in full).
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
			if env.IDString() != "" {
				t.Errorf("the refused id is kept for the answer (%d bytes)", len(env.IDString()))
			}
			raw, _ := protocol.ErrorEnvelope(env.IDString(), perr).Encode()
			if len(raw) > 512 || strings.Contains(string(raw), "aaaa") {
				t.Errorf("the answer echoes the id: %d bytes: %.200s", len(raw), raw)
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
