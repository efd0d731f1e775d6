package cluster

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry"
)

// Spans of the cluster (docs/cluster.md, Traces). The client's span of a
// command, start or snapshot travels in the NATS message's headers as W3C
// trace context (Traceparent, Tracestate); the agent's span of the same
// request is its child, and its ctx goes on into host: the turn a send
// opens, the session and CLI starts, are the agent span's children.

const (
	attrSession = attribute.Key("tether.session.id")
	attrAgent   = attribute.Key("tether.agent.id")
	attrCommand = attribute.Key("tether.command.type")
	attrFail    = attribute.Key("tether.failover")
)

var attrNATS = attribute.String("messaging.system", "nats")

// spanName names a command's span after its type, which every caller has
// validated: a bounded set.
func spanName(prefix string, c *host.Command) string {
	if c == nil || c.Type == "" {
		return prefix
	}
	return prefix + " " + string(c.Type)
}

// startClientSpan opens the span of a request the client sends and
// writes its context into the message's headers.
func startClientSpan(ctx context.Context, tr trace.Tracer, name, subject, session string, h nats.Header, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attrNATS, attribute.String("messaging.destination.name", subject), attrSession.String(session))
	ctx, span := tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	telemetry.Inject(ctx, h)
	return ctx, span
}

// startServerSpan opens the agent's span of a request, the child of the
// client's span carried in the message's headers (a root when it has
// none).
func startServerSpan(ctx context.Context, tr trace.Tracer, name, agent, session string, h nats.Header, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx = telemetry.Extract(ctx, h)
	attrs = append(attrs, attrNATS, attrAgent.String(agent), attrSession.String(session))
	return tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// endSpan ends span, failed with err's code when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		telemetry.SetError(span, err, errCode(err))
	}
	span.End()
}

// errCode is err's stable code, the cluster's own or host's.
func errCode(err error) string {
	if w := wireErr(err); w != nil {
		return w.Code
	}
	return host.ErrorCode(err)
}
