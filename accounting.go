package manglecp

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/manglecp/manglecp/protocol"
)

// SessionOpened counts an open session connection (WebSocket or stdio) in
// the metrics; call the returned function when it closes.
func (s *Server) SessionOpened() (closed func()) {
	if !s.loaded.Load() || s.metrics == nil { // booting: no metrics yet
		return noEnd
	}
	return s.metrics.SessionOpened()
}

// finishRequest is the single place a request is accounted for: the
// access log line, the metrics and the end of its span.
func (s *Server) finishRequest(ctx context.Context, span trace.Span, in *protocol.Inbound, out *protocol.Envelope, rec *requestInfo, took time.Duration) {
	code := "ok"
	if out.Type == protocol.TypeError {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(out.Payload, &p)
		code = p.Code
	}
	typ := rec.typ
	switch typ {
	case protocol.TypeIntentRequest, protocol.TypeInvokeRequest, protocol.TypeAuthenticate:
	case "":
		typ = "undecoded"
	default:
		typ = "other" // bounded label values: the type comes from the client
	}
	transport := transportFrom(ctx)
	derived := int64(-1)
	if r, ok := rec.resp.(*protocol.IntentResponse); ok && r.Diagnostics != nil {
		derived = r.Diagnostics.FactsDerived
	}
	s.metrics.Request(typ, transport, code, took, derived)
	endRequest(span, rec, code, len(out.Payload))
	if s.log.Enabled(ctx, slog.LevelInfo) {
		identity := rec.identity
		if identity == "" {
			identity = "-"
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "request",
			slog.String("request_id", rec.id),
			slog.String("log_id", rec.logID),
			slog.String("identity", identity),
			slog.String("type", string(typ)),
			slog.String("transport", transport),
			slog.String("code", code),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			slog.Int("bytes_in", len(in.Data)),
			slog.Int("bytes_out", len(out.Payload)))
	}
}
