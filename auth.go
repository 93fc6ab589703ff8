package manglecp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/manglecp/manglecp/internal/ratelimit"
	"github.com/manglecp/manglecp/protocol"
)

// AuthRequired reports whether requests must carry credentials.
func (s *Server) AuthRequired() bool { return len(s.opts.Identities) > 0 || s.opts.OAuth != nil }

// caller is who sent a request: an identity, or anonymous (auth off), who
// then has every permission.
type caller struct {
	name        string
	permissions []string
	anonymous   bool
	trust       string
	autoConfirm []string
	peer        string // the connection's remote address, for fair sharing
}

// shareKey is whom the caller's evaluations count against when slots are
// shared: the identity, or the peer address of an anonymous caller.
func (c *caller) shareKey() string {
	if c.anonymous {
		return "peer:" + ratelimit.ClientKey(c.peer) // IPv6 per /64, as the limits
	}
	return "identity:" + c.name
}

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		return c
	}
	return &caller{name: "anonymous", permissions: []string{"*"}, anonymous: true}
}

func (s *Server) anonymous() *caller {
	return &caller{name: "anonymous", permissions: append([]string(nil), s.opts.AnonymousPermissions...), anonymous: true}
}

// authenticateResponse describes the caller (Spec 08 section 3.3).
func authenticateResponse(c *caller) *protocol.AuthenticateResponse {
	r := &protocol.AuthenticateResponse{Status: "authenticated", Permissions: append([]string{}, c.permissions...),
		TrustLevel: c.trust, AutoConfirmEffects: c.autoConfirm}
	if !c.anonymous {
		name := c.name
		r.Identity = &name
	}
	return r
}

// Authenticate authenticates c for peer (transport.Handler): transports
// call it with header credentials before they read a message, so a peer
// without valid credentials is refused without its body being read, and
// put the caller on the message (protocol.Inbound.Caller), so Handle does
// not authenticate it again. Failed attempts are rate limited per peer like
// those of [Server.Handle]. While booting it returns nil and nil: Handle
// answers server_not_ready whoever asks.
func (s *Server) Authenticate(ctx context.Context, c *protocol.Credentials, peer string) (*protocol.Caller, *protocol.Error) {
	if !s.loaded.Load() {
		return nil, nil
	}
	who, err := s.authenticatePeer(ctx, c, peer)
	if err != nil {
		return nil, err
	}
	return who.protocol(), nil
}

// CheckCredentials is [Server.Authenticate] without the caller: nil when c
// is accepted (or authentication is off), else the registry error.
func (s *Server) CheckCredentials(ctx context.Context, c *protocol.Credentials, peer string) *protocol.Error {
	_, err := s.Authenticate(ctx, c, peer)
	return err
}

// protocol is the caller as transports carry it.
func (c *caller) protocol() *protocol.Caller {
	return &protocol.Caller{Identity: c.name, Anonymous: c.anonymous, Permissions: append([]string(nil), c.permissions...),
		TrustLevel: c.trust, AutoConfirmEffects: append([]string(nil), c.autoConfirm...)}
}

func fromProtocol(c *protocol.Caller) *caller {
	name := c.Identity
	if c.Anonymous {
		name = "anonymous"
	}
	return &caller{name: name, permissions: append([]string(nil), c.Permissions...), anonymous: c.Anonymous,
		trust: c.TrustLevel, autoConfirm: append([]string(nil), c.AutoConfirmEffects...)}
}

// authenticatePeer authenticates c for peer (the client's address, see
// transport.HTTPOptions.TrustedProxies). The credential is verified first
// and a correct one always passes; a wrong one counts against the
// client's and the server's budgets of failures, and beyond them is
// answered rate_limited (package admission says why this order is safe). A
// request without a credential guesses nothing and is not counted.
func (s *Server) authenticatePeer(ctx context.Context, c *protocol.Credentials, peer string) (*caller, *protocol.Error) {
	who, err, why := s.authenticate(ctx, c)
	if s.AuthRequired() {
		s.metrics.Authentication(err)
	}
	if err == nil || c == nil || c.Token == "" {
		return who, err
	}
	if wait := s.authFails.Failed(ctx, peer); wait > 0 {
		return nil, protocol.Errorf(protocol.CodeRateLimited, "the credentials are invalid, and too many authentications failed from this client or from all clients").
			WithRetryAfter(max(1, wait.Milliseconds()))
	}
	if why != nil { // logged within the budgets only: a flood of bad JWTs does not flood the log
		s.log.Info("OAuth token rejected", "reason", why.Error()) // never the token
	}
	return nil, err
}

// authenticate checks credentials in constant time against every
// configured identity (all are compared, so timing does not reveal which
// matched) and returns the caller. A JWT waits for the issuer's keys at
// most until ctx ends (and OAuth.FetchTimeout); why it was rejected is
// returned for the log.
func (s *Server) authenticate(ctx context.Context, c *protocol.Credentials) (_ *caller, _ *protocol.Error, why error) {
	if !s.AuthRequired() {
		return s.anonymous(), nil, nil
	}
	if c == nil || c.Token == "" {
		return nil, protocol.Errorf(protocol.CodeAuthRequired, "authentication required: send Authorization: Bearer <token> or X-MangleCP-API-Key"), nil
	}
	presented := sha256.Sum256([]byte(c.Token))
	index := -1
	for i, id := range s.opts.Identities {
		want := sha256.Sum256([]byte(id.Token))
		if subtle.ConstantTimeCompare(want[:], presented[:]) == 1 {
			index = i
		}
	}
	if index < 0 && s.oauth != nil && c.Scheme == protocol.SchemeBearer && strings.Count(c.Token, ".") == 2 {
		id, err := s.oauth.Verify(ctx, c.Token, s.now())
		if err == nil {
			return &caller{name: "oauth:" + id.Subject, permissions: id.Permissions}, nil, nil
		}
		why = err
	}
	if index < 0 {
		return nil, protocol.Errorf(protocol.CodeAuthInvalid, "the credentials are invalid"), why
	}
	id := s.opts.Identities[index]
	return &caller{name: id.Name, permissions: append([]string(nil), id.Permissions...),
		trust: id.TrustLevel, autoConfirm: append([]string(nil), id.AutoConfirmEffects...)}, nil, nil
}

func (s *Server) rateLimit(ctx context.Context, key string) error {
	if s.opts.RateLimit <= 0 {
		return nil
	}
	wait, err := s.store.Take(ctx, key, RateLimit{PerSecond: s.opts.RateLimit, Burst: s.opts.RateBurst}, s.now())
	if err != nil {
		s.metrics.StoreError("rate_limit")
		return &storeError{op: "rate limiting", cause: err}
	}
	if wait > 0 {
		return protocol.Errorf(protocol.CodeRateLimited, "too many requests").WithRetryAfter(max(1, wait.Milliseconds()))
	}
	return nil
}
