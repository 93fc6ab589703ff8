package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// Options configure [Run]. A nil *Options means all defaults.
type Options struct {
	// Level is the conformance level to check (1, 2 or 3): checks of
	// higher levels SKIP. 0 means the server's declared
	// protocol.conformance_level (1 when missing, at most 3).
	Level int
	// Fixture drives the domain-specific checks. When nil, the built-in
	// fixture for the manifest's domain.id is used if its evaluate request
	// selects the tools it names (the report says so); else there is none,
	// and the checks that need one SKIP.
	Fixture *Fixture
	// NoFixture runs without a fixture even when a built-in one is for the
	// server's domain.
	NoFixture bool
	// Token is the credential for a server that requires authentication:
	// sent as "Authorization: Bearer" over HTTP and WebSocket, with an
	// authenticate message on session transports, and to a stdio server as
	// MANGLECP_AUTH_TOKEN.
	Token string
	// DialTimeout bounds connecting and reading the manifest, and waiting
	// for a booting server to become ready; default 20 s.
	DialTimeout time.Duration
	// RequestTimeout bounds each request; default 30 s.
	RequestTimeout time.Duration
	// HTTPClient makes HTTP requests and WebSocket upgrades; default: a
	// client with no overall timeout (RequestTimeout applies).
	HTTPClient *http.Client
	// Stderr receives a stdio server's standard error; default: only the
	// tail is kept, to explain a server that does not start.
	Stderr io.Writer
	// Checks, when not empty, runs only the checks whose ID equals one of
	// them or starts with one of them followed by "." (a category, e.g.
	// "errors"); other checks are left out of the report.
	Checks []string
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.DialTimeout <= 0 {
		out.DialTimeout = 20 * time.Second
	}
	if out.RequestTimeout <= 0 {
		out.RequestTimeout = 30 * time.Second
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{}
	}
	return out
}

// Run runs the conformance suite against target: a URL ("http://",
// "https://": the host's well-known manifest, or the manifest's own URL;
// "ws://", "wss://": a WebSocket endpoint, /manglecp/ws when the URL has no
// path) or "stdio:COMMAND ARGS..." (the command is started and spoken to
// over stdin and stdout; arguments are split on white space).
//
// Checks that fail are reported in the Report, not as an error: Run returns
// an error only when the target cannot be reached at all (no connection,
// no first message) or opts are invalid. ctx bounds the whole run.
func Run(ctx context.Context, target string, opts *Options) (*Report, error) {
	o := opts.withDefaults()
	if o.Level < 0 || o.Level > 3 {
		return nil, fmt.Errorf("conformance: level %d: use 1, 2 or 3 (or 0 for the declared level)", o.Level)
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	w, err := dialTarget(dctx, target, o.Token, &o)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", target, err)
	}
	r := &runner{ctx: ctx, opts: o, target: target, w: w, fixture: o.Fixture.inPresent(start)}
	defer func() { r.closeAll() }()
	r.readManifest()
	r.level = r.declared
	if r.level < 1 {
		r.level = 1
	}
	if r.level > 3 {
		r.level = 3
	}
	if o.Level != 0 {
		r.level = o.Level
	}
	if r.manifestOK() {
		r.authenticateSession(r.w)
	}
	rep := &Report{Target: target, Transport: w.kind(), Protocol: protocol.Version, DeclaredLevel: r.declared, Level: r.level}
	if r.m != nil && r.m.ServerName != "" {
		rep.Server = strings.TrimSpace(r.m.ServerName + " " + r.m.ServerVersion)
	}
	if r.fixture == nil && !o.NoFixture && r.manifestOK() {
		rep.Fixture = r.chooseFixture(start)
	}
	if r.fixture != nil && rep.Fixture == "" {
		rep.Fixture = r.fixture.Name
		if rep.Fixture == "" {
			rep.Fixture = "(unnamed)"
		}
	}
	var defs []checkDef
	for _, def := range catalogue() {
		if selected(def.ID, o.Checks) {
			defs = append(defs, def)
		}
	}
	rep.Checks = make([]Check, len(defs))
	for phase := 0; phase <= 2; phase++ {
		for i, def := range defs {
			if def.Phase != phase {
				continue
			}
			out := r.runCheck(def)
			rep.Checks[i] = Check{ID: def.ID, Category: def.Category, Spec: def.Spec, Level: def.Level, Title: def.Title,
				Status: out.status, Detail: out.detail}
		}
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	rep.summarize()
	return rep, nil
}

// selected reports whether the check id is chosen by filters.
func selected(id string, filters []string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		f = strings.TrimSuffix(f, ".")
		if id == f || strings.HasPrefix(id, f+".") {
			return true
		}
	}
	return false
}

// outcome is what a check function returns.
type outcome struct {
	status Status
	detail string
}

func pass(format string, args ...any) outcome { return outcome{Pass, fmt.Sprintf(format, args...)} }
func fail(format string, args ...any) outcome { return outcome{Fail, fmt.Sprintf(format, args...)} }
func skip(format string, args ...any) outcome { return outcome{Skip, fmt.Sprintf(format, args...)} }

// failures collects the problems one check finds.
type failures []string

func (f *failures) add(format string, args ...any) { *f = append(*f, fmt.Sprintf(format, args...)) }

// result is FAIL with the problems (at most 5 shown), or PASS with detail.
func (f failures) result(passDetail string, args ...any) outcome {
	if len(f) == 0 {
		return pass(passDetail, args...)
	}
	shown := f
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(f)-5))
	}
	return fail("%s", strings.Join(shown, "; "))
}

// idMode says what id the answer to a message must carry (Spec 09 2.3).
type idMode int

const (
	idEcho idMode = iota // the request's id
	idNull               // null: the id could not be read
	idAny                // either (a message refused before it was read)
)

// exchange is one message sent and its answer.
type exchange struct {
	check string
	typ   protocol.MessageType // what was sent ("" for garbage)
	id    string
	mode  idMode
	wire  string
	r     *reply
}

// runner holds one run's state. Checks run one after another; only the
// exchanges of pipelining checks overlap.
type runner struct {
	ctx     context.Context
	opts    Options
	target  string
	w       wire
	extra   []wire // other connections opened by checks
	fixture *Fixture
	level   int
	cur     string // the running check

	declared    int
	manifestRaw json.RawMessage // the manifest payload
	mmap        map[string]any  // the manifest payload as a map
	m           *protocol.Manifest
	manifestErr string

	mu        sync.Mutex
	exchanges []*exchange
	nextID    atomic.Int64

	mainDone bool
	main     *mainRequest
	mainWhy  string // why there is no main request

	invokeDone bool
	invokeOut  *invokeOutcome

	proofDone bool
	proof     map[string]any
	proofWhy  string

	violations map[protocol.Code]*violationCase
}

func (r *runner) closeAll() {
	for _, w := range r.extra {
		_ = w.close()
	}
	_ = r.w.close()
}

// runCheck runs one check, turning a level or transport mismatch into
// SKIP and a crash of the check into FAIL.
func (r *runner) runCheck(def checkDef) (out outcome) {
	if def.Level > r.level {
		return skip("a level %d requirement; checking level %d", def.Level, r.level)
	}
	if def.Transport != "" && !transportMatches(def.Transport, r.w.kind()) {
		return skip("applies to %s only; this target is %s", transportName(def.Transport), r.w.kind())
	}
	if def.NeedsManifest && !r.manifestOK() {
		return skip("no usable manifest (see manifest.delivered)")
	}
	if err := r.ctx.Err(); err != nil {
		return skip("the run was stopped: %v", err)
	}
	if def.Phase != 2 && def.Category != catManifest && !credentialFree[def.ID] && r.manifestOK() && r.m.Auth.Required && r.opts.Token == "" {
		return skip("auth.required is true and no token was given (Options.Token, --token)")
	}
	r.cur = def.ID
	defer func() {
		if p := recover(); p != nil {
			out = fail("the check crashed on the server's answers: %v\n%s", p, debug.Stack())
		}
	}()
	return def.Run(r)
}

// credentialFree are the checks that run without credentials when the
// server requires authentication (the checks judging every answer, phase
// 2, run too).
var credentialFree = map[string]bool{
	"security.auth_required": true, "security.auth_invalid": true, "security.cors": true,
	"transport.http.well_known": true, "transport.http.caching": true, "transport.session.manifest_first": true,
}

func transportMatches(want, kind string) bool {
	switch want {
	case "session":
		return kind == "websocket" || kind == "stdio"
	default:
		return want == kind
	}
}

func transportName(t string) string {
	if t == "session" {
		return "session transports (WebSocket, stdio)"
	}
	return t
}

// readManifest decodes the first manifest and, when the server is
// booting, waits for it to become ready.
func (r *runner) readManifest() {
	m := r.w.manifest()
	deadline := time.Now().Add(r.opts.DialTimeout)
	for {
		r.parseManifest(m)
		if r.m == nil || r.m.Status != protocol.StatusBooting || time.Now().After(deadline) {
			return
		}
		time.Sleep(200 * time.Millisecond)
		switch w := r.w.(type) {
		case *httpWire:
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.RequestTimeout)
			next := w.get(ctx, nil)
			cancel()
			if next.Err == nil {
				m = next
				w.resolve(next)
			}
		case *sessionWire:
			if env := w.latestManifest(); env != nil {
				m = &reply{Env: env, Raw: nil}
			}
		}
	}
}

func (r *runner) parseManifest(m *reply) {
	r.manifestErr, r.m, r.mmap, r.manifestRaw = "", nil, nil, nil
	switch {
	case m == nil || m.Err != nil:
		r.manifestErr = "no manifest: " + m.describe()
		return
	case m.Env == nil:
		r.manifestErr = "the manifest is not a JSON envelope: " + m.describe()
		return
	case m.Env.Type != string(protocol.TypeManifest):
		r.manifestErr = fmt.Sprintf("got a %q message where the manifest belongs", m.Env.Type)
		return
	}
	var mm map[string]any
	if err := decodeNumbers(m.Env.Payload, &mm); err != nil || mm == nil {
		r.manifestErr = "the manifest payload is not a JSON object"
		return
	}
	var typed protocol.Manifest
	if err := decodeNumbers(m.Env.Payload, &typed); err != nil {
		// Keep what decoded; the field checks report the types.
		typed = protocol.Manifest{}
		_ = json.Unmarshal(m.Env.Payload, &typed)
	}
	r.manifestRaw, r.mmap, r.m = m.Env.Payload, mm, &typed
	if lvl, ok := asInt(path(mm, "protocol", "conformance_level")); ok {
		r.declared = int(lvl)
	}
}

// manifestOK reports whether a manifest payload was read.
func (r *runner) manifestOK() bool { return r.m != nil }

// authenticateSession sends the authenticate message on a session whose
// manifest requires authentication, when a token was given (Spec 08
// section 3.3).
func (r *runner) authenticateSession(w wire) *reply {
	sw, ok := w.(*sessionWire)
	if !ok || r.opts.Token == "" || r.m == nil || !r.m.Auth.Required {
		return nil
	}
	prev := r.cur
	r.cur = "session.authenticate"
	defer func() { r.cur = prev }()
	return r.sendOn(sw, protocol.TypeAuthenticate, map[string]any{"scheme": "bearer", "token": r.opts.Token})
}

// newID returns a fresh request id.
func (r *runner) newID() string { return fmt.Sprintf("cf-%d", r.nextID.Add(1)) }

// record keeps an exchange for the checks that judge every answer.
func (r *runner) record(typ protocol.MessageType, id string, mode idMode, w wire, rep *reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exchanges = append(r.exchanges, &exchange{check: r.cur, typ: typ, id: id, mode: mode, wire: w.kind(), r: rep})
}

// allExchanges returns a copy of the exchanges so far.
func (r *runner) allExchanges() []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange(nil), r.exchanges...)
}

// requestCtx is the context of one request.
func (r *runner) requestCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.ctx, r.opts.RequestTimeout)
}

// encode builds a request envelope.
func encode(typ protocol.MessageType, id string, payload any) []byte {
	env, err := protocol.NewEnvelope(typ, id, payload)
	if err != nil {
		panic(fmt.Sprintf("encode %s: %v", typ, err)) // payloads are plain data
	}
	raw, err := env.Encode()
	if err != nil {
		panic(fmt.Sprintf("encode %s: %v", typ, err))
	}
	return raw
}

// send sends a request with a fresh id on the main connection.
func (r *runner) send(typ protocol.MessageType, payload any) *reply {
	return r.sendOn(r.w, typ, payload)
}

func (r *runner) sendOn(w wire, typ protocol.MessageType, payload any) *reply {
	id := r.newID()
	return r.sendRaw(w, typ, encode(typ, id, payload), id, idEcho)
}

// sendRaw sends msg (whose id is id, "" when unreadable) and records the
// exchange.
func (r *runner) sendRaw(w wire, typ protocol.MessageType, msg []byte, id string, mode idMode) *reply {
	ctx, cancel := r.requestCtx()
	defer cancel()
	rep := w.do(ctx, typ, msg, id, false)
	r.record(typ, id, mode, w, rep)
	return rep
}

// dial opens another connection to the target with token ("" for none).
func (r *runner) dial(token string) (wire, error) {
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.DialTimeout)
	defer cancel()
	w, err := dialTarget(ctx, r.target, token, &r.opts)
	if err != nil {
		return nil, err
	}
	r.extra = append(r.extra, w)
	return w, nil
}

// errOf checks that rep is an error and returns its payload; problem is
// "" when it is.
func errOf(rep *reply) (*errInfo, string) {
	if !rep.is(protocol.TypeError) {
		return nil, "got " + rep.describe()
	}
	return rep.errorInfo(), ""
}

// wantCode checks that rep is an error with one of codes.
func wantCode(rep *reply, codes ...protocol.Code) (*errInfo, string) {
	e, problem := errOf(rep)
	if problem != "" {
		return nil, fmt.Sprintf("want error %s, %s", joinCodes(codes), problem)
	}
	for _, c := range codes {
		if e.Code == string(c) {
			return e, ""
		}
	}
	return e, fmt.Sprintf("want error %s, got %s (%s)", joinCodes(codes), e.Code, clip([]byte(e.Message), 120))
}

func joinCodes(codes []protocol.Code) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = string(c)
	}
	return strings.Join(s, " or ")
}

// noMain is the outcome of checks that need the main request when there
// is none.
func (r *runner) noMain() outcome {
	return skip("no intent request that the server evaluates: %s", r.mainWhy)
}
