package serve

import (
	"context"
	"sync/atomic"

	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/transport"
)

// switchHandler serves the booting stand-in until the server is loaded,
// then the server, so the listener answers from the first moment.
type switchHandler struct {
	cur atomic.Pointer[handlerBox]
}

type handlerBox struct{ h transport.Handler }

func (s *switchHandler) set(h transport.Handler) { s.cur.Store(&handlerBox{h}) }

func (s *switchHandler) get() transport.Handler { return s.cur.Load().h }

// Handle delegates to the current handler.
func (s *switchHandler) Handle(ctx context.Context, in *protocol.Inbound) *protocol.Envelope {
	return s.get().Handle(ctx, in)
}

// ManifestJSON delegates to the current handler.
func (s *switchHandler) ManifestJSON() ([]byte, string) { return s.get().ManifestJSON() }

// MaxMessageBytes delegates to the current handler.
func (s *switchHandler) MaxMessageBytes() int64 { return s.get().MaxMessageBytes() }

// SkillJSON serves skills once the server is loaded.
func (s *switchHandler) SkillJSON(id string) ([]byte, bool) {
	if src, ok := s.get().(transport.SkillSource); ok {
		return src.SkillJSON(id)
	}
	return nil, false
}

// OnManifestChange subscribes to the loaded server's manifest changes.
func (s *switchHandler) OnManifestChange(fn func()) func() {
	if n, ok := s.get().(transport.ManifestNotifier); ok {
		return n.OnManifestChange(fn)
	}
	return func() {}
}

// AuthRequired reports whether the current handler requires credentials.
func (s *switchHandler) AuthRequired() bool {
	if a, ok := s.get().(interface{ AuthRequired() bool }); ok {
		return a.AuthRequired()
	}
	return false
}

// CheckCredentials delegates to the loaded server, so the HTTP binding
// refuses a request without valid credentials before reading its body.
func (s *switchHandler) CheckCredentials(ctx context.Context, c *protocol.Credentials, peer string) *protocol.Error {
	if a, ok := s.get().(transport.Authenticator); ok {
		return a.CheckCredentials(ctx, c, peer)
	}
	return nil
}

// Registry returns the loaded server's error registry (nil, the standard
// codes only, while booting), so the transports map the domain's own codes.
func (s *switchHandler) Registry() *protocol.Registry {
	if r, ok := s.get().(transport.ErrorRegistry); ok {
		return r.Registry()
	}
	return nil
}

// BorrowsData reports whether the current handler only borrows a
// message's bytes. Both the booting stand-in and the server do, so a
// switch between them while a request is read changes nothing.
func (s *switchHandler) BorrowsData() bool {
	d, ok := s.get().(transport.DataBorrower)
	return ok && d.BorrowsData()
}

// SessionOpened counts a session in the loaded server's metrics.
func (s *switchHandler) SessionOpened() func() {
	if c, ok := s.get().(interface{ SessionOpened() func() }); ok {
		return c.SessionOpened()
	}
	return func() {}
}

func newSwitch(h transport.Handler) *switchHandler {
	s := &switchHandler{}
	s.set(h)
	return s
}
