package mcpbridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/protocol"
)

// An MCP session's lifecycle: Server makes it (its tools, resources and
// middleware); before each tools/list and tools/call the middleware drops
// expired macro-tools and evaluates the start intent once; the session
// ends with its MCP connection. What one tools/call does is in call.go.

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
	mode     Mode            // ModeDynamic: macro-tools become MCP tools (dynamic)
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
	listing := b.intentListing(len(m.Intents))
	ss := &mcpSession{b: b, reserved: map[string]bool{MetaToolName: true}, mode: b.opts.Mode, tools: map[string]*macroEntry{}, origins: map[string]string{}, shown: map[string]shownTool{}}
	opts := &mcp.ServerOptions{
		Instructions: instructions(m, listing, ss.mode),
		Logger:       slog.New(warnings{b.opts.Logger.Handler()}),
		SetCacheable: cacheable,
		Capabilities: &mcp.ServerCapabilities{
			// The tool list changes only in ModeDynamic.
			Tools:     &mcp.ToolCapabilities{ListChanged: ss.dynamic()},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: b.opts.Name, Title: "MangleCP bridge", Version: b.opts.Version}, opts)
	ss.srv = srv
	ss.results = newResultStore(srv)
	if listing == IntentToolsSingle {
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
	if !ss.dynamic() {
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

// intentListing is how a session lists the intents of a manifest of n
// intents: IntentToolsSingle (the one intent tool) or
// IntentToolsPerIntent, as Options.IntentTools says (auto: by n).
func (b *Bridge) intentListing(n int) IntentTools {
	if b.opts.IntentTools == IntentToolsAuto || b.opts.IntentTools == "" {
		if n > MaxPerIntentTools {
			return IntentToolsSingle
		}
		return IntentToolsPerIntent
	}
	return b.opts.IntentTools
}

// dynamic reports whether the session registers the selected macro-tools
// as MCP tools (ModeDynamic) rather than describing them in answers.
func (ss *mcpSession) dynamic() bool { return ss.mode == ModeDynamic }

// instructions tell the host's model how to use the bridge, in two
// sentences.
func instructions(m *protocol.Manifest, listing IntentTools, mode Mode) string {
	call := "Call an intent tool with facts about the situation, each [predicate, args...] (* marks required facts)"
	if listing == IntentToolsSingle {
		call = "Call " + IntentToolName + " with an intent and facts about the situation, each [predicate, args...]"
	}
	then := "; the server's rules select the few tools that fit and the answer describes them: call one (or a tool an intent's description names) with " + MetaToolName + "."
	if mode == ModeDynamic {
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
		if ss.dynamic() {
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

// start evaluates the start intent once per MCP session: its tools are
// the session's selection, and no answer is rendered (none reaches the
// model, so the model's first answer shows them whole). When the request
// that evaluates it is cancelled, the next request evaluates it.
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
	_, _, err := ss.evaluate(ctx, nil, &evaluation{intent: st.Intent, params: st.Params, facts: st.Facts})
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
