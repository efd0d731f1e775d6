package export_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/tetherhq/tether/internal/telemetry"
	"github.com/tetherhq/tether/internal/telemetry/export"
	"github.com/tetherhq/tether/internal/telemetry/otlptest"
)

func TestSetupTracingOffUnlessAsked(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, // no exporter asked for
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		otlptest.ClearOTEL(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		before := otel.GetTracerProvider()
		ts, err := export.SetupTracing(context.Background(), "tether-test", nil)
		if err != nil || ts.Enabled() || ts.TracerProvider() != nil {
			t.Errorf("%v: enabled %v, err %v", env, ts.Enabled(), err)
		}
		if otel.GetTracerProvider() != before {
			t.Errorf("%v: the global provider changed", env)
		}
	}
}

func TestSetupTracingRefusesWhatItCannotDo(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		otlptest.ClearOTEL(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		_, err := export.SetupTracing(context.Background(), "tether-test", nil)
		var ce *export.TraceConfigError
		if !errors.Is(err, export.ErrTraceConfig) || !errors.As(err, &ce) || ce.Var == "" {
			t.Errorf("%v: err %v", env, err)
		}
	}
}

// On, spans go to the OTLP endpoint with the service name (OTEL_SERVICE_NAME
// winning over the program's), and shutting down flushes them.
func TestSetupTracingExports(t *testing.T) {
	recv := otlptest.NewReceiver()
	defer recv.Close()
	for _, c := range []struct {
		env     map[string]string
		service string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint()}, "tether-test"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": recv.URL(), "OTEL_SERVICE_NAME": "mine"}, "mine"},
	} {
		otlptest.ClearOTEL(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		n := len(recv.Spans())
		ts, err := export.SetupTracing(context.Background(), "tether-test", nil)
		if err != nil || !ts.Enabled() {
			t.Fatalf("%v: enabled %v, err %v", c.env, ts.Enabled(), err)
		}
		_, span := telemetry.Tracer(nil).Start(context.Background(), "probe")
		span.End()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := ts.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		got := recv.Spans()[n:]
		if len(got) != 1 || got[0].Name != "probe" || got[0].Service != c.service {
			t.Errorf("%v: received %+v", c.env, got)
		}
	}
}

// OTLP over gRPC stays available to the command that links this package:
// asked for, it makes an enabled provider (the exporter connects lazily,
// so no collector is needed to set it up).
func TestSetupTracingGRPC(t *testing.T) {
	otlptest.ClearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	ts, err := export.SetupTracing(context.Background(), "tether-test", nil)
	if err != nil || !ts.Enabled() {
		t.Fatalf("enabled %v, err %v", ts.Enabled(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ts.Shutdown(ctx) // nothing buffered: nothing to deliver to the absent collector
}
