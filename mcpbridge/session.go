package mcpbridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// modernMCP is the first MCP version whose tool list must not vary as a
// side effect of requests (server/tools.mdx of the MCP specification).
const modernMCP = "2026-07-28"

// Resource URIs the bridge serves.
const (
	ManifestURI    = "manglecp://manifest"
	StateURI       = "manglecp://state"
	skillURIPrefix = "manglecp://skills/"
)

// mcpSession is the state of one MCP session: the working state sent with
// every evaluation, the macro-tools of the latest evaluation, and the
// confirmations asked through elicitation.
type mcpSession struct {
	b        *Bridge
	srv      *mcp.Server
	reserved map[string]bool // intent tool names and the meta-tool
	dynamic  bool            // ModeDynamic: macro-tools become MCP tools
	host     string          // the peer whose budget its confirmation questions use (http.go); "" over stdio

	startMu sync.Mutex // held while the start intent is evaluated
	started bool       // the start intent was evaluated (or failed other than by cancellation)

	install sync.Mutex // serializes selection changes

	mu         sync.Mutex
	tools      map[string]*macroEntry // the latest evaluation's selection, by MCP tool name
	origins    map[string]string      // every tool name selected in this session -> the intent that selected it
	shown      map[string]shownTool   // tool name -> what was last shown to the model (render.go)
	registered []string               // macro-tools registered as MCP tools (ModeDynamic)
	skills     []string               // skill resource URIs registered
	state      *client.State          // the working state, made with the first session's facts profile

	results *resultStore // binary results held as resources (resources.go)
}

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

// pendingConfirm is a confirmation asked through elicitation, bound to
// one macro_id and one set of arguments (their digest).
type pendingConfirm struct {
	macroID string
	args    string
	expires time.Time
	chain   *chainStep // the question was asked for a tool that follows the call at once (steps.go)
	host    string     // whose budget it counts against (consent.go)
}

// Server returns a new MCP server for one MCP session: its tools are one
// tool per intent of the manifest, or the one intent tool (by
// Options.IntentTools), and invoke_macro_tool. That list never changes
// during the session (ModeDynamic instead adds each evaluation's
// macro-tools and has no invoke_macro_tool). Serve each MCP session with
// its own Server: the working state and selection belong to it.
func (b *Bridge) Server() *mcp.Server { return b.newSession().srv }

// newSession returns the state of one MCP session, with its Server.
func (b *Bridge) newSession() *mcpSession {
	m := b.Manifest()
	if m == nil {
		m = &protocol.Manifest{}
	}
	ss := &mcpSession{b: b, reserved: map[string]bool{MetaToolName: true}, dynamic: b.opts.Mode == ModeDynamic, tools: map[string]*macroEntry{}, origins: map[string]string{}, shown: map[string]shownTool{}}
	opts := &mcp.ServerOptions{
		Instructions: instructions(m, b.singleIntentTool(len(m.Intents)), ss.dynamic),
		Logger:       slog.New(warnings{b.opts.Logger.Handler()}),
		SetCacheable: cacheable,
		Capabilities: &mcp.ServerCapabilities{
			// The tool list changes only in ModeDynamic.
			Tools:     &mcp.ToolCapabilities{ListChanged: ss.dynamic},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: b.opts.Name, Title: "MangleCP bridge", Version: b.opts.Version}, opts)
	ss.srv = srv
	ss.results = newResultStore(srv)
	if b.singleIntentTool(len(m.Intents)) {
		t := singleIntentTool(m.Intents, &m.FactsProfile)
		ss.reserved[t.Name] = true
		names := make([]string, len(m.Intents))
		for i, in := range m.Intents {
			names[i] = in.Name
		}
		srv.AddTool(t, ss.singleHandler(names))
	} else {
		tools := intentTools(m.Intents, &m.FactsProfile)
		for _, in := range m.Intents {
			t := tools[in.Name]
			ss.reserved[t.Name] = true
			srv.AddTool(t, ss.intentHandler(in.Name))
		}
	}
	if !ss.dynamic {
		srv.AddTool(metaTool(), ss.metaHandler)
	}
	srv.AddResource(&mcp.Resource{URI: ManifestURI, Name: "manifest", Description: "The MangleCP server's manifest: intents, facts profile, limits.", MIMEType: "application/json"}, ss.readManifest)
	srv.AddResource(&mcp.Resource{URI: StateURI, Name: "state", Description: "The working state: the facts this session sends with every evaluation.", MIMEType: "application/json"}, ss.readState)
	srv.AddReceivingMiddleware(ss.middleware, ss.linkResults)
	return ss
}

// legacyVersions are the MCP versions the SDK speaks before modernMCP.
func legacyVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= modernMCP })
}

// singleIntentTool reports whether a session lists the one intent tool
// rather than one tool per intent, for a manifest of n intents.
func (b *Bridge) singleIntentTool(n int) bool {
	switch b.opts.IntentTools {
	case IntentToolsSingle:
		return true
	case IntentToolsPerIntent:
		return false
	}
	return n > MaxPerIntentTools
}

// instructions tell the host's model how to use the bridge, in two
// sentences.
func instructions(m *protocol.Manifest, single, dynamic bool) string {
	call := "Call an intent tool with facts about the situation, each [predicate, args...] (* marks required facts)"
	if single {
		call = "Call " + IntentToolName + " with an intent and facts about the situation, each [predicate, args...]"
	}
	then := "; the server's rules select the few tools that fit and the answer describes them: call one (or a tool an intent's description names) with " + MetaToolName + "."
	if dynamic {
		then = "; the server's rules select the few tools that fit, which then appear in your tool list."
	}
	return strings.TrimSpace(m.Domain.Description + " " + call + then + " Add \"explain\": true for the rules' proof.")
}

func metaTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        MetaToolName,
		Description: "Call a tool an intent offers: {tool, arguments}.",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"tool":      map[string]any{"type": "string"},
				"arguments": map[string]any{"type": "object"},
			},
			"required": []string{"tool"},
		},
	}
}

// middleware drops expired macro-tools before the host lists or calls
// tools, evaluates the start intent once, and in ModeDynamic refuses MCP
// 2026-07-28.
func (ss *mcpSession) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "tools/call":
			ss.prune(ss.b.now())
			if sess, ok := req.GetSession().(*mcp.ServerSession); ok {
				ss.start(ctx, sess)
			}
		}
		if ss.dynamic {
			// MCP 2026-07-28 forbids a tool list that varies with
			// requests: a host asking for it is refused, and one that
			// initializes with it is answered with an earlier version.
			if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p.ProtocolVersion >= modernMCP {
				p.ProtocolVersion = legacyVersions()[0]
			} else if v, _ := metaOf(req)[mcp.MetaKeyProtocolVersion].(string); v >= modernMCP {
				return nil, refuseModern()
			}
		}
		return next(ctx, method, req)
	}
}

// metaOf is the _meta of a request's params, where MCP 2026-07-28 puts the
// protocol version of every request.
func metaOf(req mcp.Request) map[string]any {
	if req == nil {
		return nil
	}
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() { // a request without params holds a nil pointer
		return nil
	}
	return p.GetMeta()
}

// refuseModern is the answer of a ModeDynamic bridge to a host that asks
// for MCP 2026-07-28: an unsupported version error that says why and
// lists the versions it speaks (the SDK's client then initializes with
// the newest of them).
func refuseModern() error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacyVersions(), Requested: modernMCP})
	return &jsonrpc.Error{
		Code:    mcp.CodeUnsupportedProtocolVersion,
		Message: "manglecp mcp --tools dynamic changes the tool list as calls select tools, which MCP " + modernMCP + " forbids; this bridge speaks " + strings.Join(legacyVersions(), ", ") + " in that mode (run it without --tools dynamic for " + modernMCP + ")",
		Data:    data,
	}
}

// start evaluates the start intent once per MCP session. When the
// request that evaluates it is cancelled, the next request evaluates it.
func (ss *mcpSession) start(ctx context.Context, sess *mcp.ServerSession) {
	st := ss.b.opts.Start
	if st == nil {
		return
	}
	ss.startMu.Lock()
	defer ss.startMu.Unlock()
	if ss.started {
		return
	}
	_, err := ss.evaluate(ctx, nil, st.Intent, st.Params, st.Facts, false)
	if err != nil && ctx.Err() != nil {
		return
	}
	ss.started = true
	if err != nil {
		ss.b.opts.Logger.Warn("start intent", "intent", st.Intent, "error", err.Error())
	}
}

// workingState returns the session's working state.
func (ss *mcpSession) workingState(s *client.Session) *client.State {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.state == nil {
		ss.state = s.NewState()
	}
	return ss.state
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

// intentHandler evaluates one intent with the working state and the
// model's facts.
func (ss *mcpSession) intentHandler(intent string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, facts, perr := parseIntentArgs(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		res, err := ss.evaluate(ctx, req, intent, args.Params, facts, args.Explain)
		if err != nil {
			return ss.fail(ctx, "evaluate", err), nil
		}
		return res, nil
	}
}

// singleHandler is the one intent tool: it evaluates the intent its
// intent argument names, one of intents.
func (ss *mcpSession) singleHandler(intents []string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, facts, perr := parseIntentArgs(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		if !slices.Contains(intents, args.Intent) {
			return errorResult(unknownIntent(args.Intent, intents)), nil
		}
		res, err := ss.evaluate(ctx, req, args.Intent, args.Params, facts, args.Explain)
		if err != nil {
			return ss.fail(ctx, "evaluate", err), nil
		}
		return res, nil
	}
}

// unknownIntent is the error of the single intent tool called without an
// intent, or with one the manifest does not list: the details suggest the
// closest intent and list them all.
func unknownIntent(name string, intents []string) *protocol.Error {
	all := "the intents are: " + strings.Join(intents, ", ")
	if name == "" {
		return protocol.Errorf(CodeInvalidArguments, "%s needs an intent", IntentToolName).
			WithDetails(&protocol.ErrorDetails{Field: "intent", Suggestion: all})
	}
	sug := all
	if c := protocol.Closest(name, intents); c != "" {
		sug = fmt.Sprintf("did you mean %q? %s", c, all)
	}
	return protocol.Errorf(CodeInvalidArguments, "unknown intent %q", bounded(name, 64)).
		WithDetails(&protocol.ErrorDetails{Field: "intent", Suggestion: sug})
}

// fail logs err and returns its error result.
func (ss *mcpSession) fail(ctx context.Context, op string, err error) *mcp.CallToolResult {
	e := ErrorOf(err)
	if _, ok := err.(*protocol.Error); !ok {
		ss.b.opts.Logger.WarnContext(ctx, "bridge call failed", "op", op, "code", string(e.Code), "error", err.Error())
	}
	return errorResult(e)
}

// evaluate sends an intent request (the working state, the continuation
// facts when the intent was suggested, the model's facts), installs the
// selected macro-tools and renders the result; a tool the rules fully
// decided runs at once (autoRun). req is nil for the start intent.
func (ss *mcpSession) evaluate(ctx context.Context, req *mcp.CallToolRequest, intent string, params map[string]any, facts []protocol.Fact, explain bool) (*mcp.CallToolResult, error) {
	resp, entries, err := ss.ask(ctx, req, intent, params, facts, explain, false)
	if err != nil {
		return nil, err
	}
	res := ss.renderEvaluation(ctx, intent, resp, entries, explain)
	if req != nil {
		if e, args := autoRun(entries); e != nil {
			ran := ss.invoke(ctx, req, e.name, args, false)
			res = appendRun(res, e, args, ran)
		}
	}
	return res, nil
}

// ask sends an intent request and installs the selected macro-tools: in
// place of the current selection, or beside it (merge).
func (ss *mcpSession) ask(ctx context.Context, req *mcp.CallToolRequest, intent string, params map[string]any, facts []protocol.Fact, explain, merge bool) (*protocol.IntentResponse, []*macroEntry, error) {
	return ss.askFacts(ctx, req, intent, params, facts, nil, explain, merge)
}

// askFacts is ask with transient facts besides: sent with this request
// (and kept with the tools it selects) but not added to the working
// state.
func (ss *mcpSession) askFacts(ctx context.Context, req *mcp.CallToolRequest, intent string, params map[string]any, facts, transient []protocol.Fact, explain, merge bool) (*protocol.IntentResponse, []*macroEntry, error) {
	s, err := ss.b.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	st := ss.workingState(s)
	extra := append(slices.Clone(facts), transient...)
	for _, sug := range st.Suggested() {
		if sug.Name == intent {
			extra = append(st.Continuation(), extra...)
			if params == nil {
				params = sug.Params
			}
			break
		}
	}
	r := st.Request(protocol.Intent{Name: intent, Params: params}, extra...)
	if explain || ss.b.opts.Disclosure != "" {
		r.Options = &protocol.Options{IncludeProofHints: explain, DisclosurePreference: ss.b.opts.Disclosure}
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
	st.Add(facts...)
	return resp, ss.installTools(resp, intent, params, extra, merge), nil
}

// installTools makes resp's macro-tools the session's selection: they
// replace every macro-tool of earlier evaluations (or, with merge, those
// of the same name) and, in ModeDynamic, become MCP tools (the SDK then
// sends notifications/tools/list_changed). Required skills become
// resources.
func (ss *mcpSession) installTools(resp *protocol.IntentResponse, intent string, params map[string]any, extra []protocol.Fact, merge bool) []*macroEntry {
	dyn := ss.dynamic
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
	if merge {
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

	var uris []string
	for _, sk := range resp.RequiredSkills {
		sk := sk
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
	return entries
}

// macroHandler invokes the macro-tool registered as name.
func (ss *mcpSession) macroHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, perr := parseObject(req.Params.Arguments)
		if perr != nil {
			return errorResult(perr), nil
		}
		return ss.invoke(ctx, req, name, args, true), nil
	}
}

// metaHandler is invoke_macro_tool: {"tool": NAME, "arguments": {...}}.
func (ss *mcpSession) metaHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(orEmpty(req.Params.Arguments), &a); err != nil || a.Tool == "" {
		return errorResult(protocol.Errorf(CodeInvalidArguments, "invoke_macro_tool needs {\"tool\": NAME, \"arguments\": {...}}")), nil
	}
	args, perr := parseObject(a.Arguments)
	if perr != nil {
		return errorResult(perr), nil
	}
	return ss.invoke(ctx, req, a.Tool, args, true), nil
}

// parseObject decodes tool arguments as a JSON object (numbers exact).
func parseObject(raw json.RawMessage) (map[string]any, *protocol.Error) {
	out := map[string]any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, protocol.Errorf(CodeInvalidArguments, "the arguments are not a JSON object")
	}
	return out, nil
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// entry returns the selected macro-tool called name.
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

// invoke runs a selected macro-tool: asks the user first when it requires
// confirmation (or when the server says so), applies the state delta and
// renders the result; with chain, a tool the rules decided follows it in
// the same call (withNext).
func (ss *mcpSession) invoke(ctx context.Context, req *mcp.CallToolRequest, name string, args map[string]any, chain bool) *mcp.CallToolResult {
	if res, ok := ss.resume(ctx, req, name, args); ok {
		// The user answered the question of a tool that follows this
		// call: this call ran when it was asked.
		return res
	}
	if req.Params.RequestState != "" || req.Params.InputResponses != nil {
		// A call that carries the user's answer follows nothing: the
		// follow-up would run under that answer, or ask again.
		chain = false
	}
	origin := digest(name + "\x00" + canonicalArgs(args))
	e, current := ss.entry(name)
	if e == nil || !fits(e, args) {
		// A tool the selection lacks (or whose selected form does not
		// take these arguments: a path the rules did not bind) is
		// reached in this call. Over stateless HTTP (MCP 2026-07-28)
		// every request, the answer to a confirmation too, comes to a
		// new session: the pending question binds the macro_id the
		// evaluation yields again.
		if r, names := ss.reach(ctx, req, name, args); r != nil || e == nil {
			e, current = r, names
		}
	}
	if e == nil {
		perr := protocol.Errorf(CodeUnknownTool, "no evaluation of this session selected a tool named %q", bounded(name, 64))
		sug := "call an intent tool first"
		if len(current) > 0 {
			sug = "the selected tools are: " + strings.Join(current, ", ")
		}
		return errorResult(perr.WithDetails(&protocol.ErrorDetails{Suggestion: sug}))
	}
	def := &e.tool
	if def.InputSchema == nil {
		// Condensed or minimal disclosure: the full definition says which
		// arguments the rules fixed and which the tool takes.
		if full := ss.disclose(ctx, e); full != nil {
			def = full
		}
	}
	fillFixed(def.InputSchema, args)
	errs, refused := e.args.check(def.InputSchema, args)
	if refused != nil {
		return errorResult(refused)
	}
	if len(errs) > 0 {
		// Before the user is asked or the server is called: the model
		// corrects its call from the errors and the signature.
		return errorResult(protocol.Errorf(CodeInvalidArguments, "the arguments of %s do not match its parameters", e.name).
			WithDetails(&protocol.ErrorDetails{SchemaErrors: errs, Suggestion: "call " + toolSignature(e.name, def.InputSchema)}))
	}
	needConfirm := def.Safety != nil && def.Safety.RequiresUserConfirmation
	var token string
	if needConfirm || req.Params.InputResponses != nil || req.Params.RequestState != "" {
		tok, ask, perr := ss.confirm(ctx, req, e, args)
		if perr != nil {
			return errorResult(perr)
		}
		if ask != nil {
			return ask
		}
		token = tok
	}
	return ss.call(ctx, req, e, args, token, chain, origin)
}

// call invokes e on the server with args (and the user's confirmation
// token, if asked), applies the state delta and renders the result, with
// what comes next (withNext; chain: a decided tool follows; origin
// identifies this call for a question that tool needs).
func (ss *mcpSession) call(ctx context.Context, req *mcp.CallToolRequest, e *macroEntry, args map[string]any, token string, chain bool, origin string) *mcp.CallToolResult {
	s, err := ss.b.session(ctx)
	if err != nil {
		return ss.fail(ctx, "invoke", err)
	}
	opt, wait := ss.progress(ctx, req)
	resp, err := s.Invoke(ctx, &protocol.InvokeRequest{MacroID: e.tool.MacroID, Args: args}, opt, client.WithConfirmationToken(token))
	wait()
	if err != nil {
		if transportFailure(err) {
			ss.b.broken(s)
		}
		if perr := ErrorOf(err); perr.Code == protocol.CodeConfirmationRequired && token == "" {
			// The tool's safety block was not disclosed: ask now.
			_, ask, perr := ss.confirm(ctx, req, e, args)
			if perr != nil {
				return errorResult(perr)
			}
			return ask
		}
		return ss.fail(ctx, "invoke", err)
	}
	if perr := ss.b.opts.Limits.checkInvocation(resp); perr != nil {
		return errorResult(perr)
	}
	ss.workingState(s).Apply(resp)
	return ss.withNext(ctx, req, ss.renderInvoke(e, resp), resp, chain, origin)
}

// confirm implements confirmation through MCP elicitation (a multi
// round-trip tool call): the first call returns an input request and
// remembers a one-time nonce bound to the macro_id and arguments; the
// call that carries the user's answer gets a signed confirmation token
// only if the user accepted. The bridge never confirms on its own.
func (ss *mcpSession) confirm(ctx context.Context, req *mcp.CallToolRequest, e *macroEntry, args map[string]any) (token string, ask *mcp.CallToolResult, perr *protocol.Error) {
	key := ss.b.opts.ConfirmationKey
	if len(key) == 0 {
		return "", nil, protocol.Errorf(CodeConfirmationUnavailable, "%s requires the user's confirmation and this bridge holds no confirmation key for the server (start it with --confirm-key); it was not run", e.name)
	}
	argsKey := canonicalArgs(args)
	p := req.Params
	if p.InputResponses != nil || p.RequestState != "" {
		pend, ok := ss.b.confirms.take(p.RequestState, ss.b.now())
		if !ok || pend.macroID != e.tool.MacroID || pend.args != digest(argsKey) {
			return "", nil, protocol.Errorf(CodeConfirmationDeclined, "the confirmation answer does not match a question this bridge asked for this call; %s was not run", e.name)
		}
		r, _ := p.InputResponses["confirm"].(*mcp.ElicitResult)
		if r == nil || r.Action != "accept" {
			action := "no answer"
			if r != nil {
				action = r.Action
			}
			return "", nil, protocol.Errorf(CodeConfirmationDeclined, "the user did not accept running %s (%s); it was not run", e.name, bounded(action, 32))
		}
		return client.ConfirmationToken(key, e.tool.MacroID, ss.b.opts.ConfirmationTTL), nil, nil
	}
	if !elicitationSupported(req.Session) {
		return "", nil, protocol.Errorf(CodeConfirmationUnavailable, "%s requires the user's confirmation and this host does not support MCP elicitation, so it cannot be asked; it was not run", e.name)
	}
	ask, perr = ss.askUser(ctx, e, args, nil)
	return "", ask, perr
}

// askUser returns the input request that asks the user whether e may run
// with args, and remembers the question under a one-time nonce (with the
// step it continues, if any).
func (ss *mcpSession) askUser(ctx context.Context, e *macroEntry, args map[string]any, chain *chainStep) (*mcp.CallToolResult, *protocol.Error) {
	argsKey := canonicalArgs(args)
	nonce := rand.Text()
	ss.b.confirms.add(ss.host, nonce, pendingConfirm{macroID: e.tool.MacroID, args: digest(argsKey), expires: ss.b.now().Add(10 * time.Minute), chain: chain}, ss.b.now())
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
			Message:         confirmMessage(e, ss.disclose(ctx, e), argsKey),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}},
		RequestState: nonce,
	}, nil
}

func elicitationSupported(sess *mcp.ServerSession) bool {
	if sess == nil {
		return false
	}
	p := sess.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	el := p.Capabilities.Elicitation
	return el.Form != nil || el.URL == nil
}

// canonicalArgs is the JSON of args with sorted keys.
func canonicalArgs(args map[string]any) string {
	raw, err := json.Marshal(args)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// progress forwards the MangleCP progress of one call to the host as MCP
// progress notifications, when the host asked for them (a progress
// token). The returned func waits until every note was sent; call it
// after the call returned, before answering.
func (ss *mcpSession) progress(ctx context.Context, req *mcp.CallToolRequest) (client.CallOption, func()) {
	if req == nil || req.Session == nil {
		return nil, func() {}
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return nil, func() {}
	}
	ch := make(chan protocol.Progress, 32)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0.0
		for p := range ch {
			params := &mcp.ProgressNotificationParams{ProgressToken: tok, Message: strings.TrimSpace(p.Status + " " + bounded(p.Detail, 300))}
			if p.Percent != nil && *p.Percent > n && *p.Percent <= 100 {
				n = *p.Percent
			} else {
				n += 0.001 // progress must increase
			}
			params.Progress, params.Total = n, 100
			if err := req.Session.NotifyProgress(ctx, params); err != nil {
				ss.b.opts.Logger.Debug("progress notification", "error", err.Error())
			}
		}
	}()
	opt := client.WithProgress(func(p protocol.Progress) {
		select {
		case ch <- p:
		default: // the host is slow: drop a note rather than block the session
		}
	})
	return opt, func() { close(ch); <-done }
}

func (ss *mcpSession) readManifest(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw, err := json.MarshalIndent(ss.b.Manifest(), "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ManifestURI, MIMEType: "application/json", Text: string(raw)}}}, nil
}

func (ss *mcpSession) readState(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	facts := []protocol.Fact{}
	ss.mu.Lock()
	st := ss.state
	ss.mu.Unlock()
	if st != nil {
		facts = st.Facts()
	}
	raw, err := json.MarshalIndent(facts, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StateURI, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// warnings passes on the warnings and errors of the MCP SDK's logs only:
// its info logs (a session connected) are noise on a host's stderr.
type warnings struct{ slog.Handler }

func (w warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnings) WithAttrs(a []slog.Attr) slog.Handler { return warnings{w.Handler.WithAttrs(a)} }

func (w warnings) WithGroup(n string) slog.Handler { return warnings{w.Handler.WithGroup(n)} }
