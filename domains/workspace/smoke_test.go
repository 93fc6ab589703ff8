package workspace_test

import (
	"testing"

	"github.com/manglecp/manglecp/domains/workspace"
	"github.com/manglecp/manglecp/protocol"
)

func TestSmoke(t *testing.T) {
	f := newFixture(t, workspace.Config{})
	for _, c := range []struct {
		intent string
		facts  []protocol.Fact
	}{
		{"explore", nil},
		{"explore", []protocol.Fact{focus("src")}},
		{"explore", []protocol.Fact{focus("notes.txt")}},
		{"find", nil},
		{"read", []protocol.Fact{mentioned("notes.txt"), mentioned("README.md"), mentioned("assets/logo.png")}},
		{"edit", []protocol.Fact{mentioned("notes.txt")}},
		{"edit", []protocol.Fact{mentioned("new.txt")}},
		{"reorganize", []protocol.Fact{mentioned("notes.txt")}},
	} {
		tools := f.eval(c.intent, c.facts...)
		t.Logf("%s %v: %s", c.intent, c.facts, names(tools))
	}
	r := f.ok("explore", nil, "list_dir", map[string]any{"sizes": true}, false)
	t.Logf("%v", r.Result)
}
