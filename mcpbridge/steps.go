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

// The steps the bridge takes on its own, each saving the model a turn:
//
//   - autoRun (after an intent tool's evaluation): the tool the rules
//     fully decided runs in the call that selected it.
//   - withNext (after a macro-tool ran): the answer carries the selection
//     of the intents the server suggests next (look-aheads), so the model
//     calls the next tool at once instead of calling the intent first; in
//     it, after the model's own call, the tool the rules decided for a
//     suggested intent follows at once: a pure one runs, one that requires
//     confirmation is asked of the user (the question shows its arguments)
//     and runs if accepted (resume). One follows per call, never a tool
//     with side effects that asks no one.
//   - reach (resolving a macro-tool call): a tool the current selection
//     lacks is reached by evaluating the intent that selects it, in the
//     same call.
//
// What the bridge may do with a decided tool is the rules' decision read
// off the response (decide); the bridge adds no judgement of its own.

// mandatoryPhase is the selection phase of the tools an intent's rules
// made mandatory (Spec 05: the skeleton of the selection).
const mandatoryPhase = "skeleton"

// maxNext bounds the suggested intents a macro-tool's answer evaluates.
const maxNext = 2

// autonomy is what the bridge may do on its own with the tool the rules
// decided for a selection.
type autonomy int

const (
	// modelChooses: no tool is decided (none or several mandatory, or a
	// parameter the model must choose): the model chooses.
	modelChooses autonomy = iota
	// runsAtOnce: decided, without confirmation nor side effect: it runs
	// without asking (autoRun, or it follows a call).
	runsAtOnce
	// asksUser: decided and requires confirmation: after the model's call
	// it follows once the user accepted; autoRun leaves it to the model.
	asksUser
	// listedOnly: decided, with side effects and asking no one (or an
	// undisclosed safety block): it never runs on its own.
	listedOnly
)

// decision is the tool the rules decided for a selection, with its
// arguments, and what the bridge may do with it.
type decision struct {
	autonomy autonomy
	entry    *macroEntry
	args     map[string]any
}

// follows reports whether the decided tool may follow a call at once: it
// runs, or the user is asked in the same call.
func (d decision) follows() bool { return d.autonomy == runsAtOnce || d.autonomy == asksUser }

// decide reads the tool the rules fully decided off a selection: the
// evaluation made exactly one tool mandatory and each of its parameters
// has exactly one possible value: an enum of one, bound by the rules from
// the facts (sent when required), or the default of an optional parameter
// (left to the server). A parameter without either (free text, a choice
// among several values) is the model's. Its safety block then says
// whether it runs at once (no confirmation, no side effect), asks the user
// first, or is only listed.
func decide(entries []*macroEntry) decision {
	e, args := decided(entries)
	switch {
	case e == nil:
		return decision{autonomy: modelChooses}
	case !needsUser(e):
		return decision{autonomy: runsAtOnce, entry: e, args: args}
	case e.tool.Safety.RequiresUserConfirmation:
		return decision{autonomy: asksUser, entry: e, args: args}
	}
	return decision{autonomy: listedOnly, entry: e, args: args}
}

// needsUser reports whether e requires confirmation or has a side effect
// (an undisclosed safety block counts as both).
func needsUser(e *macroEntry) bool {
	s := e.tool.Safety
	return s == nil || s.RequiresUserConfirmation || slices.ContainsFunc(s.SideEffects, func(x string) bool { return x != "none" })
}

// decided returns the one mandatory tool of a selection whose every
// parameter the rules decided, and its arguments, whatever its safety
// block says (which must be disclosed); nil when there is none.
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

// autoRun is the step after an intent tool's evaluation: the tool the
// rules fully decided without confirmation nor side effect runs at once,
// and its answer follows the evaluation's.
func (ss *mcpSession) autoRun(ctx context.Context, req *mcp.CallToolRequest, res *mcp.CallToolResult, entries []*macroEntry) *mcp.CallToolResult {
	d := decide(entries)
	if d.autonomy != runsAtOnce {
		return res
	}
	ran := ss.invoke(ctx, req, d.entry.name, d.args, byBridge)
	var b strings.Builder
	b.WriteString(textOf(res))
	fmt.Fprintf(&b, "\nRan %s%s at once (the rules fixed its arguments):\n%s", d.entry.name, compactArgs(d.args), textOf(ran))
	out := textResult(b.String())
	out.IsError = ran.IsError
	return out
}

// withNext is the step after a macro-tool ran: each intent the server
// suggests (at most maxNext) is evaluated with the working state and the
// continuation facts (a look-ahead), and its selection joins the
// session's, so the answer lists the tools the model may call next with
// invoke_macro_tool. A suggested intent that cannot be evaluated yet (it
// needs facts only the model can state) is named; one that selects
// nothing is left out.
//
// After the model's own call (c.by), the first tool the rules decided for
// a suggested intent (decision.follows) follows at once: a pure one runs
// and its answer (with what comes after it, not followed further) is
// added; one that requires confirmation is asked of the user now, and the
// answer is given when the host returns with the user's answer (resume).
func (ss *mcpSession) withNext(ctx context.Context, c *macroCall, res *mcp.CallToolResult, resp *protocol.InvokeResponse) *mcp.CallToolResult {
	if resp.Next == nil || len(resp.Next.SuggestedIntents) == 0 {
		return res
	}
	var b strings.Builder
	b.WriteString(textOf(res))
	var named []string
	into := replaceSelection                     // the first look-ahead that selects anything replaces the selection
	mayFollow := c.by == byModel && c.req != nil // one tool follows per call
	for i, sug := range resp.Next.SuggestedIntents {
		if i >= maxNext || ss.dynamic() {
			named = append(named, sug.Name)
			continue
		}
		_, entries, err := ss.evaluate(ctx, c.req, &evaluation{intent: sug.Name, params: sug.Params, into: into})
		if err != nil {
			named = append(named, sug.Name+ss.needs(sug.Name))
			continue
		}
		if len(entries) == 0 {
			continue // the rules offer nothing there now: not worth a line
		}
		into = joinSelection
		if d := decide(entries); mayFollow && d.follows() {
			mayFollow = false
			if d.autonomy == runsAtOnce {
				ran := ss.invoke(ctx, c.req, d.entry.name, d.args, byBridge)
				fmt.Fprintf(&b, "\nnext %s: ran %s%s at once:\n%s", sug.Name, d.entry.name, compactArgs(d.args), textOf(ran))
				continue
			}
			if ss.canAsk(c.req) && b.Len() <= maxFollowText {
				return ss.askUser(ctx, d.entry, d.args, &followUp{origin: c.origin, intent: sug.Name, entry: d.entry, args: d.args, prefix: b.String()})
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

// followUp is a tool that follows a call at once and needs the user's
// confirmation: the call ran when the user was asked; its answer waits
// here for the user's.
type followUp struct {
	origin string         // callDigest of the call: tool name and arguments
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
// call carries no such answer (the consent stage handles the others).
func (ss *mcpSession) resume(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any) (*mcp.CallToolResult, bool) {
	p := req.Params
	if p.RequestState == "" || !ss.b.confirms.following(p.RequestState) {
		return nil, false
	}
	pend, ok := ss.b.confirms.take(p.RequestState, ss.b.now())
	if !ok || pend.follow == nil {
		return nil, false
	}
	f := pend.follow
	if f.origin != callDigest(name, args) || pend.macroID != f.entry.tool.MacroID || pend.args != digest(canonicalArgs(f.args)) {
		return errorResult(protocol.Errorf(CodeConfirmationDeclined, "the confirmation answer does not match a question this bridge asked for this call; %s was not run", f.entry.name)), true
	}
	var b strings.Builder
	b.WriteString(f.prefix)
	fmt.Fprintf(&b, "\nnext %s: %s%s", f.intent, f.entry.name, compactArgs(shownArgs(f.args)))
	if action, accepted := userAnswer(p); !accepted {
		fmt.Fprintf(&b, " was not run: the user did not accept it (%s). To ask again, call:\n- ", bounded(action, 32))
		ss.writeTool(&b, f.entry)
		return textResult(b.String()), true
	}
	token := client.ConfirmationToken(ss.b.opts.ConfirmationKey, f.entry.tool.MacroID, ss.b.opts.ConfirmationTTL)
	ran := ss.run(ctx, &macroCall{req: req, name: f.entry.name, args: maps.Clone(f.args), by: byAnswer, entry: f.entry, def: &f.entry.tool, token: token})
	fmt.Fprintf(&b, " ran at once, the user accepted:\n%s", textOf(ran))
	out := textResult(b.String())
	out.IsError = ran.IsError
	return out, true
}

// reach evaluates what a call of a tool the current selection lacks
// (or whose selected form does not take these arguments) needs, in the
// same call: each intent of reachOrder in turn, until one selects it for
// these arguments. Each intent is evaluated with the facts the call's
// arguments state for it (argFacts: a model that calls preview_edit on a
// path has mentioned it), which do not join the working state. It returns
// the entry (the first found, when none takes the arguments, so the call
// reports why), or nil and the names the session can call.
func (ss *mcpSession) reach(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any) (*macroEntry, []string) {
	ss.mu.Lock()
	origin := ss.origins[name]
	st := ss.state
	ss.mu.Unlock()
	var suggested []protocol.SuggestedIntent
	if st != nil {
		suggested = st.Suggested()
	}
	var intents []protocol.IntentDecl
	if m := ss.b.Manifest(); m != nil {
		intents = m.Intents
	}
	var first *macroEntry
	for _, in := range reachOrder(origin, suggested, intents) {
		if _, _, err := ss.evaluate(ctx, req, &evaluation{intent: in, stated: ss.argFacts(in, args)}); err != nil {
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

// reachOrder is the order in which reach evaluates intents, each once:
// origin (the intent that selected a tool of that name earlier in the
// session, "" none), then the intents the last invocation suggested, then
// every intent of the manifest.
func reachOrder(origin string, suggested []protocol.SuggestedIntent, intents []protocol.IntentDecl) []string {
	var order []string
	add := func(in string) {
		if in != "" && !slices.Contains(order, in) {
			order = append(order, in)
		}
	}
	add(origin)
	for _, sug := range suggested {
		add(sug.Name)
	}
	for _, in := range intents {
		add(in.Name)
	}
	return order
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
