package kernel

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/manglecp/manglecp/kernel/analyse"
	"github.com/manglecp/manglecp/protocol"
)

// TestOneTypeVocabulary: decl_arg takes tool_param's word for whole
// numbers, "integer", and the manifest still advertises the facts
// profile's "number"; the old spelling "number" loads the same profile
// with a warning at its file:line, from Load (Program.Warnings) and Lint
// alike.
func TestOneTypeVocabulary(t *testing.T) {
	const rules = `decl_intent("triage", "Triage.").
decl_predicate("alert", "input", "An alert.").
decl_arg("alert", 0, "service", "string").
decl_arg("alert", 1, "level", %q).
tool("show_logs").
tool_action("show_logs", "show_logs").
mandatory_for_intent("triage", "show_logs") :- alert(_, L), L > 2.
`
	for _, typ := range []string{"integer", "number"} {
		layer := Layer{Name: "domain", FS: fstest.MapFS{"d.mg": {Data: []byte(strings.ReplaceAll(rules, "%q", `"`+typ+`"`))}}, Prefix: "domain"}
		p, err := Load(layer)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if got := p.FactsProfile().Predicates[0].ArgTypes; len(got) != 2 || got[1] != protocol.ArgNumber {
			t.Errorf("%s: the manifest's arg_types are %v, want [string number]", typ, got)
		}
		lint, err := analyse.Lint(layer)
		if err != nil {
			t.Fatal(err)
		}
		for _, ws := range [][]*LoadError{p.Warnings(), lint} {
			switch {
			case typ == "integer" && len(ws) != 0:
				t.Errorf("integer: warnings %v, want none", ws)
			case typ == "number" && (len(ws) != 1 || ws[0].File != "domain/d.mg" || ws[0].Line != 4 || !strings.Contains(ws[0].Message, `old spelling of "integer"`)):
				t.Errorf("number: warnings %v, want one at domain/d.mg:4 naming the old spelling", ws)
			}
		}
	}
}
