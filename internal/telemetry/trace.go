// Package telemetry is the plumbing Tether's packages share for metrics
// and traces. Traces: the tracer every package records with and the W3C
// trace context carried in message headers (NATS). It depends on the
// OpenTelemetry and Prometheus APIs only: the exporters (OTLP over HTTP
// or gRPC, the SDK's batch processor) are set up by the tether command
// through package export, so that a program importing a library (host,
// serve, cluster) links none of them unless it asks, as OpenTelemetry's
// guidance for libraries says.
package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span Tether records.
const ScopeName = "github.com/tetherhq/tether"

// Tracer returns the tracer to record spans with: tp's, or the global
// provider's when tp is nil (a no-op unless the program set one; a
// provider set later is used from then on).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(ScopeName)
}

// propagator is W3C trace context alone, whatever the global propagator:
// context crosses NATS even in a program that set none, and baggage
// (free-form, possibly personal) does not travel.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Inject writes ctx's span context into message headers (a nats.Header,
// an http.Header: both are map[string][]string) as "Traceparent" and
// "Tracestate". Nothing is written when ctx carries no span context.
func Inject(ctx context.Context, h map[string][]string) {
	if h == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, propagation.HeaderCarrier(http.Header(h)))
}

// Extract returns ctx with the remote span context of message headers
// written by Inject; ctx unchanged when they have none (or a malformed
// one).
func Extract(ctx context.Context, h map[string][]string) context.Context {
	if h == nil {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(http.Header(h)))
}

// SetError marks span failed with err, if any. Only the error's code
// (a bounded name) and message go into the span; callers pass errors
// that hold no prompt or secret.
func SetError(span trace.Span, err error, code string) {
	if err == nil {
		return
	}
	if code != "" {
		span.SetAttributes(attribute.String("tether.error.code", code))
	}
	span.SetStatus(codes.Error, err.Error())
}
