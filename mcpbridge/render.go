package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// Every answer is one text item, which is what a host passes to its model
// and what the model re-reads at every later turn: no structuredContent
// copy of it (hosts pass both, so a copy is paid twice), nothing the model
// does not act on (macro_ids, disclosure levels, provenance, categories,
// timestamps, eval time: the bridge keeps them), tools as the short
// signatures of toolSignature. Errors too are one text item; their _meta
// carries the registry's fields for programs (errors.go).

// renderEvaluation is the result of an intent tool: the tools the rules
// selected, each once as a signature with its one-line description and
// the rules' instructions, the skills they require, and the warnings that
// change what the model should do.
func (ss *mcpSession) renderEvaluation(ctx context.Context, ev *evaluation, resp *protocol.IntentResponse, entries []*macroEntry) *mcp.CallToolResult {
	intent := ev.intent
	ss.discloseNew(ctx, entries)
	var b strings.Builder
	switch len(entries) {
	case 0:
		fmt.Fprintf(&b, "%s: no tool fits these facts.", intent)
	case 1:
		fmt.Fprintf(&b, "%s: the rules selected 1 tool.", intent)
	default:
		fmt.Fprintf(&b, "%s: the rules selected %d tools.", intent, len(entries))
	}
	ss.writeTools(&b, entries)
	if len(entries) > 0 {
		if ss.dynamic() {
			b.WriteString("\nThey are now in your tool list.")
		} else {
			fmt.Fprintf(&b, "\nCall one with %s.", MetaToolName)
		}
	}
	for _, sk := range resp.RequiredSkills {
		fmt.Fprintf(&b, "\nSkill %s: %s (resource %s%s)", sk.Name, oneLine(sk.Description), skillURIPrefix, sk.SkillID)
	}
	writeWarnings(&b, resp.Warnings)
	if ev.explain && resp.ProofHints != nil {
		for _, d := range resp.ProofHints.Derivations {
			fmt.Fprintf(&b, "\nwhy %s: %s", d.MacroID, strings.Join(d.RuleChain, " <- "))
		}
	}
	return textResult(b.String())
}

// writeTools writes selected macro-tools, one "\n- " line each, except
// that the tools shown before exactly so and written without new
// instructions share one line: "- find_on_page, navigate, hover (as
// before)" (a name list is a third of the tokens of a line per name, and
// an answer after each step of a live page lists the page's ten tools).
func (ss *mcpSession) writeTools(b *strings.Builder, entries []*macroEntry) {
	var same []string
	flush := func() {
		if len(same) > 0 {
			b.WriteString("\n- " + strings.Join(same, ", ") + asBefore)
			same = same[:0]
		}
	}
	for _, e := range entries {
		var one strings.Builder
		ss.writeTool(&one, e)
		if one.String() == e.name+asBefore {
			same = append(same, e.name)
			continue
		}
		flush()
		b.WriteString("\n- " + one.String())
	}
	flush()
}

// asBefore follows the name of a tool shown before exactly so.
const asBefore = " (as before)"

// writeTool writes one selected macro-tool: its signature, description,
// whether the user is asked first, and the rules' instructions. What this
// session already showed the model (it is in the conversation) is not
// written again: a tool shown exactly so is "name (as before)"; one whose
// signature and description are as before but whose instructions changed
// (a new page's facts) is "name (as before)" and the new instructions;
// one whose description is as before, its signature and instructions.
//
// Every tool shows its parameters the first time it is offered: one the
// server condensed (its token budget, or a low score) is written with
// the signature of its full definition, which discloseNew fetched before,
// and its condensed description. Later, condensed again, it is "name (as
// before)", or its new signature alone when its parameters changed.
//
// A new signature whose parameters differ from those shown before only in
// the values an enum offers is written as the change when that is shorter
// (changedSignature: `click_element(as before; element_id no longer
// "Delete order #7")`, after a page lost a row).
func (ss *mcpSession) writeTool(b *strings.Builder, e *macroEntry) {
	cur := toolLine(e)
	ss.mu.Lock()
	full := e.full
	condensed := e.tool.InputSchema == nil
	if condensed && full != nil && full.InputSchema != nil {
		cur.sig = toolSignature(e.name, full.InputSchema)
		cur.schema = full.InputSchema
		cur.params = true
		cur.desc = withoutSignature(cur.desc, e.name)
		if full.Safety != nil && full.Safety.RequiresUserConfirmation && !strings.HasSuffix(cur.desc, askMarker) {
			cur.desc += askMarker // condensed tools have no safety block of their own
		}
	}
	prev, seen := ss.shown[e.name]
	if seen && prev.params && condensed {
		// Condensed now, shown with its parameters before: as before
		// (the condensed text says less than the model has), or its new
		// signature when the parameters changed (a new page's fields).
		same := !cur.params || cur.sig == prev.sig
		sig := cur.sig
		if !same {
			sig = changedSignature(e.name, prev.schema, cur.schema, cur.sig)
			prev.sig, prev.schema = cur.sig, cur.schema
			ss.shown[e.name] = prev
		}
		ss.mu.Unlock()
		if same {
			b.WriteString(e.name + asBefore)
		} else {
			b.WriteString(sig)
		}
		return
	}
	ss.shown[e.name] = cur
	ss.mu.Unlock()
	switch {
	case seen && prev.sig == cur.sig && prev.desc == cur.desc:
		b.WriteString(e.name + asBefore)
		if cur.instr != "" && cur.instr != prev.instr {
			b.WriteString("\n  " + cur.instr)
		}
	case seen && prev.desc == cur.desc:
		b.WriteString(changedSignature(e.name, prev.schema, cur.schema, cur.sig))
		if cur.instr != "" {
			b.WriteString("\n  " + cur.instr)
		}
	default:
		b.WriteString(cur.String())
	}
}

// changedSignature is how a tool whose signature changed since the model
// saw it is written: its whole new signature sig, or, when the parameters
// are the same but for the values of their enums and saying so is
// shorter, what changed: `name(as before; element_id also "Next", no
// longer "Save"|"Cancel")`.
func changedSignature(name string, before, after map[string]any, sig string) string {
	pb, _ := before["properties"].(map[string]any)
	pa, _ := after["properties"].(map[string]any)
	if len(pb) == 0 || len(pb) != len(pa) || !slices.Equal(requiredOf(before), requiredOf(after)) {
		return sig
	}
	var changes []string
	for _, n := range slices.Sorted(maps.Keys(pa)) {
		a, _ := pa[n].(map[string]any)
		b, ok := pb[n].(map[string]any)
		if !ok || a == nil || b == nil || !reflect.DeepEqual(withoutEnum(a), withoutEnum(b)) {
			return sig
		}
		ea, _ := a["enum"].([]any)
		eb, _ := b["enum"].([]any)
		if len(ea) == 0 || len(eb) == 0 {
			if len(ea) != len(eb) {
				return sig // an enum appeared or went: a new type
			}
			continue
		}
		if _, fixed := fixedValue(a, slices.Contains(requiredOf(after), n)); fixed {
			return sig // one value left: the signature says name="value"
		}
		added, gone := enumDiff(eb, ea), enumDiff(ea, eb)
		var parts []string
		if len(added) > 0 {
			parts = append(parts, "also "+joinValues(added))
		}
		if len(gone) > 0 {
			parts = append(parts, "no longer "+joinValues(gone))
		}
		if len(parts) > 0 {
			changes = append(changes, n+" "+strings.Join(parts, ", "))
		}
	}
	if len(changes) == 0 {
		return sig
	}
	delta := name + "(as before; " + strings.Join(changes, "; ") + ")"
	if len(delta) >= len(sig) {
		return sig
	}
	return delta
}

// withoutEnum is a property's schema without its enum.
func withoutEnum(p map[string]any) map[string]any {
	out := maps.Clone(p)
	delete(out, "enum")
	return out
}

// enumDiff is the values of b that a lacks, in b's order.
func enumDiff(a, b []any) []any {
	var out []any
	for _, v := range b {
		if !slices.ContainsFunc(a, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			out = append(out, v)
		}
	}
	return out
}

// joinValues writes enum values as a signature does: "a"|"b".
func joinValues(vs []any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = compactJSON(v)
	}
	return strings.Join(out, "|")
}

// withoutSignature drops from a condensed description (": summary") the
// short signature a summary may start with ("press_key(key): press
// Enter..."), which the full signature now says.
func withoutSignature(desc, name string) string {
	rest, ok := strings.CutPrefix(desc, ": "+name+"(")
	if !ok {
		return desc
	}
	i := strings.Index(rest, ")")
	if i < 0 {
		return desc
	}
	rest = strings.TrimLeft(strings.TrimPrefix(rest[i+1:], ":"), " .")
	if rest == "" {
		return ""
	}
	return ": " + rest
}

// shownTool is a selected macro-tool as the model reads it: its signature,
// its description (with whether the user is asked first) and the rules'
// instructions, each on one line; params is whether the signature showed
// its parameters, schema the input schema it was written from.
type shownTool struct {
	sig, desc, instr string
	params           bool
	schema           map[string]any
}

// String is the whole tool: "sig: desc" and the instructions below.
func (t shownTool) String() string {
	s := t.sig + t.desc
	if t.instr != "" {
		s += "\n  " + t.instr
	}
	return s
}

// askMarker ends the line of a tool that asks the user before it runs.
const askMarker = " (asks the user)"

// toolLine is a selected macro-tool as the model reads it.
func toolLine(e *macroEntry) shownTool {
	t := &e.tool
	out := shownTool{sig: toolSignature(e.name, t.InputSchema), params: t.InputSchema != nil, schema: t.InputSchema}
	if t.Description != "" {
		out.desc = ": " + oneLine(t.Description)
	}
	if t.Safety != nil && t.Safety.RequiresUserConfirmation {
		out.desc += askMarker
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
	if result := notInSummary(resp.Result, resp.Observability.Summary); len(result) > 0 {
		if text, err := resultText(ss.results.shelve(result)); err == nil {
			fmt.Fprintf(&b, "\n%s", bounded(text, 16000))
		}
	}
	return textResult(b.String())
}

// notInSummary is a result without the top-level strings the summary
// already quotes whole (a page's title in `Opened; page "Orders".`): the
// model reads them once. The server's result itself is unchanged.
func notInSummary(result map[string]any, summary string) map[string]any {
	var out map[string]any
	for k, v := range result {
		s, ok := v.(string)
		if !ok || len(s) < 4 || !strings.Contains(summary, strconv.Quote(s)) {
			continue
		}
		if out == nil {
			out = maps.Clone(result)
		}
		delete(out, k)
	}
	if out == nil {
		return result
	}
	return out
}

// resultText is a result as the model reads it: JSON without HTML escapes
// ("=>" stays "=>", not "=\u003e"), and each top-level string holding a
// line break as text after it ("KEY:" and the lines), never as one line of
// \n escapes.
func resultText(result map[string]any) (string, error) {
	rest := make(map[string]any, len(result))
	var blocks []string
	for k, v := range result {
		if s, ok := v.(string); ok && strings.Contains(s, "\n") {
			blocks = append(blocks, k)
			continue
		}
		rest[k] = v
	}
	var b strings.Builder
	if len(rest) > 0 {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rest); err != nil {
			return "", err
		}
	}
	slices.Sort(blocks)
	for _, k := range blocks {
		fmt.Fprintf(&b, "%s:\n%s\n", k, strings.TrimRight(result[k].(string), "\n"))
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// textOf is the text of a result's text items.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// textResult is an answer of one text item.
func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
