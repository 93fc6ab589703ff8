package transport

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// ManifestPath is the well-known manifest path (Spec 02 section 4.2).
const ManifestPath = "/.well-known/manglecp/manifest.json"

// The per-request deadlines of the HTTP binding: reading the body, and
// writing the response (which includes evaluation or invocation time).
const (
	RequestReadTimeout  = 60 * time.Second
	RequestWriteTimeout = 5 * time.Minute
)

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
}

// authRequirer is implemented by handlers that know whether requests need
// credentials.
type authRequirer interface{ AuthRequired() bool }

// NewHTTPHandler serves the MangleCP HTTP binding: GET ManifestPath, POST
// BasePath+"/evaluate" (intent_request) and BasePath+"/invoke"
// (invoke_request), and the WebSocket binding at BasePath+"/ws". Bodies beyond the handler's MaxMessageBytes are refused
// with message_too_large while reading, never buffered.
func NewHTTPHandler(h Handler, opts *HTTPOptions) http.Handler {
	base := "/manglecp"
	var wsOpts *WSOptions
	if opts != nil {
		if opts.BasePath != "" {
			base = strings.TrimSuffix(opts.BasePath, "/")
		}
		wsOpts = opts.WS
	}
	var origins []string
	if opts != nil {
		origins = opts.AllowedOrigins
	}
	mux := http.NewServeMux()
	mux.HandleFunc(ManifestPath, func(w http.ResponseWriter, r *http.Request) { serveManifest(h, w, r) })
	mux.HandleFunc(base+"/evaluate", func(w http.ResponseWriter, r *http.Request) {
		serveRequest(h, protocol.TypeIntentRequest, w, r)
	})
	mux.HandleFunc(base+"/invoke", func(w http.ResponseWriter, r *http.Request) {
		serveRequest(h, protocol.TypeInvokeRequest, w, r)
	})
	mux.Handle(base+"/ws", NewWSHandler(h, wsOpts))
	if src, ok := h.(SkillSource); ok {
		mux.HandleFunc("GET "+base+"/skills/{id}", func(w http.ResponseWriter, r *http.Request) { serveSkill(src, w, r) })
	}
	if len(origins) == 0 {
		return mux
	}
	return cors(h, origins, mux)
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
		authOn := false
		if a, ok := h.(authRequirer); ok {
			authOn = a.AuthRequired()
		}
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
				w.WriteHeader(http.StatusForbidden)
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

func serveManifest(h Handler, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, "", protocol.Errorf(protocol.CodeMalformedMessage, "the manifest is read with GET"))
		return
	}
	payload, etag := h.ManifestJSON()
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

func serveRequest(h Handler, expect protocol.MessageType, w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, "", protocol.Errorf(protocol.CodeMalformedMessage, "send %s messages with POST", expect))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || (mt != "application/json" && mt != "application/manglecp+json") {
			writeError(w, "", protocol.Errorf(protocol.CodeMalformedMessage, "Content-Type must be application/json, got %q", ct))
			return
		}
	}
	// Per-request deadlines (the listener has none, so WebSocket sessions
	// can live long): a slow-drip body cannot hold a handler forever.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(RequestReadTimeout))
	_ = rc.SetWriteDeadline(time.Now().Add(RequestWriteTimeout))
	limit := h.MaxMessageBytes()
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		writeError(w, "", protocol.MessageTooLarge(limit, r.ContentLength))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, "", protocol.MessageTooLarge(limit, -1))
			return
		}
		writeError(w, "", protocol.Errorf(protocol.CodeMalformedMessage, "the request body could not be read"))
		return
	}
	in := &protocol.Inbound{Data: body, Expect: expect, Credentials: credentials(r), Peer: peer(r)}
	env := h.Handle(r.Context(), in)
	writeEnvelope(w, statusFor(h, env), env)
}

// ErrorRegistry is implemented by handlers whose domain registers error
// codes of its own (*manglecp.Server does): the HTTP binding takes the
// status of an error envelope from the handler's registry, so a domain
// code gets the status its domain registered.
type ErrorRegistry interface {
	Registry() *protocol.Registry
}

// statusFor is the HTTP status of env, from h's registry when it has one.
func statusFor(h Handler, env *protocol.Envelope) int {
	if r, ok := h.(ErrorRegistry); ok {
		return r.Registry().EnvelopeStatus(env)
	}
	return Status(env)
}

// SkillSource is implemented by handlers that serve referenced skills
// (Spec 06 section 4.4): GET BasePath/skills/{skill_id} returns the Skill
// object as JSON.
type SkillSource interface {
	SkillJSON(id string) ([]byte, bool)
}

// CodeSkillNotFound is the custom error code of an unknown skill id.
const CodeSkillNotFound protocol.Code = "x-skill_not_found"

func serveSkill(src SkillSource, w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	raw, ok := src.SkillJSON(id)
	if !ok {
		env := protocol.ErrorEnvelope("", protocol.Errorf(CodeSkillNotFound, "no skill %q; skill ids come from context_injection.skills", id))
		writeEnvelope(w, http.StatusNotFound, env)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
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
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}
