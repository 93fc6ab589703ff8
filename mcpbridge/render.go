package mcpbridge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// Every answer is one text item, which is what a host passes to its model
// and what the model re-reads at every later turn: no structuredContent
// copy of it (hosts pass both, so a copy is paid twice), nothing the model
// does not act on (macro_ids, disclosure levels, provenance, categories,
// timestamps, eval time: the bridge keeps them), tools as the short
// signatures of toolSignature. Errors are the exception: their
// structuredContent carries the registry's fields for programs
// (errors.go).

// renderEvaluation is the result of an intent tool: the tools the rules
// selected, each once as a signature with its one-line description and
// the rules' instructions, the skills they require, and the warnings that
// change what the model should do.
func (ss *mcpSession) renderEvaluation(intent string, resp *protocol.IntentResponse, entries []*macroEntry, explain bool) *mcp.CallToolResult {
	dynamic := ss.dynamic
	var b strings.Builder
	switch len(entries) {
	case 0:
		fmt.Fprintf(&b, "%s: no tool fits these facts.", intent)
	case 1:
		fmt.Fprintf(&b, "%s: the rules selected 1 tool.", intent)
	default:
		fmt.Fprintf(&b, "%s: the rules selected %d tools.", intent, len(entries))
	}
	for _, e := range entries {
		b.WriteString("\n- ")
		ss.writeTool(&b, e)
	}
	if len(entries) > 0 {
		if dynamic {
			b.WriteString("\nThey are now in your tool list.")
		} else {
			fmt.Fprintf(&b, "\nCall one with %s.", MetaToolName)
		}
	}
	for _, sk := range resp.RequiredSkills {
		fmt.Fprintf(&b, "\nSkill %s: %s (resource %s%s)", sk.Name, oneLine(sk.Description), skillURIPrefix, sk.SkillID)
	}
	writeWarnings(&b, resp.Warnings)
	if explain && resp.ProofHints != nil {
		for _, d := range resp.ProofHints.Derivations {
			fmt.Fprintf(&b, "\nwhy %s: %s", d.MacroID, strings.Join(d.RuleChain, " <- "))
		}
	}
	return textResult(b.String())
}

// writeTool writes one selected macro-tool: its signature, description,
// whether the user is asked first, and the rules' instructions. What this
// session already showed the model (it is in the conversation) is not
// written again: a tool shown exactly so is "name (as before)"; one whose
// signature and description are as before but whose instructions changed
// (a new page's facts) is "name (as before)" and the new instructions;
// one whose description is as before, its signature and instructions.
func (ss *mcpSession) writeTool(b *strings.Builder, e *macroEntry) {
	cur := toolLine(e)
	ss.mu.Lock()
	prev, seen := ss.shown[e.name]
	ss.shown[e.name] = cur
	ss.mu.Unlock()
	switch {
	case seen && prev.sig == cur.sig && prev.desc == cur.desc:
		b.WriteString(e.name + " (as before)")
		if cur.instr != "" && cur.instr != prev.instr {
			b.WriteString("\n  " + cur.instr)
		}
	case seen && prev.desc == cur.desc:
		b.WriteString(cur.sig)
		if cur.instr != "" {
			b.WriteString("\n  " + cur.instr)
		}
	default:
		b.WriteString(cur.String())
	}
}

// shownTool is a selected macro-tool as the model reads it: its signature,
// its description (with whether the user is asked first) and the rules'
// instructions, each on one line.
type shownTool struct{ sig, desc, instr string }

// String is the whole tool: "sig: desc" and the instructions below.
func (t shownTool) String() string {
	s := t.sig + t.desc
	if t.instr != "" {
		s += "\n  " + t.instr
	}
	return s
}

// toolLine is a selected macro-tool as the model reads it.
func toolLine(e *macroEntry) shownTool {
	t := &e.tool
	out := shownTool{sig: toolSignature(e.name, t.InputSchema)}
	if t.Description != "" {
		out.desc = ": " + oneLine(t.Description)
	}
	if t.Safety != nil && t.Safety.RequiresUserConfirmation {
		out.desc += " (asks the user)"
	}
	if ci := t.ContextInjection; ci != nil && ci.Instructions != "" {
		out.instr = oneLine(ci.Instructions)
	}
	return out
}

// writeWarnings writes the warnings that change what the model should
// do. The bridge's own settings explain the others (the eval time it lets
// the server choose, the constraints and token budget it sends).
func writeWarnings(b *strings.Builder, ws []protocol.Warning) {
	for _, w := range ws {
		switch w.Code {
		case protocol.WarnEvalTimeChosen, protocol.WarnConstraintClamped, protocol.WarnTokenBudgetExceeded:
			continue
		}
		fmt.Fprintf(b, "\nwarning %s: %s", w.Code, oneLine(w.Message))
	}
}

// renderInvoke is the result of a macro-tool: what happened (the
// server's summary) and the result as compact JSON (withNext adds what
// comes next). The state delta is not shown: the bridge applied it to
// the working state (resource manglecp://state), which goes with the next
// evaluation. Binary objects of the result become resources of the
// session, shown by their URI (resources.go); every path that shows a
// macro-tool's result (autoRun, follow, a confirmation's answer) renders
// it here.
func (ss *mcpSession) renderInvoke(e *macroEntry, resp *protocol.InvokeResponse) *mcp.CallToolResult {
	var b strings.Builder
	if s := resp.Observability.Summary; s != "" {
		b.WriteString(s)
	} else {
		fmt.Fprintf(&b, "%s: done", e.name)
	}
	if len(resp.Result) > 0 {
		if raw, err := json.Marshal(ss.results.shelve(resp.Result)); err == nil {
			fmt.Fprintf(&b, "\n%s", bounded(string(raw), 16000))
		}
	}
	return textResult(b.String())
}

// textResult is an answer of one text item.
func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
