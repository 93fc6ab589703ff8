package protocol

import "context"

// transportKey carries the name of the transport a request arrived on.
type transportKey struct{}

// WithTransport returns a context naming the transport a request arrived
// on ("http", "ws", "stdio"); servers use it in metrics, access logs and
// traces.
func WithTransport(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, transportKey{}, name)
}

// TransportFrom returns the transport named by [WithTransport], or "other".
func TransportFrom(ctx context.Context) string {
	if t, ok := ctx.Value(transportKey{}).(string); ok && t != "" {
		return t
	}
	return "other"
}
