package mcpbridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/manglecp/manglecp/protocol"
)

// TestConsentShowsAWholeDiff: the workspace's apply_edit takes the
// previewed diff as its only argument (cut within 1 KiB by the server), so
// the question the user is asked shows the whole diff it consents to, JSON
// escaping included (issue 26 item 7).
func TestConsentShowsAWholeDiff(t *testing.T) {
	var diff strings.Builder
	diff.WriteString("--- a/config.py\n+++ b/config.py\n@@ -1,20 +1,20 @@\n")
	for i := 0; diff.Len() < 1000; i++ {
		diff.WriteString("-URL = \"https://old.example.com/\"\n+URL = \"https://new.example.com/\"\n")
	}
	args, err := json.Marshal(map[string]string{"diff": diff.String()})
	if err != nil {
		t.Fatal(err)
	}
	e := &macroEntry{name: "apply_edit", tool: protocol.MacroTool{Name: "apply_edit", Description: "Apply the previewed edit.",
		Safety: &protocol.Safety{SideEffects: []string{"filesystem"}, RequiresUserConfirmation: true}}}
	msg := confirmMessage(e, nil, string(args))
	if !strings.Contains(msg, string(args)) {
		t.Errorf("the question does not show the whole diff (%d bytes of arguments):\n%s", len(args), msg)
	}
	for _, want := range []string{`"apply_edit"`, "filesystem", "cannot be undone"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the question lacks %q:\n%s", want, msg)
		}
	}
}
