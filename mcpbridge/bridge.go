package mcpbridge

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manglecp/manglecp/client"
	"github.com/manglecp/manglecp/internal/ondemand"
	"github.com/manglecp/manglecp/protocol"
)

// Mode says how the bridge shows a host the macro-tools an evaluation
// selected.
type Mode string

// The modes of [Options.Mode].
const (
	// ModeAuto is the default, the same as ModeMeta: the tool list never
	// changes, for every host and MCP version.
	ModeAuto Mode = "auto"
	// ModeDynamic (opt-in) registers each evaluation's macro-tools as MCP
	// tools and sends notifications/tools/list_changed; there is no
	// meta-tool. Every change voids a host's prompt cache, and MCP
	// 2026-07-28 forbids it: a host asking for that version is refused.
	ModeDynamic Mode = "dynamic"
	// ModeMeta never changes the tool list: the macro-tools are described
	// in the intent tool's result and called through invoke_macro_tool.
	ModeMeta Mode = "meta"
)

// IntentTools says how the bridge shows a host the intents of the
// manifest.
type IntentTools string

// The choices of [Options.IntentTools].
const (
	// IntentToolsAuto lists one tool per intent when the identity may use
	// at most [MaxPerIntentTools] intents, and the single tool otherwise:
	// past that, the per-intent tools cost the model more tokens on every
	// turn than one tool whose intent argument names them (docs/TOKENS.md).
	IntentToolsAuto IntentTools = "auto"
	// IntentToolsPerIntent lists one small tool per intent, named after it,
	// whose only argument is facts.
	IntentToolsPerIntent IntentTools = "per-intent"
	// IntentToolsSingle lists one tool, [IntentToolName], whose arguments
	// are intent (an enum of the intents) and facts (over the predicates of
	// every intent, each spelled once).
	IntentToolsSingle IntentTools = "single"
)

// MaxPerIntentTools is the most intents for which [IntentToolsAuto] lists
// one tool per intent.
const MaxPerIntentTools = 3

// IntentToolName is the one intent tool of [IntentToolsSingle].
const IntentToolName = "evaluate_intent"

// MetaToolName is the fixed tool through which the model calls the
// selected macro-tools ([ModeAuto], [ModeMeta]).
const MetaToolName = "invoke_macro_tool"

// Dialer opens a session to the MangleCP server the bridge serves, for
// example with [client.Dial], or [client.NewSession] over one half of an
// in-memory pair whose other half a server in the same process serves.
// The bridge calls it at start and again after the connection broke.
type Dialer func(ctx context.Context) (*client.Session, error)

// Start is an intent evaluated when an MCP session begins, before the
// host's first tools/list, so that hosts which read the tool list only
// once (and one-shot clients such as the MCP Inspector CLI) see the
// macro-tools it selects from the start.
type Start struct {
	Intent string
	Params map[string]any
	Facts  []protocol.Fact
}

// Options configure a [Bridge]. A nil *Options means all defaults; [New]
// copies the options.
type Options struct {
	// Mode: ModeAuto (default), ModeDynamic or ModeMeta.
	Mode Mode
	// IntentTools: IntentToolsAuto (default), IntentToolsPerIntent or
	// IntentToolsSingle.
	IntentTools IntentTools
	// TokenBudget, when positive, is sent as constraints.max_tokens_budget
	// with every evaluation: the server demotes the disclosure level of the
	// lowest-scored macro-tools until their definitions fit (Spec 05).
	TokenBudget int64
	// Disclosure is the disclosure_preference sent with every evaluation
	// (full, condensed, minimal or adaptive); "" leaves it to the server.
	Disclosure string
	// ConfirmationKey is the server's confirmation key. The bridge signs a
	// confirmation token with it only after the user accepted the
	// invocation through MCP elicitation. Without a key, macro-tools that
	// require confirmation are refused (x-bridge_confirmation_unavailable).
	ConfirmationKey []byte
	// ConfirmationTTL is the lifetime of the tokens the bridge signs;
	// default 2 minutes.
	ConfirmationTTL time.Duration
	// Start, when set, is evaluated at the start of every MCP session.
	Start *Start
	// Name and Version identify the bridge to hosts (MCP serverInfo);
	// defaults "manglecp" and "dev".
	Name, Version string
	// Logger receives the bridge's logs (never the host); default discard.
	Logger *slog.Logger
	// Limits bound what the bridge accepts from the MangleCP server; the
	// zero value means the defaults of [Limits].
	Limits Limits
}

// Bridge serves a MangleCP server to MCP hosts. It keeps one MangleCP
// session, shared by every MCP session (a [client.Session] is safe for
// concurrent use), and reconnects when it broke. Each MCP session has its
// own working state, tool list and pending confirmations: see
// [Bridge.Server].
type Bridge struct {
	opts Options
	dial Dialer
	now  func() time.Time // the clock of validity windows and confirmations; time.Now (tests set it)

	conn ondemand.Conn[*client.Session] // the MangleCP session, dialled on demand (session)

	mu       sync.Mutex
	manifest *protocol.Manifest // the last one within the limits
	refused  *protocol.Manifest // the last pushed one over them, logged once

	confirms confirmLedger // questions asked and not yet answered, of every MCP session (consent.go)
}

// New returns a bridge to the server dial reaches. It dials once, so that
// a server that cannot be reached or does not speak this MangleCP version
// fails here, with an error [ErrorOf] maps to
// x-bridge_server_unreachable or x-bridge_protocol_mismatch.
func New(ctx context.Context, dial Dialer, opts *Options) (*Bridge, error) {
	b := &Bridge{dial: dial, now: time.Now}
	b.conn.Dial = b.connect
	b.conn.Drop = func(s *client.Session) { go func() { _ = s.Close() }() }
	b.conn.OnDial = func(s *client.Session, err error) {
		if err == nil {
			b.mu.Lock()
			b.manifest = s.Manifest()
			b.mu.Unlock()
		}
	}
	if opts != nil {
		b.opts = *opts
	}
	b.opts.ConfirmationKey = append([]byte(nil), b.opts.ConfirmationKey...)
	if perr := oneOf(&b.opts.Mode, "mode", ModeAuto, ModeDynamic, ModeMeta); perr != nil {
		return nil, perr
	}
	if perr := oneOf(&b.opts.IntentTools, "intent tools", IntentToolsAuto, IntentToolsPerIntent, IntentToolsSingle); perr != nil {
		return nil, perr
	}
	if b.opts.ConfirmationTTL <= 0 {
		b.opts.ConfirmationTTL = 2 * time.Minute
	}
	if b.opts.Name == "" {
		b.opts.Name = "manglecp"
	}
	if b.opts.Version == "" {
		b.opts.Version = "dev"
	}
	if b.opts.Logger == nil {
		b.opts.Logger = slog.New(slog.DiscardHandler)
	}
	b.opts.Limits = b.opts.Limits.withDefaults()
	if _, err := b.session(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// oneOf checks an option that is one of choices: "" means the first (the
// default); anything else is x-bridge_invalid_arguments, naming them.
func oneOf[T ~string](v *T, what string, choices ...T) *protocol.Error {
	if *v == "" {
		*v = choices[0]
		return nil
	}
	if slices.Contains(choices, *v) {
		return nil
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	use := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	return protocol.Errorf(CodeInvalidArguments, "unknown %s %q: use %s", what, bounded(string(*v), 64), use)
}

// The bridge's registry codes, as short names for this package.
const (
	CodeUnreachable             = protocol.CodeBridgeServerUnreachable
	CodeProtocolMismatch        = protocol.CodeBridgeProtocolMismatch
	CodeInvalidArguments        = protocol.CodeBridgeInvalidArguments
	CodeUnknownTool             = protocol.CodeBridgeUnknownTool
	CodeSchemaRefused           = protocol.CodeBridgeSchemaRefused
	CodeConfirmationDeclined    = protocol.CodeBridgeConfirmationDeclined
	CodeConfirmationUnavailable = protocol.CodeBridgeConfirmationUnavailable
)

// session returns the MangleCP session, dialing when there is none. The
// dial runs without b.mu held, once for every caller that needs it
// meanwhile (the manifest and other MCP sessions are not held up), on a
// context of its own: a caller whose ctx ends stops waiting, and the dial
// is cancelled only when the last one stopped waiting (or on Close). The
// context of a dial that succeeded is not cancelled: a Dialer may tie the
// connection to it (internal/ondemand).
func (b *Bridge) session(ctx context.Context) (*client.Session, error) {
	s, err := b.conn.Get(ctx)
	if errors.Is(err, ondemand.ErrClosed) {
		return nil, protocol.Errorf(CodeUnreachable, "the bridge closed its connection to the MangleCP server")
	}
	return s, err
}

// connect dials and checks the server's protocol version and manifest.
func (b *Bridge) connect(ctx context.Context) (*client.Session, error) {
	s, err := b.dial(ctx)
	if err != nil {
		b.opts.Logger.Warn("connecting to the MangleCP server", "error", err.Error())
		return nil, err
	}
	if m := s.Manifest(); m == nil || m.Protocol.Manglecp != protocol.Version {
		_ = s.Close()
		got := ""
		if m != nil {
			got = m.Protocol.Manglecp
		}
		return nil, protocol.Errorf(CodeProtocolMismatch, "the server speaks MangleCP %q; this bridge speaks %q", bounded(got, 64), protocol.Version)
	}
	m := s.Manifest()
	if perr := b.opts.Limits.checkManifest(m); perr != nil {
		_ = s.Close()
		b.opts.Logger.Warn("refusing the MangleCP server's manifest", "error", perr.Message)
		return nil, perr
	}
	return s, nil
}

// broken forgets s after a transport failure, so the next call dials
// again.
func (b *Bridge) broken(s *client.Session) {
	if b.conn.Forget(s) {
		go func() { _ = s.Close() }()
	}
}

// Manifest returns the latest manifest of the MangleCP server within
// [Options.Limits] (kept while the bridge reconnects; a manifest the
// server pushes over the limits is logged and ignored). Do not modify it.
func (b *Bridge) Manifest() *protocol.Manifest {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.conn.Current(); ok {
		if m := s.Manifest(); m != b.manifest && m != b.refused {
			if perr := b.opts.Limits.checkManifest(m); perr != nil {
				b.refused = m
				b.opts.Logger.Warn("ignoring a manifest the MangleCP server pushed", "error", perr.Message)
			} else {
				b.manifest = m
			}
		}
	}
	return b.manifest
}

// Close closes the MangleCP session. MCP sessions still running get
// x-bridge_server_unreachable until the bridge dials again.
func (b *Bridge) Close() error {
	// A dial under way ends: its callers get x-bridge_server_unreachable
	// (session).
	s, ok := b.conn.Reset()
	if !ok {
		return nil
	}
	return s.Close()
}

// Run serves one MCP session over t until the host disconnects or ctx
// ends. Over stdio use a [StdioTransport], which answers malformed lines
// with JSON-RPC errors and bounds their length, rather than the SDK's
// transports, which end the session on the first one.
func (b *Bridge) Run(ctx context.Context, t mcp.Transport) error {
	err := b.Server().Run(ctx, t)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// DefaultSessionTimeout is how long an MCP session over streamable HTTP
// may stay idle (no request from its host) before [Bridge.HTTPHandler]
// closes it and frees its state, when the options leave it 0. A host that
// comes back later gets 404 for the old Mcp-Session-Id and, as MCP says,
// initializes a new session. A session with a request in flight never
// expires.
const DefaultSessionTimeout = 10 * time.Minute

// HTTPHandler serves MCP over streamable HTTP: each MCP session
// (Mcp-Session-Id) gets its own [Bridge.Server]. opts may be nil. Idle
// sessions are closed after opts.SessionTimeout, [DefaultSessionTimeout]
// when it is 0; a negative SessionTimeout keeps them until their host
// deletes them. Sessions are bounded per peer and in all ([Bridge.HTTP]
// with its defaults).
func (b *Bridge) HTTPHandler(opts *mcp.StreamableHTTPOptions) http.Handler {
	var o mcp.StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	return b.HTTP(HTTPOptions{SessionTimeout: o.SessionTimeout})
}
