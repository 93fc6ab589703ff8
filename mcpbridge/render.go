package mcpbridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// EvaluationContent is the structuredContent of an intent tool's result.
type EvaluationContent struct {
	Intent       string        `json:"intent"`
	EvalTimeUsed protocol.Time `json:"eval_time_used"`
	// MacroTools are the selected macro-tools, by MCP tool name.
	MacroTools []ToolSummary `json:"macro_tools"`
	// CallWith says how to call them: "tools" (they are in the tool list)
	// or "invoke_macro_tool".
	CallWith       string               `json:"call_with"`
	RequiredSkills []string             `json:"required_skills,omitempty"`
	Warnings       []protocol.Warning   `json:"warnings,omitempty"`
	ProofHints     *protocol.ProofHints `json:"proof_hints,omitempty"`
}

// ToolSummary describes one selected macro-tool.
type ToolSummary struct {
	Tool                 string         `json:"tool"`
	MacroID              string         `json:"macro_id"`
	Description          string         `json:"description,omitempty"`
	DisclosureLevel      string         `json:"disclosure_level"`
	InputSchema          map[string]any `json:"input_schema,omitempty"`
	RequiresConfirmation bool           `json:"requires_confirmation,omitempty"`
	SideEffects          []string       `json:"side_effects,omitempty"`
	ExpiresAt            *protocol.Time `json:"expires_at,omitempty"`
	Instructions         string         `json:"instructions,omitempty"`
}

// InvocationContent is the structuredContent of a macro-tool's result.
type InvocationContent struct {
	Tool       string              `json:"tool"`
	Summary    string              `json:"summary,omitempty"`
	Result     map[string]any      `json:"result"`
	StateDelta protocol.StateDelta `json:"state_delta"`
	Next       *protocol.Next      `json:"next,omitempty"`
}

// renderEvaluation is the result of an intent tool: a short text the model
// reads, the evaluation as structuredContent, and links to the skills and
// context resources the rules attached.
func renderEvaluation(intent string, resp *protocol.IntentResponse, entries []*macroEntry, dynamic, explain bool) *mcp.CallToolResult {
	sc := EvaluationContent{Intent: intent, EvalTimeUsed: resp.EvalTimeUsed, MacroTools: []ToolSummary{}, Warnings: resp.Warnings, CallWith: "tools"}
	if !dynamic {
		sc.CallWith = MetaToolName
	}
	if explain {
		sc.ProofHints = resp.ProofHints
	}
	var b strings.Builder
	var links []mcp.Content
	seen := map[string]bool{}
	switch len(entries) {
	case 0:
		fmt.Fprintf(&b, "%s: no tool fits these facts.", intent)
	case 1:
		fmt.Fprintf(&b, "%s: the rules selected 1 tool.", intent)
	default:
		fmt.Fprintf(&b, "%s: the rules selected %d tools.", intent, len(entries))
	}
	for _, e := range entries {
		t := &e.tool
		ts := ToolSummary{Tool: e.name, MacroID: t.MacroID, Description: t.Description, DisclosureLevel: t.DisclosureLevel, InputSchema: t.InputSchema}
		if t.Safety != nil {
			ts.RequiresConfirmation = t.Safety.RequiresUserConfirmation
			ts.SideEffects = t.Safety.SideEffects
		}
		if t.Validity != nil {
			ts.ExpiresAt = t.Validity.ExpiresAt
		}
		fmt.Fprintf(&b, "\n- %s", toolSignature(e.name, t.InputSchema))
		if t.Description != "" {
			fmt.Fprintf(&b, ": %s", oneLine(t.Description))
		}
		if ts.RequiresConfirmation {
			b.WriteString(" (the user is asked first)")
		}
		if ci := t.ContextInjection; ci != nil {
			ts.Instructions = ci.Instructions
			if ci.Instructions != "" {
				fmt.Fprintf(&b, "\n  %s", ci.Instructions)
			}
			for _, r := range ci.ContextResources {
				if !seen[r.URI] {
					seen[r.URI] = true
					links = append(links, &mcp.ResourceLink{URI: r.URI, Name: r.URI, Description: r.Relevance})
				}
			}
		}
		sc.MacroTools = append(sc.MacroTools, ts)
	}
	if len(entries) > 0 {
		if dynamic {
			b.WriteString("\nThey are now in your tool list.")
		} else {
			fmt.Fprintf(&b, "\nCall one with %s.", MetaToolName)
		}
	}
	for _, sk := range resp.RequiredSkills {
		sc.RequiredSkills = append(sc.RequiredSkills, sk.SkillID)
		fmt.Fprintf(&b, "\nSkill %s: %s (resource %s%s)", sk.Name, sk.Description, skillURIPrefix, sk.SkillID)
		links = append(links, &mcp.ResourceLink{URI: skillURIPrefix + sk.SkillID, Name: sk.SkillID, Title: sk.Name, Description: sk.Description})
	}
	for _, w := range resp.Warnings {
		if w.Code == protocol.WarnEvalTimeChosen {
			continue // the bridge lets the server's clock decide
		}
		fmt.Fprintf(&b, "\nwarning %s: %s", w.Code, w.Message)
	}
	if explain && resp.ProofHints != nil {
		for _, d := range resp.ProofHints.Derivations {
			fmt.Fprintf(&b, "\nwhy %s: %s", d.MacroID, strings.Join(d.RuleChain, " <- "))
		}
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: b.String()}}, links...)
	return &mcp.CallToolResult{Content: content, StructuredContent: sc}
}

// renderInvoke is the result of a macro-tool: the summary, the result as
// JSON text, the state delta and the suggested next intents.
func renderInvoke(e *macroEntry, resp *protocol.InvokeResponse) *mcp.CallToolResult {
	sc := InvocationContent{Tool: e.name, Summary: resp.Observability.Summary, Result: resp.Result, StateDelta: resp.StateDelta, Next: resp.Next}
	if sc.Result == nil {
		sc.Result = map[string]any{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", e.name)
	if resp.Observability.Summary != "" {
		b.WriteString(resp.Observability.Summary)
	} else {
		b.WriteString("done")
	}
	if raw, err := json.Marshal(sc.Result); err == nil {
		fmt.Fprintf(&b, "\nresult: %s", bounded(string(raw), 16000))
	}
	if n, m := len(resp.StateDelta.Assert), len(resp.StateDelta.Retract); n+m > 0 {
		fmt.Fprintf(&b, "\nstate: %d facts asserted, %d retracted (sent with your next intent calls)", n, m)
	}
	if resp.Next != nil {
		for _, s := range resp.Next.SuggestedIntents {
			fmt.Fprintf(&b, "\nnext: %s", s.Name)
			if s.Description != "" {
				fmt.Fprintf(&b, " (%s)", s.Description)
			}
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: sc}
}
