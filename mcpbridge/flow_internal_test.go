package mcpbridge

import (
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// entryOf is a selected macro-tool: mandatory or not, with one required
// parameter whose enum is values, and the safety block given.
func entryOf(name string, mandatory bool, safety *protocol.Safety, values ...any) *macroEntry {
	t := protocol.MacroTool{Name: name, MacroID: name + "-0001", Safety: safety,
		InputSchema: map[string]any{"type": "object", "required": []any{"id"}, "properties": map[string]any{
			"id":      map[string]any{"type": "string", "enum": values},
			"verbose": map[string]any{"type": "boolean", "default": false},
		}}}
	if mandatory {
		t.Metadata = &protocol.ToolMetadata{SelectionPhase: mandatoryPhase}
	}
	return &macroEntry{name: name, tool: t}
}

// TestDecide: what the bridge may do on its own with a selection is read
// off the rules' answer: one mandatory tool, every parameter decided, and
// its safety block.
func TestDecide(t *testing.T) {
	pure := &protocol.Safety{SideEffects: []string{"none"}}
	asks := &protocol.Safety{RequiresUserConfirmation: true, SideEffects: []string{"filesystem"}}
	writes := &protocol.Safety{SideEffects: []string{"filesystem"}, Reversible: true}
	free := entryOf("trace", true, pure, "r2")
	free.tool.InputSchema["properties"].(map[string]any)["text"] = map[string]any{"type": "string"}
	condensed := entryOf("trace", true, pure, "r2")
	condensed.tool.InputSchema = nil
	tests := []struct {
		name     string
		entries  []*macroEntry
		want     autonomy
		args     map[string]any
		follows  bool
		decision string // the decided tool's name, "" none
	}{
		{"nothing selected", nil, modelChooses, nil, false, ""},
		{"pure, one value", []*macroEntry{entryOf("trace", true, pure, "r2"), entryOf("other", false, pure, "x")}, runsAtOnce, map[string]any{"id": "r2"}, true, "trace"},
		{"asks the user", []*macroEntry{entryOf("apply", true, asks, "d")}, asksUser, map[string]any{"id": "d"}, true, "apply"},
		{"side effect, asks no one", []*macroEntry{entryOf("write", true, writes, "w")}, listedOnly, map[string]any{"id": "w"}, false, "write"},
		{"safety not disclosed", []*macroEntry{entryOf("trace", true, nil, "r2")}, modelChooses, nil, false, ""},
		{"two values", []*macroEntry{entryOf("trace", true, pure, "r2", "r3")}, modelChooses, nil, false, ""},
		{"two mandatory", []*macroEntry{entryOf("a", true, pure, "r2"), entryOf("b", true, pure, "r2")}, modelChooses, nil, false, ""},
		{"not mandatory", []*macroEntry{entryOf("trace", false, pure, "r2")}, modelChooses, nil, false, ""},
		{"a free parameter", []*macroEntry{free}, modelChooses, nil, false, ""},
		{"schema not disclosed", []*macroEntry{condensed}, modelChooses, nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(tt.entries)
			if d.autonomy != tt.want || d.follows() != tt.follows {
				t.Errorf("autonomy %d (follows %v), want %d (%v)", d.autonomy, d.follows(), tt.want, tt.follows)
			}
			name := ""
			if d.entry != nil {
				name = d.entry.name
			}
			if name != tt.decision || len(d.args) != len(tt.args) || (tt.args != nil && d.args["id"] != tt.args["id"]) {
				t.Errorf("decided %q %v, want %q %v", name, d.args, tt.decision, tt.args)
			}
		})
	}
}

// TestConsentStates: where a call stands with the user's consent, and who
// made it, follow from the tool's safety block and the call's params.
func TestConsentStates(t *testing.T) {
	asks := &protocol.MacroTool{Safety: &protocol.Safety{RequiresUserConfirmation: true}}
	pure := &protocol.MacroTool{Safety: &protocol.Safety{}}
	hidden := &protocol.MacroTool{}
	first := &mcp.CallToolParamsRaw{}
	answer := &mcp.CallToolParamsRaw{RequestState: "nonce", InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}}
	stateOnly := &mcp.CallToolParamsRaw{RequestState: "nonce"}
	responsesOnly := &mcp.CallToolParamsRaw{InputResponses: mcp.InputResponseMap{}}
	tests := []struct {
		name   string
		def    *protocol.MacroTool
		params *mcp.CallToolParamsRaw
		by     caller
		want   consentState
		wantBy caller
	}{
		{"pure, first call", pure, first, byModel, consentNotNeeded, byModel},
		{"undisclosed safety, first call", hidden, first, byModel, consentNotNeeded, byModel},
		{"asks, first call", asks, first, byModel, consentToAsk, byModel},
		{"asks, a step of the bridge", asks, first, byBridge, consentToAsk, byBridge},
		{"asks, the answer", asks, answer, byModel, consentAnswered, byAnswer},
		{"pure, an answer anyway", pure, answer, byModel, consentAnswered, byAnswer},
		{"request state alone", asks, stateOnly, byModel, consentAnswered, byAnswer},
		{"input responses alone", pure, responsesOnly, byBridge, consentAnswered, byAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := consentOf(tt.def, tt.params); got != tt.want {
				t.Errorf("consentOf = %d, want %d", got, tt.want)
			}
			if got := callerOf(tt.params, tt.by); got != tt.wantBy {
				t.Errorf("callerOf = %d, want %d", got, tt.wantBy)
			}
		})
	}
}

// TestUserAnswer: only "accept" accepts; a missing answer says so.
func TestUserAnswer(t *testing.T) {
	tests := []struct {
		name      string
		responses mcp.InputResponseMap
		action    string
		accepted  bool
	}{
		{"accept", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}, "accept", true},
		{"decline", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "decline"}}, "decline", false},
		{"cancel", mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "cancel"}}, "cancel", false},
		{"another question's answer", mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept"}}, "no answer", false},
		{"no answers", nil, "no answer", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, ok := userAnswer(&mcp.CallToolParamsRaw{RequestState: "n", InputResponses: tt.responses})
			if action != tt.action || ok != tt.accepted {
				t.Errorf("userAnswer = %q, %v; want %q, %v", action, ok, tt.action, tt.accepted)
			}
		})
	}
}

// TestReachOrder: the intent that selected the tool before, then the
// suggested ones, then the manifest's, each once.
func TestReachOrder(t *testing.T) {
	manifest := []protocol.IntentDecl{{Name: "diagnose"}, {Name: "observe"}, {Name: "edit"}}
	tests := []struct {
		name      string
		origin    string
		suggested []protocol.SuggestedIntent
		want      []string
	}{
		{"nothing known", "", nil, []string{"diagnose", "observe", "edit"}},
		{"origin first", "edit", nil, []string{"edit", "diagnose", "observe"}},
		{"then the suggested", "edit", []protocol.SuggestedIntent{{Name: "observe"}, {Name: "edit"}}, []string{"edit", "observe", "diagnose"}},
		{"a suggestion the manifest lacks", "", []protocol.SuggestedIntent{{Name: "gone"}}, []string{"gone", "diagnose", "observe", "edit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reachOrder(tt.origin, tt.suggested, manifest); !slices.Equal(got, tt.want) {
				t.Errorf("reachOrder = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSelectionUpdates: an evaluation's tools replace the selection or
// join it; a name taken by an intent tool or another selected tool gets a
// suffix; every name remembers the intent that selected it (reach).
func TestSelectionUpdates(t *testing.T) {
	answer := func(names ...string) *protocol.IntentResponse {
		r := &protocol.IntentResponse{}
		for _, n := range names {
			r.MacroTools = append(r.MacroTools, protocol.MacroTool{Name: n, MacroID: n + "-1"})
		}
		return r
	}
	tests := []struct {
		name   string
		steps  []selection
		want   []string
		origin string // the intent remembered for "look"
	}{
		{"replace", []selection{replaceSelection, replaceSelection}, []string{"look", "trace", "trace_2"}, "i1"},
		{"join", []selection{replaceSelection, joinSelection}, []string{"click", "look", "trace", "trace_2"}, "i1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := &mcpSession{srv: mcp.NewServer(&mcp.Implementation{Name: "t"}, nil), reserved: map[string]bool{"diagnose": true},
				tools: map[string]*macroEntry{}, origins: map[string]string{}}
			ss.installTools(answer("click"), "i0", nil, nil, tt.steps[0])
			ss.installTools(answer("trace", "trace", "look", "diagnose"), "i1", nil, nil, tt.steps[1])
			got := make([]string, 0, len(ss.tools))
			for n := range ss.tools {
				got = append(got, n)
			}
			slices.Sort(got)
			want := append(slices.Clone(tt.want), "diagnose_2")
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("selection %v, want %v", got, want)
			}
			if ss.origins["look"] != tt.origin || ss.origins["click"] != "i0" {
				t.Errorf("origins %v", ss.origins)
			}
		})
	}
}
