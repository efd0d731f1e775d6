package serve

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/internal/telemetry"
)

// Spans of the server (docs/cluster.md, Traces): one per WebSocket
// request that reaches a session, "serve start" and "serve do <type>",
// each the root of its trace (the browser records none): the backend's
// spans (the cluster's NATS hop, the agent, the turn) are its children.

// startSpan opens the root span of a request.
func (s *Server) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tr := s.tr
	if tr == nil { // a Server not made by NewServer
		tr = telemetry.Tracer(nil)
	}
	return tr.Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endSpan ends span, failed with err's protocol code when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		telemetry.SetError(span, err, protoError(err).Code)
	}
	span.End()
}

const (
	attrSession = attribute.Key("tether.session.id")
	attrCommand = attribute.Key("tether.command.type")
)
