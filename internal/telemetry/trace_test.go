package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/internal/telemetry"
	"github.com/tetherhq/tether/internal/telemetry/otlptest"
)

func clearOTEL(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestSetupTracingOffUnlessAsked(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, // no exporter asked for
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		clearOTEL(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		before := otel.GetTracerProvider()
		ts, err := telemetry.SetupTracing(context.Background(), "tether-test", nil)
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
		clearOTEL(t)
		for k, v := range env {
			t.Setenv(k, v)
		}
		_, err := telemetry.SetupTracing(context.Background(), "tether-test", nil)
		var ce *telemetry.TraceConfigError
		if !errors.Is(err, telemetry.ErrTraceConfig) || !errors.As(err, &ce) || ce.Var == "" {
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
		clearOTEL(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		n := len(recv.Spans())
		ts, err := telemetry.SetupTracing(context.Background(), "tether-test", nil)
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

// Context written into message headers comes back out as the remote parent.
func TestInjectExtract(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	h := map[string][]string{}
	telemetry.Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	if got := http.Header(h).Get("traceparent"); got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent %q", got)
	}
	out := trace.SpanContextFromContext(telemetry.Extract(context.Background(), h))
	if !out.IsRemote() || out.TraceID() != tid || out.SpanID() != sid {
		t.Errorf("extracted %+v", out)
	}
	empty := map[string][]string{}
	telemetry.Inject(context.Background(), empty)
	if len(empty) != 0 {
		t.Errorf("no span, headers %v", empty)
	}
}
