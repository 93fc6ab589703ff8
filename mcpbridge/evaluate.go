package mcpbridge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/protocol"
)

// Evaluations and the session's selection: every intent request the
// session sends (the model's, and those the bridge sends on its own in the
// steps of steps.go) is an evaluation; the macro-tools it selects become
// the session's selection, which macro-tool calls resolve against.

// evaluation is one intent request of the session.
type evaluation struct {
	intent string
	params map[string]any // nil: the params the server suggested for the intent, if any
	// facts are the model's: they join the working state once the server
	// accepted them.
	facts []protocol.Fact
	// stated are facts a call's arguments state (the reach step): sent
	// with this request and kept with the tools it selects, never added to
	// the working state.
	stated  []protocol.Fact
	explain bool      // the model asked for the rules' proof ("explain": true)
	into    selection // how the selected tools join the session's selection
}

// selection says how an evaluation's macro-tools join the session's
// selection.
type selection int

const (
	// replaceSelection: they replace every macro-tool of earlier
	// evaluations (the model's evaluation, the reach step, the first
	// look-ahead of an answer).
	replaceSelection selection = iota
	// joinSelection: they join the selection, in place of those of the
	// same name (the next look-aheads of the same answer).
	joinSelection
)

// macroEntry is one selected macro-tool.
type macroEntry struct {
	name    string
	tool    protocol.MacroTool
	expires time.Time  // zero: no validity window
	args    *validator // checks arguments against tool.InputSchema

	// The evaluation that selected it: its intent, params and the facts
	// sent beside the working state, to ask for it again (disclose).
	intent   string
	params   map[string]any
	extra    []protocol.Fact
	evalTime protocol.Time

	full *protocol.MacroTool // at full disclosure, once asked for (disclose); under mcpSession.mu
}

// evaluate sends ev with the working state (and the continuation facts
// when the server suggested ev's intent), checks the answer against the
// limits, adds the model's facts to the working state and installs the
// selected macro-tools. req is the host's call (for progress), nil for the
// start intent.
func (ss *mcpSession) evaluate(ctx context.Context, req *mcp.CallToolRequest, ev *evaluation) (*protocol.IntentResponse, []*macroEntry, error) {
	s, err := ss.b.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	st := ss.workingState(s)
	params := ev.params
	extra := append(slices.Clone(ev.facts), ev.stated...)
	for _, sug := range st.Suggested() {
		if sug.Name == ev.intent {
			extra = append(st.Continuation(), extra...)
			if params == nil {
				params = sug.Params
			}
			break
		}
	}
	r := st.Request(protocol.Intent{Name: ev.intent, Params: params}, extra...)
	if ev.explain || ss.b.opts.Disclosure != "" {
		r.Options = &protocol.Options{IncludeProofHints: ev.explain, DisclosurePreference: ss.b.opts.Disclosure}
	}
	if n := ss.b.opts.TokenBudget; n > 0 {
		r.Constraints = &protocol.Constraints{MaxTokensBudget: &n}
	}
	opt, wait := ss.progress(ctx, req)
	resp, err := s.Evaluate(ctx, r, opt)
	wait()
	if err != nil {
		if transportFailure(err) {
			ss.b.broken(s)
		}
		return nil, nil, err
	}
	if perr := ss.b.opts.Limits.checkEvaluation(resp); perr != nil {
		return nil, nil, perr
	}
	st.Add(ev.facts...)
	return resp, ss.installTools(resp, ev.intent, params, extra, ev.into), nil
}

// installTools makes resp's macro-tools the session's selection, as into
// says, and, in ModeDynamic, MCP tools (the SDK then sends
// notifications/tools/list_changed). Required skills become resources.
func (ss *mcpSession) installTools(resp *protocol.IntentResponse, intent string, params map[string]any, extra []protocol.Fact, into selection) []*macroEntry {
	dyn := ss.dynamic()
	ss.install.Lock()
	defer ss.install.Unlock()

	entries := make([]*macroEntry, 0, len(resp.MacroTools))
	tools := make(map[string]*macroEntry, len(resp.MacroTools))
	for _, t := range resp.MacroTools {
		name := toolName(t.Name)
		for i := 2; ss.reserved[name] || tools[name] != nil; i++ {
			name = fmt.Sprintf("%s_%d", toolName(t.Name), i)
		}
		e := &macroEntry{name: name, tool: t, args: &validator{}, intent: intent, params: params, extra: extra, evalTime: resp.EvalTimeUsed}
		if t.Validity != nil && t.Validity.ExpiresAt != nil {
			e.expires = t.Validity.ExpiresAt.Time
		}
		tools[name] = e
		entries = append(entries, e)
	}
	ss.mu.Lock()
	old := ss.registered
	if into == joinSelection {
		for n, e := range ss.tools {
			if tools[n] == nil {
				tools[n] = e
			}
		}
	}
	for n := range tools {
		ss.origins[n] = tools[n].intent
	}
	ss.tools = tools
	ss.registered = nil
	if dyn {
		for _, e := range entries {
			ss.registered = append(ss.registered, e.name)
		}
	}
	var gone []string
	for _, n := range old {
		if tools[n] == nil {
			gone = append(gone, n)
		}
	}
	ss.mu.Unlock()

	if len(gone) > 0 {
		ss.srv.RemoveTools(gone...)
	}
	if dyn {
		for _, e := range entries {
			ss.srv.AddTool(macroToolDef(e.name, &e.tool), ss.macroHandler(e.name))
		}
	}
	ss.installSkills(resp.RequiredSkills)
	return entries
}

// installSkills makes the skills an evaluation requires the session's
// skill resources, in place of the earlier ones; under ss.install.
func (ss *mcpSession) installSkills(skills []protocol.Skill) {
	var uris []string
	for _, sk := range skills {
		uri := skillURIPrefix + sk.SkillID
		uris = append(uris, uri)
		mime := sk.ContentType
		if mime == "" {
			mime = "text/markdown"
		}
		ss.srv.AddResource(&mcp.Resource{URI: uri, Name: sk.SkillID, Title: sk.Name, Description: sk.Description, MIMEType: mime},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: sk.Content}}}, nil
			})
	}
	ss.mu.Lock()
	var stale []string
	for _, u := range ss.skills {
		if !slices.Contains(uris, u) {
			stale = append(stale, u)
		}
	}
	ss.skills = uris
	ss.mu.Unlock()
	if len(stale) > 0 {
		ss.srv.RemoveResources(stale...)
	}
}

// entry returns the selected macro-tool called name, or nil and the names
// of the selection.
func (ss *mcpSession) entry(name string) (*macroEntry, []string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if e := ss.tools[name]; e != nil && (e.expires.IsZero() || ss.b.now().Before(e.expires)) {
		return e, nil
	}
	names := make([]string, 0, len(ss.tools))
	for n := range ss.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return nil, names
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

// prune drops the macro-tools whose validity window ended.
func (ss *mcpSession) prune(now time.Time) {
	ss.install.Lock()
	defer ss.install.Unlock()
	ss.mu.Lock()
	var gone []string
	for name, e := range ss.tools {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(ss.tools, name)
			if slices.Contains(ss.registered, name) {
				gone = append(gone, name)
			}
		}
	}
	ss.registered = slices.DeleteFunc(ss.registered, func(n string) bool { return slices.Contains(gone, n) })
	ss.mu.Unlock()
	if len(gone) > 0 {
		ss.srv.RemoveTools(gone...)
	}
}
