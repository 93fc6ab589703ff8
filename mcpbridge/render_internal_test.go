package mcpbridge

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestWriteToolOnce: what a session already showed the model is not
// written again: the same tool is "(as before)", with new instructions
// when only they changed; a new signature with the same description is
// the signature and the instructions.
func TestWriteToolOnce(t *testing.T) {
	tool := func(enum []any, instr string) *macroEntry {
		m := protocol.MacroTool{Name: "click_element", Description: "Click an element of the page.",
			InputSchema: map[string]any{"type": "object", "required": []any{"element_id"},
				"properties": map[string]any{"element_id": map[string]any{"type": "string", "enum": enum}}}}
		if instr != "" {
			m.ContextInjection = &protocol.ContextInjection{Instructions: instr}
		}
		return &macroEntry{name: "click_element", tool: m}
	}
	ss := &mcpSession{shown: map[string]shownTool{}}
	for _, step := range []struct {
		name string
		e    *macroEntry
		want string
	}{
		{"first time: whole", tool([]any{"Save", "Cancel"}, "Alert: saved."), "click_element(element_id*: \"Save\"|\"Cancel\"): Click an element of the page.\n  Alert: saved."},
		{"the same: named", tool([]any{"Save", "Cancel"}, "Alert: saved."), "click_element (as before)"},
		{"new instructions only", tool([]any{"Save", "Cancel"}, "Alert: failed."), "click_element (as before)\n  Alert: failed."},
		{"new signature: no description", tool([]any{"Next"}, ""), "click_element(element_id=\"Next\")"},
		{"instructions gone", tool([]any{"Next"}, ""), "click_element (as before)"},
	} {
		var b strings.Builder
		ss.writeTool(&b, step.e)
		if got := b.String(); got != step.want {
			t.Errorf("%s: wrote %q, want %q", step.name, got, step.want)
		}
	}
}
