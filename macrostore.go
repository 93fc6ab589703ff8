package manglecp

import (
	"context"
	"errors"
	"time"

	"github.com/manglecp/manglecp/internal/macros"
	"github.com/manglecp/manglecp/protocol"
	"github.com/manglecp/manglecp/store"
)

// saveMacros stores the definitions an evaluation synthesized: in the
// shared store, encoded, when there is one, and decoded in this process.
func (s *Server) saveMacros(ctx context.Context, defs []*macros.Def) error {
	if len(defs) == 0 {
		return nil
	}
	ctx, end := s.span(ctx, "manglecp.store.put_macros")
	defer end()
	if s.macros.Shared != nil {
		recs, err := macros.Encode(defs, s.now())
		if err != nil {
			return err
		}
		if err := s.macros.Shared.PutMacros(ctx, recs); err != nil {
			s.metrics.StoreError("put_macros")
			return &storeError{op: "storing macro-tools", cause: err}
		}
		for _, r := range recs {
			s.metrics.MacroStored(len(r.Data))
		}
	} else {
		for _, d := range defs {
			s.metrics.MacroStored(int(d.Size))
		}
	}
	s.macros.Put(defs, s.now())
	return nil
}

// loadMacro returns the definition of id, or nil when it is unknown,
// evicted or past its retention on this server's clock. A stored record
// this replica cannot authenticate or does not understand is treated as
// unknown, and logged.
func (s *Server) loadMacro(ctx context.Context, id string, now time.Time) (*macros.Def, error) {
	ctx, end := s.span(ctx, "manglecp.store.get_macro")
	defer end()
	if d := s.macros.Get(id, now); d != nil {
		s.metrics.MacroLookup("hit")
		return d, nil
	}
	if s.macros.Shared == nil {
		s.metrics.MacroLookup("miss")
		return nil, nil
	}
	raw, err := s.macros.Shared.GetMacro(ctx, id)
	var d *macros.Def
	if err == nil && raw != nil {
		d, err = macros.Decode(raw, id)
	}
	if errors.Is(err, store.ErrRejected) {
		s.metrics.MacroLookup("rejected")
		rid, _ := ctx.Value(requestIDKey{}).(string)
		s.log.Warn("stored macro-tool rejected: answered macro_not_found", "request_id", rid,
			"macro_id", protocol.Clip(id), "reason", err.Error())
		return nil, nil
	}
	if err != nil {
		s.metrics.StoreError("get_macro")
		s.metrics.MacroLookup("error")
		return nil, &storeError{op: "loading a macro-tool", cause: err}
	}
	if d == nil || !d.Expires.After(now) {
		s.metrics.MacroLookup("miss")
		return nil, nil
	}
	s.macros.Put([]*macros.Def{d}, now)
	s.metrics.MacroLookup("hit")
	return d, nil
}

// ownerRecord is the owner a definition records for c (nil for none).
func ownerRecord(c *caller) *macros.Owner {
	if c == nil {
		return nil
	}
	return &macros.Owner{Name: c.name, Anonymous: c.anonymous}
}
