package claude

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The environment variables that carry W3C trace context into the CLI, so
// that what it records (with its own OpenTelemetry switched on) joins the
// caller's trace.
const (
	EnvTraceParent = "TRACEPARENT"
	EnvTraceState  = "TRACESTATE"
)

// withTraceContext returns env with TRACEPARENT (and TRACESTATE, when the
// span has one) of ctx's span, for the CLI's environment. env is returned
// as it is when ctx carries no valid span context, or when the caller set
// either variable in env: theirs win. env itself is never modified.
func withTraceContext(ctx context.Context, env map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return env
	}
	if _, ok := env[EnvTraceParent]; ok {
		return env
	}
	if _, ok := env[EnvTraceState]; ok {
		return env
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	tp := carrier.Get("traceparent")
	if tp == "" {
		return env
	}
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	out[EnvTraceParent] = tp
	if ts := carrier.Get("tracestate"); ts != "" {
		out[EnvTraceState] = ts
	}
	return out
}
