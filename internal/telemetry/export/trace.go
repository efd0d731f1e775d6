// Package export sets up where Tether's telemetry goes: the OTLP trace
// exporter (HTTP/protobuf or gRPC) and the SDK's tracer provider, from the
// standard OTEL_ environment variables. Only programs import it (the
// tether command, through internal/cli): the libraries record through
// the OpenTelemetry API alone (package telemetry), so that importing host,
// serve or cluster links no exporter, no gRPC and no SDK, and a program
// embedding them wires its own.
package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrTraceConfig is matched (errors.Is) by a *TraceConfigError.
var ErrTraceConfig = errors.New("telemetry: bad trace configuration")

// TraceConfigError is an OTEL_ variable SetupTracing cannot honour.
type TraceConfigError struct {
	Var, Value string
	Reason     string
}

func (e *TraceConfigError) Error() string {
	return fmt.Sprintf("telemetry: %s=%q: %s", e.Var, e.Value, e.Reason)
}

func (e *TraceConfigError) Unwrap() error { return ErrTraceConfig }

// TraceSetup is the result of SetupTracing.
type TraceSetup struct {
	// Provider is the tracer provider made, nil when tracing is off.
	Provider *sdktrace.TracerProvider
}

// TracerProvider returns the provider to hand to Tether's options: nil
// (the global, a no-op) when tracing is off.
func (s *TraceSetup) TracerProvider() trace.TracerProvider {
	if !s.Enabled() {
		return nil
	}
	return s.Provider
}

// Enabled reports whether spans are exported.
func (s *TraceSetup) Enabled() bool { return s != nil && s.Provider != nil }

// Shutdown flushes what is buffered and stops the exporter, within ctx:
// bound it, because a collector out of reach would otherwise hold the
// program's exit. Safe on a nil or disabled setup.
func (s *TraceSetup) Shutdown(ctx context.Context) error {
	if !s.Enabled() {
		return nil
	}
	return s.Provider.Shutdown(ctx)
}

// SetupTracing makes the global tracer provider from the standard OTEL_
// environment variables, for a program (`tether serve`, `tether agent`).
// It is off unless asked for: spans are exported only when
// OTEL_TRACES_EXPORTER is "otlp", or it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off.
// Off, nothing global is touched, and the provider stays a no-op.
//
// On, the exporter is OTLP over HTTP/protobuf (the default) or gRPC
// (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL=grpc), configured by the
// exporter's own OTEL_EXPORTER_OTLP_* variables (endpoint, headers,
// TLS, timeout, compression); spans go through a batch processor
// (OTEL_BSP_*), sampled per OTEL_TRACES_SAMPLER; the resource has
// service.name = service unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise. The global propagator becomes
// W3C trace context. Export errors go to log (nil: dropped), never to
// stderr.
func SetupTracing(ctx context.Context, service string, log *slog.Logger) (*TraceSetup, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return &TraceSetup{}, nil
	}
	exporter := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	switch exporter {
	case "none":
		return &TraceSetup{}, nil
	case "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return &TraceSetup{}, nil
		}
	case "otlp":
	default:
		return nil, &TraceConfigError{Var: "OTEL_TRACES_EXPORTER", Value: exporter, Reason: `supported: "otlp" and "none"`}
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol := strings.TrimSpace(os.Getenv(protoVar))
	if protocol == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = strings.TrimSpace(os.Getenv(protoVar))
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, &TraceConfigError{Var: protoVar, Value: protocol, Reason: `supported: "http/protobuf" and "grpc"`}
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: later wins
	)
	if err != nil && res == nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: the trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	otel.SetErrorHandler(&errorLog{log: log})
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return &TraceSetup{Provider: tp}, nil
}

// errorLog logs OpenTelemetry's errors (a collector out of reach): the
// first at once, then at most one a minute with the count of those left
// out, so that a down collector does not flood the log.
type errorLog struct {
	log *slog.Logger

	mu      sync.Mutex
	last    time.Time
	dropped int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	now := time.Now()
	if !e.last.IsZero() && now.Sub(e.last) < time.Minute {
		e.dropped++
		e.mu.Unlock()
		return
	}
	dropped := e.dropped
	e.last, e.dropped = now, 0
	e.mu.Unlock()
	e.log.Warn("telemetry: exporting traces", "err", err, "errors_not_logged", dropped)
}
