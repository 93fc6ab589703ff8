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

// TestChangedSignature: a tool whose enum values changed since the model
// saw it is written as the change when that is shorter (a page lost a
// row: the click targets no longer offered), its whole signature
// otherwise (a new page, a new parameter, one value left); tools shown
// exactly so before share one "(as before)" line.
func TestChangedSignature(t *testing.T) {
	tool := func(name string, enum []any) *macroEntry {
		props := map[string]any{"element_id": map[string]any{"type": "string", "enum": enum}}
		if name == "hover" {
			props = map[string]any{"element_id": map[string]any{"type": "string"}}
		}
		m := protocol.MacroTool{Name: name, Description: "The " + name + " tool.",
			InputSchema: map[string]any{"type": "object", "required": []any{"element_id"}, "properties": props}}
		return &macroEntry{name: name, tool: m}
	}
	rows := func(skip string) []any {
		var out []any
		for _, r := range []string{"Delete order #1", "Delete order #2", "Delete order #3", "Delete order #4", "Open invoice of order #1", "Open invoice of order #2"} {
			if r != skip {
				out = append(out, r)
			}
		}
		return out
	}
	ss := &mcpSession{shown: map[string]shownTool{}}
	write := func(es ...*macroEntry) string {
		var b strings.Builder
		ss.writeTools(&b, es)
		return b.String()
	}
	write(tool("click_element", rows("")), tool("hover", nil), tool("press_key", nil))
	for _, step := range []struct {
		name string
		es   []*macroEntry
		want string
	}{
		{"a row gone: the change", []*macroEntry{tool("click_element", rows("Delete order #3")), tool("hover", nil), tool("press_key", nil)},
			"\n- click_element(as before; element_id no longer \"Delete order #3\")\n- hover, press_key (as before)"},
		{"a row back: the change", []*macroEntry{tool("hover", nil), tool("click_element", rows("")), tool("press_key", nil)},
			"\n- hover (as before)\n- click_element(as before; element_id also \"Delete order #3\")\n- press_key (as before)"},
		{"another page: the whole signature", []*macroEntry{tool("click_element", []any{"Next", "Back"})},
			"\n- click_element(element_id*: \"Next\"|\"Back\")"},
		{"one value left: fixed", []*macroEntry{tool("click_element", []any{"Next"})},
			"\n- click_element(element_id=\"Next\")"},
	} {
		if got := write(step.es...); got != step.want {
			t.Errorf("%s: wrote %q, want %q", step.name, got, step.want)
		}
	}
}

// TestNotInSummary: a result's top-level string the summary already
// quotes whole is not written again; other fields, short strings and the
// server's result itself are kept.
func TestNotInSummary(t *testing.T) {
	res := map[string]any{"ok": true, "title": "Orders - Stationer", "url": "http://x/orders.html", "id": "r2"}
	got := notInSummary(res, `Opened; page "Orders - Stationer". Traced "r2".`)
	if _, ok := got["title"]; ok || got["url"] != "http://x/orders.html" || got["id"] != "r2" || got["ok"] != true {
		t.Errorf("notInSummary = %v", got)
	}
	if res["title"] != "Orders - Stationer" {
		t.Errorf("the server's result changed: %v", res)
	}
	if got := notInSummary(res, "Opened Orders - Stationer"); len(got) != 4 {
		t.Errorf("an unquoted mention dropped a field: %v", got)
	}
}
