package manglecp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestRefusalsWhileDrainingAreNotErrors: a request refused with
// server_not_ready while the server drains is logged at INFO, with its
// request id, never at ERROR: it is the server working as meant (issue 29:
// every refusal during a drain was an ERROR line).
func TestRefusalsWhileDrainingAreNotErrors(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.srv.Drain()
	for _, r := range []*reply{
		h.evaluate("drained-e", diagnoseRequest()),
		h.invoke("drained-i", map[string]any{"macro_id": "m", "args": map[string]any{}}),
	} {
		if r.status != http.StatusServiceUnavailable || r.errorPayload(t).Code != protocol.CodeServerNotReady {
			t.Fatalf("while draining: %d %s", r.status, r.raw)
		}
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec struct {
			Level     string `json:"level"`
			Msg       string `json:"msg"`
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || !strings.HasPrefix(rec.RequestID, "drained-") {
			continue
		}
		if rec.Level == "ERROR" {
			t.Errorf("a refusal while draining logged at ERROR: %s", line)
		}
		if rec.Msg != "request" {
			seen[rec.RequestID] = rec.Level == "INFO"
		}
	}
	for _, id := range []string{"drained-e", "drained-i"} {
		if !seen[id] {
			t.Errorf("no INFO line for the refusal of %s:\n%s", id, h.logs.String())
		}
	}
}
