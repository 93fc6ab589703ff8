package manglecp_test

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp"
)

// TestErrorsEchoClientTextBoundedServer: errors and warnings that name a
// client's intent, macro_id or disclosure preference repeat at most a
// short escaped prefix of it (issue 9 item 1).
func TestErrorsEchoClientTextBoundedServer(t *testing.T) {
	big := strings.Repeat("x", 1<<20) + "\n"
	h := newHarness(t, nil, func(o *manglecp.Options) {})
	for name, r := range map[string]*reply{
		"macro_id": h.invoke("m", map[string]any{"macro_id": big, "args": map[string]any{}}),
		"intent": h.evaluate("i", map[string]any{"intent": map[string]any{"name": big},
			"facts": []any{map[string]any{"pred": "current_url", "args": []any{"https://x"}}}}),
		"disclosure": h.evaluate("d", map[string]any{"intent": map[string]any{"name": "observe"},
			"options": map[string]any{"disclosure_preference": big}}),
	} {
		if len(r.raw) > 8<<10 {
			t.Errorf("%s: answer of %d bytes echoes the client's 1 MiB string: %.200s", name, len(r.raw), r.raw)
		}
		if strings.Contains(string(r.raw), "xxxxxxxxxx\n") {
			t.Errorf("%s: a raw newline of client text reached the answer", name)
		}
	}
}
