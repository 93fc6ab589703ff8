package manglecp

import (
	"context"
	"encoding/json"

	"github.com/manglecp/manglecp/protocol"
)

// Booting answers for a server that is still loading (Spec 04 section
// 4.2): its manifest has status "booting" and every request gets
// server_not_ready with retry_after_ms. A host serves it while
// [NewServer] loads the rules, then switches to the server.
type Booting struct {
	manifest []byte
	limit    int64
	auth     bool
}

// NewBooting builds the booting stand-in for d with opts.
func NewBooting(d Domain, opts *Options) *Booting {
	o := opts.withDefaults()
	s := &Server{opts: o, domain: d}
	m := s.baseManifest(protocol.StatusBooting)
	raw, _ := json.Marshal(m)
	return &Booting{manifest: raw, limit: o.Limits.MaxMessageBytes, auth: len(o.Identities) > 0}
}

// AuthRequired reports whether the loaded server will require credentials.
func (b *Booting) AuthRequired() bool { return b.auth }

// Handle answers server_not_ready, correlated when the id is readable.
func (b *Booting) Handle(_ context.Context, in *protocol.Inbound) *protocol.Envelope {
	env, _ := protocol.DecodeEnvelope(in.Data)
	return protocol.ErrorEnvelope(env.IDString(), protocol.Errorf(protocol.CodeServerNotReady, "the server is booting").WithRetryAfter(500))
}

// BorrowsData reports true: the stand-in keeps nothing of a message
// (transport.DataBorrower).
func (b *Booting) BorrowsData() bool { return true }

// ManifestJSON returns the booting manifest.
func (b *Booting) ManifestJSON() ([]byte, string) { return b.manifest, `"booting"` }

// MaxMessageBytes is the configured limit.
func (b *Booting) MaxMessageBytes() int64 { return b.limit }
