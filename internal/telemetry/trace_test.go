package telemetry_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/internal/telemetry"
)

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
