package client

import (
	"time"

	"github.com/manglecp/manglecp/protocol"
)

// ConfirmationToken makes a confirmation token (Spec 08 section 4.2) for
// macroID that expires ttl from now, signed with key, the confirmation key
// the host shares with the server; see [protocol.ConfirmationToken] for the
// format. A host mints one only after its user consented to the
// invocation. The server accepts a token once, for that macro_id only,
// before it expires, and refuses tokens that claim a longer lifetime than
// its own limit (by default 5 minutes).
func ConfirmationToken(key []byte, macroID string, ttl time.Duration) string {
	return protocol.ConfirmationToken(key, macroID, time.Now().Add(ttl))
}
