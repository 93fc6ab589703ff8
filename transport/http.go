package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/manglecp/manglecp/internal/freelist"
	"github.com/manglecp/manglecp/protocol"
)

// ManifestPath is the well-known manifest path (Spec 02 section 4.2).
const ManifestPath = "/.well-known/manglecp/manifest.json"

// RequestReadTimeout is the deadline for reading one HTTP request body.
// Writing an answer is bounded by HTTPOptions.WriteTimeout
// (DefaultWriteTimeout), counted from when the answer is ready, so
// evaluation time does not eat into it.
const RequestReadTimeout = 60 * time.Second

// HTTPOptions configure [NewHTTPHandler].
type HTTPOptions struct {
	// BasePath is the prefix of /evaluate, /invoke and /ws; default
	// "/manglecp". It must match the server's advertised endpoints.
	BasePath string
	// WS configures the WebSocket endpoint at BasePath+"/ws".
	WS *WSOptions
	// AllowedOrigins enables CORS for these browser origins (exact
	// matches, e.g. "https://app.example.com"). "*" allows any origin, but
	// only while the handler requires no authentication: with auth on,
	// only listed origins are echoed, never "*" (Spec 02 section 4.2).
	AllowedOrigins []string
	// AllowedHosts, when not empty, are the only Host header values (port
	// ignored, case-insensitive) answered; others get x-host_not_allowed.
	// A server bound to loopback sets them to its loopback names, so a web
	// page cannot reach it through DNS rebinding.
	AllowedHosts []string
	// WriteTimeout bounds writing one answer (an HTTP response, a
	// WebSocket frame); default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Budget, when set, bounds the bytes of request bodies and session
	// messages held server-wide; a body that does not fit is refused with
	// rate_limited before it is read. Sessions share it unless WS.Session
	// has its own.
	Budget *Budget
	// Drain, when set and started, makes every HTTP answer close its
	// connection and ends WebSocket sessions gracefully (see [Drain]).
	Drain *Drain
	// Routes are more handlers on the same listener, by ServeMux pattern
	// (e.g. "GET /metrics"). They are not MangleCP endpoints: the host
	// allow-list applies to them, nothing else; unmatched paths still get
	// an envelope.
	Routes map[string]http.Handler
	// TrustedProxies are the reverse proxies (see [ParseTrustedProxies])
	// whose ForwardedHeader names the client. For a request from one of
	// them, the client's address, which the handler's limits and logs use,
	// is the right-most address of that header that is not a trusted proxy.
	// Empty: the direct peer is the client and no header is read.
	TrustedProxies []netip.Prefix
	// ForwardedHeader is the header the trusted proxies write (append to
	// or replace): "X-Forwarded-For" (default) or "Forwarded" (RFC 7239).
	// Only this one is read: a proxy passes the other one through from the
	// client unchanged, so it would be the client's word.
	ForwardedHeader string
}

// NewHTTPHandler serves the MangleCP HTTP binding: GET ManifestPath, POST
// BasePath+"/evaluate" (intent_request) and BasePath+"/invoke"
// (invoke_request), the WebSocket binding at BasePath+"/ws" and GET
// BasePath+"/skills/{id}" ([Handler.SkillJSON]).
//
// Every answer is a MangleCP envelope with the registry status of its code
// (unknown paths, wrong methods, redirects the mux would make and refused
// WebSocket handshakes included), except the answers net/http gives before
// a handler runs (malformed requests, oversized headers). Limits are
// enforced before work: the Host allow-list, the method, Content-Type
// application/json for POST (a cross-site form cannot send it without a
// CORS preflight), the size announced by Content-Length, then credentials
// from the headers, once ([Handler.Authenticate]; a 401 carries
// WWW-Authenticate; the body is never read), then the body is read, at most
// the handler's MaxMessageBytes (message_too_large while reading), and
// handed to the handler with the authenticated caller.
func NewHTTPHandler(h Handler, opts *HTTPOptions) http.Handler {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	base := "/manglecp"
	if o.BasePath != "" {
		base = strings.TrimSuffix(o.BasePath, "/")
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	var ws WSOptions
	if o.WS != nil {
		ws = *o.WS
	}
	if ws.Session.Budget == nil {
		ws.Session.Budget = o.Budget
	}
	if ws.Session.Drain == nil {
		ws.Session.Drain = o.Drain
	}
	if ws.Session.WriteTimeout <= 0 {
		ws.Session.WriteTimeout = o.WriteTimeout
	}
	b := &binding{h: h, o: o, bodies: freelist.New(freelist.PerProcessor(), maxKeptBody, func(b []byte) int { return cap(b) })}
	mux := http.NewServeMux()
	mux.HandleFunc(ManifestPath, b.serveManifest)
	mux.HandleFunc(base+"/evaluate", func(w http.ResponseWriter, r *http.Request) {
		b.serveRequest(protocol.TypeIntentRequest, w, r)
	})
	mux.HandleFunc(base+"/invoke", func(w http.ResponseWriter, r *http.Request) {
		b.serveRequest(protocol.TypeInvokeRequest, w, r)
	})
	mux.Handle(base+"/ws", NewWSHandler(h, &ws))
	mux.HandleFunc(base+"/skills/{id}", b.serveSkill)
	for pattern, handler := range o.Routes {
		mux.Handle(pattern, handler)
	}
	var next http.Handler = mux
	if len(o.AllowedOrigins) > 0 {
		next = cors(h, o.AllowedOrigins, next)
	}
	return withClientAddr(b.guard(next), o.TrustedProxies, o.ForwardedHeader)
}

// binding holds what the HTTP endpoints share.
type binding struct {
	h      Handler
	o      HTTPOptions
	bodies *freelist.List[[]byte] // request bodies given back (Handle borrows them)
}

// Bodies of at most maxKeptBody bytes are kept for later requests, one
// per processor and at most freelist.MaxKept: 16 MiB in all.
const maxKeptBody = 4 << 20

// guard checks the Host allow-list, refuses paths the mux would redirect
// (it answers x-not_found naming the clean path instead), and turns every
// plain-text error or redirect written below it (by the mux, by
// websocket.Accept) into an envelope.
func (b *binding) guard(next http.Handler) http.Handler {
	hosts := map[string]bool{}
	for _, h := range b.o.AllowedHosts {
		hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.o.Drain.draining() {
			w.Header().Set("Connection", "close")
		}
		if len(hosts) > 0 && !hosts[hostOnly(r.Host)] {
			w.Header().Set("Connection", "close")
			writeError(w, "", protocol.Errorf(protocol.CodeHostNotAllowed, "this server does not answer to Host %s", protocol.Quote(r.Host)))
			return
		}
		if r.URL.Path != "" && cleanPath(r.URL.Path) != r.URL.Path {
			writeError(w, "", protocol.Errorf(protocol.CodeNotFound, "no MangleCP endpoint at this path").
				WithDetails(&protocol.ErrorDetails{Suggestion: "did you mean " + protocol.Clip(cleanPath(r.URL.Path)) + "?"}))
			return
		}
		next.ServeHTTP(&envelopeGuard{ResponseWriter: w}, r)
	})
}

// hostOnly is the lower-case host of a Host header, without port or
// IPv6 brackets.
func hostOnly(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// cleanPath is path.Clean keeping a trailing slash, as ServeMux does.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// envelopeGuard turns plain-text error answers and redirects into error
// envelopes with the registry status of the code that fits the status.
type envelopeGuard struct {
	http.ResponseWriter
	wrote    bool
	replaced bool
}

// Unwrap lets http.ResponseController and websocket.Accept reach the
// connection (Hijack, deadlines, Flush).
func (g *envelopeGuard) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// WriteHeader passes JSON answers and successes through, and replaces
// anything else at or above 300 (except 304) by an envelope.
func (g *envelopeGuard) WriteHeader(status int) {
	if g.wrote {
		return
	}
	g.wrote = true
	ct := g.Header().Get("Content-Type")
	if status < 300 || status == http.StatusNotModified || strings.HasPrefix(ct, "application/json") {
		g.ResponseWriter.WriteHeader(status)
		return
	}
	g.replaced = true
	hdr := g.Header()
	var e *protocol.Error
	switch {
	case status >= 300 && status < 400:
		loc := hdr.Get("Location")
		hdr.Del("Location")
		e = protocol.Errorf(protocol.CodeNotFound, "no MangleCP endpoint at this path")
		if loc != "" {
			e.WithDetails(&protocol.ErrorDetails{Suggestion: "did you mean " + protocol.Clip(loc) + "?"})
		}
	case status == http.StatusNotFound:
		e = protocol.Errorf(protocol.CodeNotFound, "no MangleCP endpoint at this path")
	case status == http.StatusMethodNotAllowed:
		e = protocol.Errorf(protocol.CodeMethodNotAllowed, "method not allowed here; the Allow header names the methods that are")
	case status == http.StatusUpgradeRequired:
		e = protocol.Errorf(protocol.CodeUpgradeRequired, "this is the WebSocket endpoint: connect with a WebSocket client")
	case status == http.StatusForbidden:
		e = protocol.Errorf(protocol.CodeOriginNotAllowed, "this browser origin may not connect")
	case status == http.StatusBadRequest:
		e = protocol.Errorf(protocol.CodeMalformedMessage, "the HTTP request is malformed")
	default:
		e = protocol.Errorf(protocol.CodeInternalError, "internal server error")
	}
	hdr.Del("X-Content-Type-Options")
	raw, _ := protocol.ErrorEnvelope("", e).Encode()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(raw)))
	g.ResponseWriter.WriteHeader(e.HTTPStatus())
	_, _ = g.ResponseWriter.Write(raw)
}

// Write writes the body, or drops it when the answer was replaced.
func (g *envelopeGuard) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.replaced {
		return len(p), nil
	}
	return g.ResponseWriter.Write(p)
}

// Flush flushes a streaming answer.
func (g *envelopeGuard) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// cors answers preflight requests and adds CORS headers for allowed
// origins.
func cors(h Handler, origins []string, next http.Handler) http.Handler {
	allowed := map[string]bool{}
	wildcard := false
	for _, o := range origins {
		if o == "*" {
			wildcard = true
			continue
		}
		allowed[o] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		authOn := h.AuthRequired()
		hdr := w.Header()
		hdr.Add("Vary", "Origin")
		ok := allowed[origin] || (wildcard && !authOn)
		if ok {
			if wildcard && !authOn && !allowed[origin] {
				hdr.Set("Access-Control-Allow-Origin", "*")
			} else {
				hdr.Set("Access-Control-Allow-Origin", origin)
			}
			hdr.Set("Access-Control-Expose-Headers", "ETag, Retry-After")
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			if !ok {
				writeError(w, "", protocol.Errorf(protocol.CodeOriginNotAllowed, "origin %s may not call this server", protocol.Quote(origin)))
				return
			}
			hdr.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			hdr.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-MangleCP-API-Key")
			hdr.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (b *binding) serveManifest(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, "", protocol.Errorf(protocol.CodeMethodNotAllowed, "the manifest is read with GET"))
		return
	}
	payload, etag := b.h.ManifestJSON()
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	env := &protocol.Envelope{Type: protocol.TypeManifest, Version: protocol.Version, Payload: payload}
	writeEnvelope(w, http.StatusOK, env)
}

// etagMatches applies If-None-Match (RFC 9110 section 13.1.2): a list of
// tags, weak or strong, or "*".
func etagMatches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || (tag != "" && tag == etag) {
			return true
		}
	}
	return false
}

func (b *binding) serveRequest(expect protocol.MessageType, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, "", protocol.Errorf(protocol.CodeMethodNotAllowed, "send %s messages with POST", expect))
		return
	}
	// Refused requests leave their body unread: the connection closes
	// rather than reading what may be megabytes.
	ct := r.Header.Get("Content-Type")
	if ct != "application/json" && !jsonMediaType(ct) {
		w.Header().Set("Connection", "close")
		writeError(w, "", protocol.Errorf(protocol.CodeUnsupportedMediaType, "Content-Type must be application/json, got %s", protocol.Quote(ct)))
		return
	}
	limit := b.h.MaxMessageBytes()
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		writeError(w, "", protocol.MessageTooLarge(limit, r.ContentLength))
		return
	}
	creds := credentials(r)
	who, perr := b.h.Authenticate(r.Context(), creds, peer(r))
	if perr != nil {
		// Refused from the headers: only a small prefix of the body is read,
		// to echo the request's id when it comes early (Spec 09 section 2.3).
		w.Header().Set("Connection", "close")
		writeError(w, peekID(w, r), perr)
		return
	}
	size := limit
	if r.ContentLength >= 0 {
		size = r.ContentLength
	}
	if !b.o.Budget.TryTake(size) {
		w.Header().Set("Connection", "close")
		writeError(w, "", protocol.Errorf(protocol.CodeRateLimited, "the server holds too many request bytes; retry shortly").WithRetryAfter(1000))
		return
	}
	defer b.o.Budget.Give(size)
	// Per-request deadlines (the listener has none, so WebSocket sessions
	// can live long): a slow-drip body cannot hold a handler forever, and an
	// answer nobody reads is dropped after WriteTimeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(RequestReadTimeout))
	// Handle borrows the body (the Handler contract): the buffer is kept
	// for a later request, which spares a large one the allocation (and the
	// page faults) of a new one.
	buf, _ := b.bodies.Get()
	defer func() {
		if cap(buf) > 0 {
			b.bodies.Put(buf[:0])
		}
	}()
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit, buf)
	buf = body // the buffer read into: the one kept
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, "", protocol.MessageTooLarge(limit, -1))
			return
		}
		writeError(w, "", protocol.Errorf(protocol.CodeMalformedMessage, "the request body could not be read"))
		return
	}
	in := &protocol.Inbound{Data: body, Expect: expect, Credentials: creds, Caller: who, Peer: peer(r)}
	env := b.h.Handle(r.Context(), in)
	body, in = nil, nil // the answer replaces the body in memory
	_ = rc.SetWriteDeadline(time.Now().Add(b.o.WriteTimeout))
	if b.o.Drain.draining() {
		// Admitted before draining, answered after: this connection ends
		// with this answer, so no next request races the listener's close.
		w.Header().Set("Connection", "close")
	}
	writeEnvelope(w, statusFor(b.h, env), env)
}

// jsonMediaType reports whether the Content-Type ct names JSON messages.
func jsonMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/manglecp+json")
}

// readAll is io.ReadAll with the buffer sized for the declared length (at
// most limit), so a large body is not copied through a dozen growing
// buffers. It reads into buf when buf has that room.
func readAll(r io.Reader, length, limit int64, buf []byte) ([]byte, error) {
	size := int64(512)
	if length > 0 {
		size = min(length, limit) + 1 // + 1: the read that finds EOF needs no growth
	}
	b := buf[:0]
	if int64(cap(b)) < size {
		b = make([]byte, 0, size)
	}
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow
		}
	}
}

// statusFor is the HTTP status of env, from h's registry when it has one,
// so a domain code gets the status its domain registered.
func statusFor(h Handler, env *protocol.Envelope) int {
	if r := h.Registry(); r != nil {
		return r.EnvelopeStatus(env)
	}
	return Status(env)
}

// Reading the id of a request refused before its body was read: at most
// idPrefixBytes, for at most idPrefixWait.
const (
	idPrefixBytes = 4 << 10
	idPrefixWait  = time.Second
)

// peekID reads at most idPrefixBytes of r's body and returns the
// envelope's "id" when that prefix holds it as a string (before any field
// that does not fit the prefix), else "".
func peekID(w http.ResponseWriter, r *http.Request) string {
	n := int64(idPrefixBytes)
	if r.ContentLength >= 0 {
		n = min(n, r.ContentLength)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(idPrefixWait))
	buf := make([]byte, n)
	got, _ := io.ReadFull(r.Body, buf)
	dec := json.NewDecoder(bytes.NewReader(buf[:got]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "id" {
			var id string
			if dec.Decode(&id) != nil {
				return ""
			}
			return id // even over protocol.MaxIDBytes: the error answers it (Spec 09 section 2.3)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// CodeSkillNotFound is the custom error code of an unknown skill id.
const CodeSkillNotFound = protocol.CodeSkillNotFound

// serveSkill answers GET BasePath/skills/{id}. With authentication on,
// credentials are checked first, so without them every id gets the same
// 401 and nothing about the catalogue is revealed.
func (b *binding) serveSkill(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, "", protocol.Errorf(protocol.CodeMethodNotAllowed, "skills are read with GET"))
		return
	}
	if _, perr := b.h.Authenticate(r.Context(), credentials(r), peer(r)); perr != nil {
		writeError(w, "", perr)
		return
	}
	id := r.PathValue("id")
	raw, ok := b.h.SkillJSON(id)
	if !ok {
		writeError(w, "", protocol.Errorf(CodeSkillNotFound, "no skill %s; skill ids come from context_injection.skills", protocol.Quote(id)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(b.o.WriteTimeout))
	_, _ = w.Write(raw)
}

// credentials reads a bearer token or an API key (Spec 08 section 3).
func credentials(r *http.Request) *protocol.Credentials {
	if auth := r.Header.Get("Authorization"); auth != "" {
		if scheme, token, ok := strings.Cut(auth, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return &protocol.Credentials{Scheme: protocol.SchemeBearer, Token: strings.TrimSpace(token)}
		}
		return &protocol.Credentials{Scheme: "unsupported"}
	}
	if key := r.Header.Get("X-MangleCP-API-Key"); key != "" {
		return &protocol.Credentials{Scheme: protocol.SchemeAPIKey, Token: key}
	}
	return nil
}

func peer(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return host
}

// Status is the HTTP status for an envelope: 200 for responses, the
// registry status of the code for errors.
func Status(env *protocol.Envelope) int {
	if env.Type != protocol.TypeError {
		return http.StatusOK
	}
	var p struct {
		Code protocol.Code `json:"code"`
	}
	_ = json.Unmarshal(env.Payload, &p)
	return p.Code.HTTPStatus()
}

func writeError(w http.ResponseWriter, id string, e *protocol.Error) {
	env := protocol.ErrorEnvelope(id, e)
	writeEnvelope(w, e.HTTPStatus(), env)
}

func writeEnvelope(w http.ResponseWriter, status int, env *protocol.Envelope) {
	raw, err := env.Encode()
	if err != nil {
		status = http.StatusInternalServerError
		raw, _ = protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeInternalError, "the response could not be encoded")).Encode()
	}
	if env.Type == protocol.TypeError {
		var p struct {
			RetryAfterMS *int64 `json:"retry_after_ms"`
		}
		if json.Unmarshal(env.Payload, &p) == nil && p.RetryAfterMS != nil {
			w.Header().Set("Retry-After", strconv.FormatInt((*p.RetryAfterMS+999)/1000, 10))
		}
	}
	if env.Type == protocol.TypeError && status == http.StatusUnauthorized {
		// RFC 9110 section 11.6.1: a 401 names how to authenticate (RFC 6750).
		challenge := `Bearer realm="manglecp"`
		if bytes.Contains(env.Payload, []byte(`"code":"`+string(protocol.CodeAuthInvalid)+`"`)) {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
