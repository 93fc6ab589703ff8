package mcpbridge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// One model turn per job step. Four things save the model a turn:
//
//   - autoRun: a tool the rules fully decided runs in the call that
//     selected it.
//   - withNext: the answer of a macro-tool carries the selection of the
//     intents it suggests next, so the model calls the next tool at once
//     instead of calling the intent first.
//   - follow: in that answer, the tool the rules fully decided for a
//     suggested intent follows the call at once: a pure one runs, one
//     that requires confirmation is asked of the user (the question shows
//     its arguments) and runs if accepted. One follows per call, never a
//     tool with side effects that asks no one.
//   - reach: invoke_macro_tool with a tool the current selection lacks
//     evaluates the intent that selects it, in the same call.

// mandatoryPhase is the selection phase of the tools an intent's rules
// made mandatory (Spec 05: the skeleton of the selection).
const mandatoryPhase = "skeleton"

// maxNext bounds the suggested intents a macro-tool's answer evaluates.
const maxNext = 2

// autoRun returns the tool of an evaluation the rules fully decided, with
// its arguments: the evaluation made exactly one tool mandatory; it needs
// no confirmation and has no side effect (its safety block says so); and
// each of its parameters has exactly one possible value: an enum of one,
// bound by the rules from the facts (sent when required), or the default
// of an optional parameter (left to the server). A parameter without
// either (free text, a choice among several values) is the model's. The decision is the rules'
// (which tools are mandatory, which values a parameter may take); the
// bridge only reads it off the response. nil when no tool qualifies.
func autoRun(entries []*macroEntry) (*macroEntry, map[string]any) {
	e, args := decided(entries)
	if e == nil || needsUser(e) {
		return nil, nil
	}
	return e, args
}

// follows returns the tool of a suggested intent's selection that follows
// a call at once (decided), with its arguments: one without side effects,
// or one that requires the user's confirmation (asked in the same call).
// A tool with side effects that asks no one never follows.
func follows(entries []*macroEntry) (*macroEntry, map[string]any) {
	e, args := decided(entries)
	if e == nil {
		return nil, nil
	}
	if s := e.tool.Safety; needsUser(e) && !s.RequiresUserConfirmation {
		return nil, nil
	}
	return e, args
}

// needsUser reports whether e requires confirmation or has a side effect
// (an undisclosed safety block counts as both).
func needsUser(e *macroEntry) bool {
	s := e.tool.Safety
	return s == nil || s.RequiresUserConfirmation || slices.ContainsFunc(s.SideEffects, func(x string) bool { return x != "none" })
}

// decided returns the one mandatory tool of a selection whose every
// parameter the rules decided, and its arguments (autoRun), whatever its
// safety block says; nil when there is none.
func decided(entries []*macroEntry) (*macroEntry, map[string]any) {
	var only *macroEntry
	for _, e := range entries {
		if m := e.tool.Metadata; m != nil && m.SelectionPhase == mandatoryPhase {
			if only != nil {
				return nil, nil // more than one mandatory tool: the model chooses
			}
			only = e
		}
	}
	if only == nil || only.tool.InputSchema == nil || only.tool.Safety == nil {
		return nil, nil
	}
	props, _ := only.tool.InputSchema["properties"].(map[string]any)
	req := requiredOf(only.tool.InputSchema)
	args := map[string]any{}
	for name, v := range props {
		p, _ := v.(map[string]any)
		enum, _ := p["enum"].([]any)
		_, hasDefault := p["default"]
		switch {
		case len(enum) == 1:
			if slices.Contains(req, name) {
				args[name] = enum[0]
			}
		case hasDefault && !slices.Contains(req, name) && len(enum) == 0:
			// the server fills it in
		default:
			return nil, nil // a value the model must choose
		}
	}
	return only, args
}

// appendRun adds to an evaluation's answer the answer of the tool autoRun
// ran at once.
func appendRun(res *mcp.CallToolResult, e *macroEntry, args map[string]any, ran *mcp.CallToolResult) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(textOf(res))
	fmt.Fprintf(&b, "\nRan %s%s at once (the rules fixed its arguments):\n%s", e.name, compactArgs(args), textOf(ran))
	out := textResult(b.String())
	out.IsError = ran.IsError
	return out
}

// compactArgs writes arguments as (k=v, ...).
func compactArgs(args map[string]any) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + compactJSON(args[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
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

// withNext adds to a macro-tool's answer what comes next: each intent the
// server suggests (at most maxNext) is evaluated with the working state
// and the continuation facts, and its selection joins the session's, so
// the answer lists the tools the model may call next with
// invoke_macro_tool. A suggested intent that cannot be evaluated yet (it
// needs facts only the model can state) is named; one that selects
// nothing is left out.
// With chain, the first tool the rules decided for a suggested intent
// (follows) follows at once: a pure one runs and its answer (with what
// comes after it, not followed further) is added; one that requires
// confirmation is asked of the user now, and the answer is given when the
// host returns with the user's answer (resume). origin identifies the
// call (its tool and arguments) that the question continues.
func (ss *mcpSession) withNext(ctx context.Context, req *mcp.CallToolRequest, res *mcp.CallToolResult, resp *protocol.InvokeResponse, chain bool, origin string) *mcp.CallToolResult {
	if resp.Next == nil || len(resp.Next.SuggestedIntents) == 0 {
		return res
	}
	var b strings.Builder
	b.WriteString(textOf(res))
	var named []string
	merge := false
	for i, sug := range resp.Next.SuggestedIntents {
		if i >= maxNext || ss.dynamic {
			named = append(named, sug.Name)
			continue
		}
		_, entries, err := ss.ask(ctx, req, sug.Name, sug.Params, nil, false, merge)
		if err != nil {
			named = append(named, sug.Name+ss.needs(sug.Name))
			continue
		}
		if len(entries) == 0 {
			continue // the rules offer nothing there now: not worth a line
		}
		merge = true
		if e, args := follows(entries); chain && e != nil && req != nil {
			chain = false
			if !needsUser(e) {
				ran := ss.invoke(ctx, req, e.name, args, false)
				fmt.Fprintf(&b, "\nnext %s: ran %s%s at once:\n%s", sug.Name, e.name, compactArgs(args), textOf(ran))
				continue
			}
			if ss.canAsk(req) && b.Len() <= maxFollowText {
				ask, perr := ss.askUser(ctx, e, args, &chainStep{origin: origin, intent: sug.Name, entry: e, args: args, prefix: b.String()})
				if perr == nil {
					return ask
				}
			}
		}
		fmt.Fprintf(&b, "\nnext %s:", sug.Name)
		ss.discloseNew(ctx, entries)
		ss.writeTools(&b, entries)
	}
	if len(named) > 0 {
		fmt.Fprintf(&b, "\nnext: %s", strings.Join(named, ", "))
	}
	return textResult(b.String())
}

// reach evaluates what a call of a tool the current selection lacks
// (or whose selected form does not take these arguments) needs, in the
// same call: the intent that selected a tool of that name earlier in the
// session, then the intents the last invocation suggested, then every
// intent of the manifest, until one selects it for these arguments. Each
// intent is evaluated with the facts the call's arguments state for it
// (argFacts: a model that calls preview_edit on a path has mentioned
// it), which do not join the working state. It returns the entry (the
// first found, when none takes the arguments, so the call reports why),
// or nil and the names the session can call.
func (ss *mcpSession) reach(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any) (*macroEntry, []string) {
	var order []string
	add := func(in string) {
		if in != "" && !slices.Contains(order, in) {
			order = append(order, in)
		}
	}
	ss.mu.Lock()
	add(ss.origins[name])
	st := ss.state
	ss.mu.Unlock()
	if st != nil {
		for _, sug := range st.Suggested() {
			add(sug.Name)
		}
	}
	if m := ss.b.Manifest(); m != nil {
		for _, in := range m.Intents {
			add(in.Name)
		}
	}
	var first *macroEntry
	for _, in := range order {
		if _, _, err := ss.askFacts(ctx, req, in, nil, nil, ss.argFacts(in, args), false, false); err != nil {
			continue
		}
		e, _ := ss.entry(name)
		if e == nil {
			continue
		}
		if fits(e, args) {
			return e, nil
		}
		if first == nil {
			first = e
		}
	}
	if first != nil {
		return first, nil
	}
	return ss.entry(name)
}

// fits reports whether args (with the values the rules fixed) match e's
// parameters; true when its schema was not disclosed.
func fits(e *macroEntry, args map[string]any) bool {
	schema := e.tool.InputSchema
	if schema == nil {
		return true
	}
	a := maps.Clone(args)
	if a == nil {
		a = map[string]any{}
	}
	fillFixed(schema, a)
	errs, refused := e.args.check(schema, a)
	return len(errs) == 0 && refused == nil
}

// maxArgFacts bounds the facts argFacts states for one call.
const maxArgFacts = 16

// argFacts are the facts a call's arguments state for an intent, as a
// model would state them with the intent: for each fact predicate the
// intent accepts (required or optional) that has one string argument,
// each non-empty string the call passes under that argument's name, at
// the top level or in the objects of an array argument, is one such
// fact. For the workspace domain, preview_edit {"path": "a.py"} states
// mentioned("a.py") for edit. At most maxArgFacts; the server validates
// them as any client fact.
func (ss *mcpSession) argFacts(intent string, args map[string]any) []protocol.Fact {
	m := ss.b.Manifest()
	if m == nil || len(args) == 0 {
		return nil
	}
	var preds []string
	for _, in := range m.Intents {
		if in.Name == intent {
			preds = append(append(preds, in.RequiredFacts...), in.OptionalFacts...)
		}
	}
	var out []protocol.Fact
	seen := map[string]bool{}
	for _, pred := range preds {
		ps := m.FactsProfile.Predicate(pred)
		if ps == nil || ps.Arity != 1 || len(ps.ArgNames) != 1 || ps.Direction == protocol.DirectionOutput ||
			(len(ps.ArgTypes) == 1 && ps.ArgTypes[0] != protocol.ArgString && ps.ArgTypes[0] != protocol.ArgAny) {
			continue
		}
		arg := ps.ArgNames[0]
		state := func(v any) {
			s, ok := v.(string)
			if !ok || s == "" || seen[pred+"\x00"+s] || len(out) >= maxArgFacts {
				return
			}
			seen[pred+"\x00"+s] = true
			out = append(out, protocol.NewFact(pred, s))
		}
		state(args[arg])
		keys := slices.Sorted(maps.Keys(args))
		for _, k := range keys {
			items, _ := args[k].([]any)
			for _, it := range items {
				if obj, ok := it.(map[string]any); ok {
					state(obj[arg])
				}
			}
		}
	}
	return out
}

// needs is " (needs a, b)" for an intent with required facts (the model
// states them with the intent), or "".
func (ss *mcpSession) needs(intent string) string {
	if m := ss.b.Manifest(); m != nil {
		for _, in := range m.Intents {
			if in.Name == intent && len(in.RequiredFacts) > 0 {
				return " (needs " + strings.Join(in.RequiredFacts, ", ") + ")"
			}
		}
	}
	return ""
}

// maxFollowText bounds, in bytes, the answer a question for a tool that
// follows a call keeps until the user answers (the confirmation ledger
// holds at most maxPending of them: 16 MiB at most for one bridge). A
// longer answer is given at once and the tool is listed instead. 16 KiB
// holds the diff of a rename across several files (a preview of six files
// was 4.5 KiB), whose apply then follows in the same call.
const maxFollowText = 16 << 10

// chainStep is a tool that follows a call at once and needs the user's
// confirmation: the call ran when the user was asked; its answer waits
// here for the user's.
type chainStep struct {
	origin string         // digest of the call: tool name and arguments
	intent string         // the suggested intent that selected the tool
	entry  *macroEntry    // the tool that follows
	args   map[string]any // its arguments, all decided by the rules
	prefix string         // the call's answer, at most maxFollowText bytes
}

// canAsk reports whether the user can be asked in this call: the bridge
// holds a confirmation key and the host supports elicitation.
func (ss *mcpSession) canAsk(req *mcp.CallToolRequest) bool {
	return len(ss.b.opts.ConfirmationKey) > 0 && req != nil && elicitationSupported(req.Session)
}

// resume answers the call that comes back with the user's answer to the
// question of a tool that followed it (withNext): the call itself ran
// when the question was asked; the tool runs now if the user accepted,
// and the answer is the call's, then the tool's. ok is false when the
// call carries no such answer (confirm handles the others).
func (ss *mcpSession) resume(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any) (*mcp.CallToolResult, bool) {
	p := req.Params
	if p.RequestState == "" || !ss.b.confirms.following(p.RequestState) {
		return nil, false
	}
	pend, ok := ss.b.confirms.take(p.RequestState, ss.b.now())
	if !ok || pend.chain == nil {
		return nil, false
	}
	c := pend.chain
	if c.origin != digest(name+"\x00"+canonicalArgs(args)) || pend.macroID != c.entry.tool.MacroID || pend.args != digest(canonicalArgs(c.args)) {
		return errorResult(protocol.Errorf(CodeConfirmationDeclined, "the confirmation answer does not match a question this bridge asked for this call; %s was not run", c.entry.name)), true
	}
	var b strings.Builder
	b.WriteString(c.prefix)
	fmt.Fprintf(&b, "\nnext %s: %s%s", c.intent, c.entry.name, compactArgs(shownArgs(c.args)))
	r, _ := p.InputResponses["confirm"].(*mcp.ElicitResult)
	if r == nil || r.Action != "accept" {
		action := "no answer"
		if r != nil {
			action = r.Action
		}
		fmt.Fprintf(&b, " was not run: the user did not accept it (%s). To ask again, call:\n- ", bounded(action, 32))
		ss.writeTool(&b, c.entry)
		return textResult(b.String()), true
	}
	token := client.ConfirmationToken(ss.b.opts.ConfirmationKey, c.entry.tool.MacroID, ss.b.opts.ConfirmationTTL)
	ran := ss.call(ctx, req, c.entry, maps.Clone(c.args), token, false, "")
	fmt.Fprintf(&b, " ran at once, the user accepted:\n%s", textOf(ran))
	out := textResult(b.String())
	out.IsError = ran.IsError
	return out, true
}

// shownArgs is args without those whose value the signature does not
// show (too long: "=fixed"), which the model already read in the answer.
func shownArgs(args map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		if len(compactJSON(v)) <= maxShownFixed {
			out[k] = v
		}
	}
	return out
}
