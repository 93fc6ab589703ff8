package manglecp

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/manglecp/manglecp/protocol"
)

// TracerName is the instrumentation scope of the server's spans.
const TracerName = "github.com/manglecp/manglecp"

// newTracer returns the server's tracer, or nil when tracing is off.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(TracerName, trace.WithInstrumentationVersion(Version))
}

func noEnd() {}

// span starts a child span of the one in ctx. With tracing off it returns
// ctx unchanged and does nothing.
func (s *Server) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func()) {
	if s.tracer == nil {
		return ctx, noEnd
	}
	ctx, sp := s.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func() { sp.End() }
}

// startRequest starts the span of one request (a child of a trace context
// the transport extracted, e.g. from a W3C traceparent header).
func (s *Server) startRequest(ctx context.Context) (context.Context, trace.Span) {
	if s.tracer == nil {
		return ctx, nil
	}
	return s.tracer.Start(ctx, "manglecp.request", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("manglecp.transport", transportFrom(ctx))))
}

// endRequest records the outcome on the request span and ends it.
func endRequest(span trace.Span, rec *requestInfo, code string, bytesOut int) {
	if span == nil {
		return
	}
	span.SetAttributes(
		attribute.String("manglecp.type", string(rec.typ)),
		attribute.String("manglecp.request_id", rec.id),
		attribute.String("manglecp.log_id", rec.logID),
		attribute.String("manglecp.code", code),
		attribute.Int("manglecp.response_bytes", bytesOut))
	if code != "ok" && protocol.Code(code).HTTPStatus() >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

func transportFrom(ctx context.Context) string { return protocol.TransportFrom(ctx) }
