package manglecp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/manglecp/manglecp/internal/memstore"
	"github.com/manglecp/manglecp/protocol"
)

// confirmer verifies confirmation tokens (see protocol.ConfirmationToken)
// and refuses replays until the token would have expired anyway. Used
// nonces live in the server's [Store], so with a shared store a token
// accepted by one replica is refused by every other; replicas must then
// share the confirmation key (Options.ConfirmationKey).
//
// The shared store is trusted to keep a used nonce until the token
// expires: anyone who can write it (Redis) can delete the record, and the
// token would then be accepted again. So each replica also keeps the
// nonces it accepted itself (local, memory bounded by the tokens of one
// TTL): a token it accepted is never accepted by it again, and a shared
// store that forgot one is logged at ERROR (a replay detected). Across
// replicas, a forgotten nonce still lets the token run once more on a
// replica that has not seen it, within the token's lifetime; each
// accepted nonce is logged (digest) so that an audit finds the reuse.
type confirmer struct {
	key   []byte
	ttl   time.Duration
	store Store
	local Store // nonces this replica accepted; nil when store is this process's own
	log   *slog.Logger
}

func newConfirmer(key []byte, ttl time.Duration, store Store, shared bool, now func() time.Time, log *slog.Logger) *confirmer {
	c := &confirmer{key: key, ttl: ttl, store: store, log: log}
	if shared {
		c.local = memstore.New(1, now)
	}
	return c
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
	if c.local != nil {
		sum := sha256.Sum256([]byte(p.Nonce))
		digest := hex.EncodeToString(sum[:8])
		if again, _ := c.local.UseNonce(ctx, p.Nonce, p.Expiry.Sub(now)); !again {
			c.log.ErrorContext(ctx, "confirmation token replayed: this replica accepted it before and the shared store had forgotten its nonce (was the store changed?); refused",
				"macro_id", macroID, "nonce_digest", digest)
			return "the token was already used", nil
		}
		c.log.InfoContext(ctx, "confirmation token accepted", "macro_id", macroID, "nonce_digest", digest)
	}
	return "", nil
}

// ConfirmationToken issues a confirmation token for macroID, as a host does
// after its user approved the invocation. It expires after the configured
// confirmation TTL and is accepted once.
func (s *Server) ConfirmationToken(macroID string) string {
	return protocol.ConfirmationToken(s.confirm.key, macroID, s.now().Add(s.confirm.ttl))
}
