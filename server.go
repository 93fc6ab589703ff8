package manglecp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"

	"github.com/manglecp/manglecp/internal/admission"
	"github.com/manglecp/manglecp/internal/factset"
	"github.com/manglecp/manglecp/internal/freelist"
	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/internal/memstore"
	"github.com/manglecp/manglecp/internal/metrics"
	"github.com/manglecp/manglecp/internal/oauth"
	"github.com/manglecp/manglecp/internal/ratelimit"
	"github.com/manglecp/manglecp/kernel"
	"github.com/manglecp/manglecp/protocol"
)

// ConformanceLevel is the Spec 10 level this server declares: the highest
// level whose every requirement our tests prove today.
const ConformanceLevel = 3

// Server answers MangleCP messages for one domain. It is safe for
// concurrent use. Create it with [New] and load it with [Server.Load]
// (it answers from the first moment, "booting" until loaded), or with
// [NewServer], which does both.
type Server struct {
	opts   Options
	domain Domain
	// prog is the current rule program; Reload swaps it atomically and each
	// request uses the one it loaded first, so a response is evaluated
	// entirely by one rule version.
	prog atomic.Pointer[kernel.Program]
	view atomic.Pointer[programView] // of the program requests used last
	// factBuffers keeps the buffers a large request's fact set was built
	// in, for a later one to reuse (see evaluation.summarized); rawFacts
	// the lists a request's raw facts were split into, emptied.
	factBuffers *freelist.List[*factset.Buffers]
	rawFacts    *freelist.List[[]json.RawMessage]
	actions     map[string]ActionSpec
	samples     []sample // the domain's sample requests, run on reload
	// registry holds the standard codes and the domain's (Domain.Codes).
	registry *protocol.Registry
	store    Store
	macros   *macros.Cache // decoded macro-tools, in front of Options.Store
	results  *resultCache  // nil when Options.ResultCacheBytes < 0
	confirm  *confirmer
	log      *slog.Logger
	metrics  *metrics.Metrics // nil when Options.Metrics is nil
	tracer   trace.Tracer

	// state is the lifecycle state (lifecycle.go), changed only under
	// life.mu. loaded is set by Load, before the state leaves booting, once
	// the fields that need the rules are set: a reader that sees it true
	// may read them.
	state    atomic.Uint32
	life     lifecycle
	loaded   atomic.Bool
	loadErr  error       // what New could not build; Load returns it
	parts    domainParts // the domain's parts' health (Domain.Health)
	manifest atomic.Pointer[manifestSnapshot]
	inflight inflight

	// authFails limits failed authentications per client and server-wide
	// (always on, per process; see package admission).
	authFails *admission.AuthFailures
	nextID    atomic.Uint64

	// slots bounds concurrent evaluations, shared fairly between callers; a
	// request that cannot get a slot within Options.QueueTimeout is refused
	// (rate_limited).
	slots *admission.Slots

	oauth *oauth.Verifier // nil when OAuth is off

	reloadMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	subsMu  sync.Mutex
	subs    map[int]func()
	nextSub int
}

// NewServer loads the domain's rules and returns a ready server: it is
// [New] then [Server.Load], kept for callers that need no booting phase.
// It fails, naming file and line, when a rule file is invalid, and when
// the rules name an action the domain does not register.
func NewServer(d Domain, opts *Options) (*Server, error) {
	s := New(d, opts)
	if err := s.Load(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// New returns the server of d in the "booting" state, without loading
// anything: its manifest says "booting" (with the limits and whether
// authentication is required, OAuth included) and every request gets
// server_not_ready with retry_after_ms (Spec 04 section 4.2). A host
// serves it from the first moment and calls [Server.Load]; sessions
// opened meanwhile receive the ready manifest and every later change.
func New(d Domain, opts *Options) *Server {
	o := opts.withDefaults()
	reg, err := d.registry()
	if err != nil {
		reg, _ = protocol.NewRegistry() // the standard codes; Load fails with err
	} else if verr := opts.Validate(); verr != nil {
		err = fmt.Errorf("manglecp: invalid options: %w", verr) // Load fails with it
	}
	s := &Server{
		opts:      o,
		domain:    d,
		registry:  reg,
		loadErr:   err,
		actions:   d.Actions,
		log:       o.Logger,
		tracer:    newTracer(o.TracerProvider),
		authFails: admission.NewAuthFailures(),
		slots:     admission.NewSlots(o.MaxConcurrentEvaluations, o.MaxEvaluationsPerCaller),
		oauth:     newOAuthVerifier(o.OAuth),
		subs:      map[int]func(){},
		// Buffers of large requests kept for later ones: one per processor,
		// at most 4 (freelist.PerProcessor), each at most 8 MiB (a fact set
		// of about 100,000 facts; larger ones are left to the collector).
		factBuffers: freelist.New(freelist.PerProcessor(), 8<<20, (*factset.Buffers).Bytes),
		rawFacts:    freelist.New(freelist.PerProcessor(), 4<<20, func(l []json.RawMessage) int { return cap(l) * int(unsafe.Sizeof(json.RawMessage(nil))) }),
	}
	s.state.Store(uint32(stateBooting))
	s.life.mu.Lock()
	s.publishManifest(stateBooting)
	s.life.mu.Unlock()
	return s
}

// Load loads the domain's rules, sample requests, confirmation key, store
// and metrics, then moves the server from booting to ready (or degraded,
// when SetDegraded was called meanwhile), telling open sessions, and gives
// the domain its HealthReport (Domain.Health). It fails, naming file and
// line, when a rule file is invalid, when the rules name an action the
// domain does not register, when a sample request fails on the rules (a
// *SampleError naming the sample's file and line: see CheckSamples), or
// when ctx ended; the server is then stopped.
// Load is called once, while booting; a server drained meanwhile stays
// draining and Load reports it.
func (s *Server) Load(ctx context.Context) error {
	if err := s.load(ctx); err != nil {
		s.stop()
		return err
	}
	s.life.mu.Lock()
	to := stateReady
	if s.life.reason != "" { // SetDegraded was called while booting
		to = stateDegraded
	}
	moved := s.moveTo(to)
	s.life.mu.Unlock()
	if !moved {
		return fmt.Errorf("manglecp: the server is %s, not booting: not loaded", s.Status())
	}
	if s.domain.Health != nil {
		s.domain.Health(s.reportPart)
	}
	return nil
}

// load sets the fields that need the rules, then marks the server loaded.
func (s *Server) load(ctx context.Context) error {
	s.reloadMu.Lock() // a Reload called meanwhile waits for the rules
	defer s.reloadMu.Unlock()
	if state(s.state.Load()) != stateBooting || s.loaded.Load() {
		return fmt.Errorf("manglecp: Load: the server is %s, not booting", s.Status())
	}
	d, o := s.domain, s.opts
	if s.loadErr != nil {
		return s.loadErr
	}
	if d.Rules == nil {
		return errors.New("manglecp: domain has no rules")
	}
	prog, err := loadProgram(d)
	if err != nil {
		return err
	}
	s.logRuleWarnings(prog)
	samples, err := readSamples(d.Samples)
	if err != nil {
		return err
	}
	key, err := confirmationKey(o)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	store := o.Store
	if store == nil {
		store = memstore.New(o.MacroCacheBytes, o.Now)
	}
	s.samples = samples
	s.store = store
	s.macros = macros.NewCache(o.Store, o.MacroCacheBytes)
	s.confirm = newConfirmer(key, o.ConfirmationTTL, store, o.Store != nil, o.Now, s.log)
	if o.Store != nil {
		// Failed-login budgets are the deployment's, not each replica's.
		s.authFails.Share(func(ctx context.Context, key string, perSecond float64, burst int, now time.Time) (time.Duration, error) {
			return o.Store.Take(ctx, key, RateLimit{PerSecond: perSecond, Burst: burst}, now)
		})
	}
	if o.ResultCacheBytes > 0 && deterministicExternals(d) {
		// A domain with a non-deterministic external predicate never has a
		// cacheable answer: no cache, so no request pays for a key.
		s.results = newResultCache(o.ResultCacheBytes)
	}
	s.prog.Store(prog)
	m, err := metrics.New(o.Metrics, func() (int, int64) { return s.macros.Stats() })
	if err != nil {
		return fmt.Errorf("manglecp: metrics: %w", err)
	}
	s.metrics = m
	// The samples say what these rules must do: a sample they fail stops
	// the start, naming the sample's file and line.
	if err := s.startSamples(ctx, prog); err != nil {
		return err
	}
	s.loaded.Store(true) // after every field above: readers check it first
	return nil
}

// loadProgram loads a domain's rules with the kernel layers and checks
// that every action the rules name is registered.
func loadProgram(d Domain) (*kernel.Program, error) {
	var layers []kernel.Layer
	for _, name := range []string{"policy", "domain"} {
		sub, err := fs.Sub(d.Rules, name)
		if err != nil {
			return nil, fmt.Errorf("manglecp: %s layer: %w", name, err)
		}
		layers = append(layers, kernel.Layer{Name: name, FS: sub, Prefix: joinName(d.RulesName, name)})
	}
	var externals []kernel.External
	for _, name := range sortedKeys(d.External) {
		e := d.External[name]
		if e.Compute == nil || e.Arity < 0 {
			return nil, fmt.Errorf("manglecp: external predicate %s needs Compute and a non-negative Arity", name)
		}
		externals = append(externals, kernel.External{Name: name, Arity: e.Arity})
	}
	prog, err := kernel.LoadWithExternals(externals, layers...)
	if err != nil {
		return nil, fmt.Errorf("manglecp: loading rules:\n%w", err)
	}
	if missing := unregistered(prog.ActionRefs(), d.Actions); len(missing) > 0 {
		return nil, fmt.Errorf("manglecp: rules name actions the domain does not register:\n%w", missing)
	}
	if bad := typedMismatches(prog.ActionParams(), d.Actions); len(bad) > 0 {
		return nil, fmt.Errorf("manglecp: Typed actions do not fit the rules' parameters:\n%w", bad)
	}
	return prog, nil
}

// unregistered reports each action the rules name that actions lacks, at
// the tool_action fact that names it first.
func unregistered(refs []kernel.ActionRef, actions map[string]ActionSpec) kernel.LoadErrors {
	var errs kernel.LoadErrors
	for _, r := range refs {
		if _, ok := actions[r.Name]; !ok {
			errs = append(errs, &kernel.LoadError{File: r.File, Line: r.Line,
				Message: fmt.Sprintf("tool_action(%q, %q): the domain registers no action %q (Domain.Actions)", r.Tool, r.Name, r.Name)})
		}
	}
	return errs
}

// Reload loads rules (the domain's actions stay) beside the running ones,
// evaluates the domain's sample requests (Domain.Samples) on them and, when
// they load, every sample evaluates and no tool is lost, swaps them in
// atomically: requests already running finish on the old rules, later ones
// use the new. Rules that do not load, that fail a sample request, or that
// lose a tool (the only tool of a registered action the running rules run,
// or a tool a sample selects on the running rules, e.g. when a rule file
// was deleted) leave the old ones serving and set the status to degraded
// with the reason; the error (naming file and line, or the sample and the
// cause, and any rule file removed since the running rules) is logged and
// returned. A successful reload clears a degraded status.
func (s *Server) Reload(rules fs.FS) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if !s.loaded.Load() {
		return fmt.Errorf("manglecp: Reload: the server is %s and has no rules loaded (Load)", s.Status())
	}
	d := s.domain
	d.Rules = rules
	prog, err := loadProgram(d)
	if err != nil {
		s.log.Error("rule reload failed; the previous rules keep serving", "error", err.Error(), "removed_files", s.removedRuleFiles(s.domain.Rules, rules))
		// The reason is public (manifest extensions): no file paths or rule
		// text; the log has the file and line.
		s.SetDegraded("rule reload failed; the previous rules are still serving (the server log names the file and line)")
		s.metrics.Reload("failed")
		return err
	}
	selected, err := s.runSamples(context.Background(), prog)
	if err != nil {
		s.log.Error("rule reload rejected: a sample request fails on the new rules; the previous rules keep serving", "error", err.Error())
		reason := "rule reload rejected: a sample request fails on the new rules; the previous rules are still serving (the server log has the cause)"
		var se *SampleError
		switch {
		case errors.As(err, &se) && se.Code == "":
			reason = fmt.Sprintf("rule reload rejected: the sample request %s does not select a tool it expects on the new rules; the previous rules are still serving (the server log has the cause)", se.Sample)
		case errors.As(err, &se):
			reason = fmt.Sprintf("rule reload rejected: the sample request %s fails on the new rules with %s; the previous rules are still serving (the server log has the cause)", se.Sample, se.Code)
		}
		s.SetDegraded(reason)
		s.metrics.Reload("failed")
		return err
	}
	if lost := s.checkLostTools(context.Background(), s.prog.Load(), prog, s.domain.Rules, rules, selected); lost != nil {
		s.log.Error("rule reload rejected: the new rules lose tools the running rules serve; the previous rules keep serving", "error", lost.Error())
		s.SetDegraded(lost.reason())
		s.metrics.Reload("failed")
		return lost
	}
	s.prog.Store(prog)
	s.domain.Rules = rules
	s.logRuleWarnings(prog)
	s.log.Info("rules reloaded", "rules", prog.RuleCount())
	s.metrics.Reload("ok")
	s.SetDegraded("")
	return nil
}

func joinName(base, name string) string {
	if base == "" {
		return name
	}
	return base + "/" + name
}

// OnManifestChange calls fn (in its own goroutine) whenever the manifest
// changes, e.g. on draining; session transports push the new manifest
// (Spec 04 section 6.2). The returned function unsubscribes.
func (s *Server) OnManifestChange(fn func()) (unsubscribe func()) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	if s.subs == nil {
		s.subs = map[int]func(){}
	}
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	return func() {
		s.subsMu.Lock()
		defer s.subsMu.Unlock()
		delete(s.subs, id)
	}
}

// Close stops the server (it admits nothing more) and releases the
// domain's resources (see Domain.Close), once. Call it after Drain and
// Wait, when no request runs any more; requests that still need the domain
// afterwards fail.
func (s *Server) Close() error {
	s.stop()
	s.closeOnce.Do(func() {
		if s.domain.Close != nil {
			s.closeErr = s.domain.Close()
		}
	})
	return s.closeErr
}

// Wait blocks until every admitted request has finished, or ctx ends.
// Requests refused (while draining, or for any other reason) never count,
// so Wait returns as soon as the admitted work is done however many
// refused requests keep arriving.
func (s *Server) Wait(ctx context.Context) error { return s.inflight.wait(ctx) }

// InFlight reports the admitted requests running now.
func (s *Server) InFlight() int { return s.inflight.count() }

// inflight counts admitted requests. Unlike a sync.WaitGroup it allows
// new requests to start while someone waits, until it is closed, and
// waiting respects a context.
type inflight struct {
	mu     sync.Mutex
	n      int
	closed bool          // draining: nothing more is admitted
	zero   chan struct{} // closed when n drops to zero
}

// tryAdd admits one request unless the server drains.
func (f *inflight) tryAdd() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if f.n == 0 {
		f.zero = make(chan struct{})
	}
	f.n++
	return true
}

func (f *inflight) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

func (f *inflight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.zero)
	}
}

func (f *inflight) wait(ctx context.Context) error {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return nil
	}
	zero := f.zero
	f.mu.Unlock()
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CacheStats reports the entries and bytes of the macro-tools this
// process keeps decoded (with a shared store, in front of it).
func (s *Server) CacheStats() (entries int, bytes int64) {
	return s.macros.Stats()
}

// MaxMessageBytes is the advertised and enforced message size limit.
func (s *Server) MaxMessageBytes() int64 { return s.opts.Limits.MaxMessageBytes }

// requestIDKey carries the request id in a context for logs.
type requestIDKey struct{}

// Handle answers one inbound message. It returns the response envelope:
// an intent_response, an invoke_response or an error, correlated by id.
// Every error comes from the registry; internal failures are logged with
// the request id and masked. It keeps no part of in.Data once it has
// returned (every value it keeps is decoded, so a copy), as
// transport.Handler requires; it trusts in.Caller when a transport set it.
func (s *Server) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	if !s.loaded.Load() {
		return s.notLoaded(in)
	}
	start := time.Now()
	rec := &requestInfo{logID: "r" + strconv.FormatUint(s.nextID.Add(1), 10)}
	ctx, span := s.startRequest(ctx)
	s.metrics.InflightAdd(1)
	out := s.handle(ctx, in, rec)
	s.metrics.InflightAdd(-1)
	s.finishRequest(ctx, span, in, out, rec, time.Since(start))
	return out
}

// notLoaded answers a request that arrives before Load is done (or after
// it failed): server_not_ready, correlated when the id is readable; the
// message is not otherwise judged.
func (s *Server) notLoaded(in *protocol.Inbound) *protocol.Envelope {
	env, _ := protocol.DecodeEnvelope(in.Data)
	return protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeServerNotReady, "the server is %s", s.Status()).WithRetryAfter(500))
}

// requestInfo is what handle learns about a request, for the access log,
// metrics and the trace.
type requestInfo struct {
	logID    string
	id       string
	typ      protocol.MessageType
	identity string
	resp     any // the response payload, when there is one
}

// decodeEnvelope decodes a message with protocol.DecodeEnvelopeInto: an
// intent request's raw facts, split as the message is checked, go to a
// list kept for a later request. release gives the list back, emptied
// (the items are slices of data), once nothing reads env any more.
func (s *Server) decodeEnvelope(data []byte) (env *protocol.Envelope, release func(), perr *protocol.Error) {
	facts, _ := s.rawFacts.Get()
	env, used, perr := protocol.DecodeEnvelopeInto(data, facts)
	return env, func() {
		clear(used)
		if cap(used) > cap(facts) {
			facts = used
		}
		if cap(facts) > 0 {
			s.rawFacts.Put(facts[:0])
		}
	}, perr
}

func (s *Server) handle(ctx context.Context, in *protocol.Inbound, rec *requestInfo) (out *protocol.Envelope) {
	logID := rec.logID
	id := ""
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic while handling request", "request_id", id, "log_id", logID, "panic", logText(fmt.Sprint(r)), "stack", string(debug.Stack()))
			out = protocol.ErrorEnvelope(id, internalError(id, logID))
		}
	}()
	if int64(len(in.Data)) > s.opts.Limits.MaxMessageBytes {
		return protocol.ErrorEnvelope("", protocol.MessageTooLarge(s.opts.Limits.MaxMessageBytes, int64(len(in.Data))))
	}
	_, endDecode := s.span(ctx, "manglecp.decode")
	env, release, perr := s.decodeEnvelope(in.Data)
	defer release()
	endDecode()
	if env != nil {
		id = env.IDString()
		rec.id, rec.typ = protocol.LogID(id), env.Type
	}
	if perr != nil {
		return protocol.ErrorEnvelope(id, perr)
	}
	ctx = context.WithValue(ctx, requestIDKey{}, id)
	who, aerr := s.admit(ctx, env, in)
	if who != nil {
		rec.identity = who.name
	}
	if aerr != nil {
		return s.errorEnvelope(id, logID, aerr)
	}
	who.peer = in.Peer
	// Only admitted work counts as in flight (draining waits for it).
	if !s.inflight.tryAdd() {
		return protocol.ErrorEnvelope(id, protocol.Errorf(protocol.CodeServerNotReady, "the server is %s", protocol.StatusDraining).WithRetryAfter(1000))
	}
	defer s.inflight.done()
	ctx = context.WithValue(ctx, callerKey{}, who)
	if in.Progress != nil {
		ctx = WithProgress(ctx, func(status, detail string, percent float64) {
			p := protocol.Progress{Status: status, Detail: detail}
			if percent >= 0 {
				p.Percent = &percent
			}
			in.Progress(p)
		})
	}
	var resp any
	var err error
	var typ protocol.MessageType
	switch env.Type {
	case protocol.TypeIntentRequest:
		typ = protocol.TypeIntentResponse
		hit, key := s.cachedResult(ctx, env)
		if hit != nil {
			// The cache holds answers as json.Marshal wrote them.
			rec.resp = hit
			return protocol.NewEnvelopeMarshaled(typ, id, hit)
		}
		resp, err = s.evaluate(ctx, env, key)
	case protocol.TypeInvokeRequest:
		typ = protocol.TypeInvokeResponse
		resp, err = s.invoke(ctx, env)
	case protocol.TypeAuthenticate:
		typ = protocol.TypeAuthenticateResponse
		resp = authenticateResponse(who)
	}
	if err != nil {
		return s.errorEnvelope(id, logID, err)
	}
	rec.resp = resp
	out, err = protocol.NewEnvelope(typ, id, resp)
	if err != nil {
		return s.errorEnvelope(id, logID, err)
	}
	return out
}

// admit runs the checks every request passes before any work: message type
// for the endpoint, readiness, authentication, rate limit.
func (s *Server) admit(ctx context.Context, env *protocol.Envelope, in *protocol.Inbound) (*caller, error) {
	if in.Expect != "" && env.Type != in.Expect {
		return nil, protocol.Errorf(protocol.CodeInvalidType, "this endpoint accepts %s messages, got %s", in.Expect, env.Type).
			WithDetails(&protocol.ErrorDetails{Field: "type"})
	}
	if env.Type != protocol.TypeIntentRequest && env.Type != protocol.TypeInvokeRequest && env.Type != protocol.TypeAuthenticate {
		return nil, protocol.Errorf(protocol.CodeInvalidType, "%s is not a request this server answers here", env.Type).
			WithDetails(&protocol.ErrorDetails{Field: "type"})
	}
	if st := s.Status(); st == protocol.StatusBooting || st == protocol.StatusDraining {
		return nil, protocol.Errorf(protocol.CodeServerNotReady, "the server is %s", st).WithRetryAfter(1000)
	}
	creds := in.Credentials
	if env.Type == protocol.TypeAuthenticate {
		var a protocol.Authenticate
		if perr := protocol.DecodePayload(env.Payload, &a); perr != nil {
			return nil, perr
		}
		if a.Scheme != protocol.SchemeBearer && a.Scheme != protocol.SchemeAPIKey {
			return nil, protocol.Errorf(protocol.CodeMalformedMessage, "authenticate scheme must be bearer or api_key, got %s", protocol.Quote(a.Scheme)).
				WithDetails(&protocol.ErrorDetails{Field: "scheme"})
		}
		creds = &protocol.Credentials{Scheme: a.Scheme, Token: a.Token}
	}
	var who *caller
	if in.Caller != nil && env.Type != protocol.TypeAuthenticate {
		who = fromProtocol(in.Caller) // the transport authenticated it (Authenticate)
	} else {
		var aerr *protocol.Error
		if who, aerr = s.authenticatePeer(ctx, creds, in.Peer); aerr != nil {
			return nil, aerr
		}
	}
	limitKey := "identity:" + who.name
	if who.anonymous {
		limitKey = "peer:" + ratelimit.ClientKey(in.Peer) // IPv6 per /64
	}
	if err := s.rateLimit(ctx, limitKey); err != nil {
		return who, err
	}
	return who, nil
}

// errorEnvelope is the one masking point: errors with a code of the
// registry (standard or the domain's) pass through, anything else becomes
// internal_error; the full error is logged.
func (s *Server) errorEnvelope(id, logID string, err error) *protocol.Envelope {
	if pe, ok := protocol.AsError(err); ok {
		if _, registered := s.registry.Lookup(pe.Code); !registered {
			s.log.Error("unregistered error code masked as internal_error", "request_id", id, "log_id", logID,
				"code", string(pe.Code), "error", logText(err.Error()))
			return protocol.ErrorEnvelope(id, internalError(id, logID))
		}
		var ke *kernel.Error
		switch {
		case errors.As(err, &ke) && ke.Cause != nil:
			s.log.Warn("request failed", "request_id", id, "log_id", logID, "code", string(pe.Code), "cause", logText(ke.Cause.Error()))
		case pe.Code == protocol.CodeServerNotReady:
			// Refused while booting or draining: the server works as meant.
			s.log.Info("request refused: the server is not ready", "request_id", id, "log_id", logID, "error", logText(err.Error()))
		case s.registry.HTTPStatus(pe.Code) >= 500 && s.registry.Recoverable(pe.Code):
			// A condition the client retries (a timeout): not a defect.
			s.log.Warn("request failed", "request_id", id, "log_id", logID, "code", string(pe.Code), "error", logText(err.Error()))
		case s.registry.HTTPStatus(pe.Code) >= 500:
			s.log.Error("request failed", "request_id", id, "log_id", logID, "code", string(pe.Code), "error", logText(err.Error()))
		}
		return s.registry.ErrorEnvelope(id, pe)
	}
	s.log.Error("internal error", "request_id", id, "log_id", logID, "error", logText(err.Error()))
	return protocol.ErrorEnvelope(id, internalError(id, logID))
}

// maxLogText bounds an error's text in a log line: an action's or a
// store's error may repeat a value the client sent (a 1 MiB argument),
// which the log keeps bounded, marked as cut; 16 KiB keeps a panic's
// stack whole.
const maxLogText = 16 << 10

// logText is s as a log line carries it: at most maxLogText bytes.
func logText(s string) string { return protocol.ClipN(s, maxLogText) }

func internalError(id, logID string) *protocol.Error {
	return protocol.Errorf(protocol.CodeInternalError, "internal server error (log id %s)", logID)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Registry returns the server's error registry: the standard codes plus
// the codes its domain registered. Transports take HTTP statuses from it.
func (s *Server) Registry() *protocol.Registry { return s.registry }

// now is the server clock.
func (s *Server) now() time.Time { return s.opts.Now() }

// logRuleWarnings logs what the rules load with but their author should
// look at (an old spelling), each with its file and line.
func (s *Server) logRuleWarnings(prog *kernel.Program) {
	for _, w := range prog.Warnings() {
		s.log.Warn("rules: "+strings.TrimPrefix(w.Message, "warning: "), "file", w.File, "line", w.Line)
	}
}
