package mcpbridge

import (
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestResultText: a result reaches the model as readable text (issue 39
// item 6): "=>" is not escaped to "=\u003e", and a string with line
// breaks is shown as its lines, not as one line of \n escapes.
func TestResultText(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"rule": "a => b", "n": 2}, `{"n":2,"rule":"a => b"}`},
		{map[string]any{"log": "line 1\nline <2>\n", "service": "checkout"}, "{\"service\":\"checkout\"}\nlog:\nline 1\nline <2>"},
		{map[string]any{"b": "x\ny", "a": "1\n2"}, "a:\n1\n2\nb:\nx\ny"},
	} {
		got, err := resultText(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("resultText(%v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestConsentSaysWhatUpstreamMeans: the question for a gateway tool says
// what its side effect is, not "Side effects: upstream." (issue 39 item 6);
// the categories users read as they are stay as they are.
func TestConsentSaysWhatUpstreamMeans(t *testing.T) {
	e := &macroEntry{name: "ev_delete", tool: protocol.MacroTool{Name: "ev_delete", Description: "Delete an item.",
		Safety: &protocol.Safety{RequiresUserConfirmation: true, SideEffects: []string{"network", "upstream"}}}}
	got := confirmMessage(e, nil, `{"id":"7"}`)
	want := `Side effects: network, whatever this tool of an upstream MCP server does (it is not declared read-only).`
	if !strings.Contains(got, want) || strings.Contains(got, "Side effects: upstream") {
		t.Errorf("the question is %q; want it to contain %q", got, want)
	}
}
