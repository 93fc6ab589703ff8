package manglecp

import (
	"context"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// confirmer verifies confirmation tokens (see protocol.ConfirmationToken)
// and refuses replays until the token would have expired anyway. Used
// nonces live in the server's [Store], so with a shared store a token
// accepted by one replica is refused by every other; replicas must then
// share the confirmation key (Options.ConfirmationKey).
type confirmer struct {
	key   []byte
	ttl   time.Duration
	store Store
}

func newConfirmer(key []byte, ttl time.Duration, store Store) *confirmer {
	return &confirmer{key: key, ttl: ttl, store: store}
}

// verify checks a token for macroID and consumes it. It returns a reason
// when the token is invalid, expired, too long-lived or already used, and
// an error when the store cannot record the nonce (the token is then
// refused, never accepted unchecked).
func (c *confirmer) verify(ctx context.Context, token, macroID string, now time.Time) (string, error) {
	p, err := protocol.VerifyConfirmationToken(c.key, token, macroID)
	if err != nil {
		return err.Error(), nil
	}
	if !now.Before(p.Expiry) {
		return "the token has expired", nil
	}
	if p.Expiry.Sub(now) > c.ttl+time.Minute {
		return "the token claims a lifetime longer than the server allows", nil
	}
	fresh, err := c.store.UseNonce(ctx, p.Nonce, p.Expiry.Sub(now))
	if err != nil {
		return "", &storeError{op: "recording a confirmation nonce", cause: err}
	}
	if !fresh {
		return "the token was already used", nil
	}
	return "", nil
}

// ConfirmationToken issues a confirmation token for macroID, as a host does
// after its user approved the invocation. It expires after the configured
// confirmation TTL and is accepted once.
func (s *Server) ConfirmationToken(macroID string) string {
	return protocol.ConfirmationToken(s.confirm.key, macroID, s.now().Add(s.confirm.ttl))
}
