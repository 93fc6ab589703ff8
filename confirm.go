package manglecp

import (
	"sync"
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// confirmer verifies confirmation tokens (see protocol.ConfirmationToken)
// and refuses replays until the token would have expired anyway.
type confirmer struct {
	key []byte
	ttl time.Duration

	mu   sync.Mutex
	used map[string]time.Time // nonce -> expiry
}

func newConfirmer(key []byte, ttl time.Duration) *confirmer {
	return &confirmer{key: key, ttl: ttl, used: map[string]time.Time{}}
}

// verify checks a token for macroID and consumes it. It returns a reason
// when the token is invalid, expired, too long-lived or already used.
func (c *confirmer) verify(token, macroID string, now time.Time) string {
	p, err := protocol.VerifyConfirmationToken(c.key, token, macroID)
	if err != nil {
		return err.Error()
	}
	if !now.Before(p.Expiry) {
		return "the token has expired"
	}
	if p.Expiry.Sub(now) > c.ttl+time.Minute {
		return "the token claims a lifetime longer than the server allows"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, e := range c.used {
		if !now.Before(e) {
			delete(c.used, n)
		}
	}
	if _, seen := c.used[p.Nonce]; seen {
		return "the token was already used"
	}
	c.used[p.Nonce] = p.Expiry
	return ""
}

// ConfirmationToken issues a confirmation token for macroID, as a host does
// after its user approved the invocation. It expires after the configured
// confirmation TTL and is accepted once.
func (s *Server) ConfirmationToken(macroID string) string {
	return protocol.ConfirmationToken(s.confirm.key, macroID, s.now().Add(s.confirm.ttl))
}
