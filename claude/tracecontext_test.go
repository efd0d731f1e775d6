package claude_test

import (
	"context"
	"os"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

func init() {
	// trace-env answers every prompt with the trace context it was
	// started with: "TRACEPARENT|TRACESTATE".
	scripts["trace-env"] = func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		for {
			if _, err := c.ReadUser(ctx); err != nil {
				return nil
			}
			text := os.Getenv("TRACEPARENT") + "|" + os.Getenv("TRACESTATE")
			if err := c.Write(c.SystemInit(), c.AssistantText(text), c.ResultSuccess(text)); err != nil {
				return err
			}
		}
	}
}

// traceEnvOf starts the trace-env script as a subprocess with ctx and
// opts' Env, and returns what it saw.
func traceEnvOf(t *testing.T, ctx context.Context, env map[string]string) (parent, state string) {
	t.Helper()
	o := claudetest.ExecOptions("trace-env")
	for k, v := range env {
		o.Env[k] = v
	}
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "env?"); err != nil {
		t.Fatal(err)
	}
	var text string
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			text = a.Text()
		}
	}
	parent, state, _ = strings.Cut(text, "|")
	return parent, state
}

// A CLI started under an active span gets its W3C trace context in
// TRACEPARENT and TRACESTATE: the trace id and the span's id as the
// parent, sampled.
func TestConnectPassesTraceContext(t *testing.T) {
	t.Setenv("TRACEPARENT", "") // not inherited from whoever runs the tests
	ctx := testCtx(t)
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ts, err := trace.ParseTraceState("tether=1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(ctx, "connect")
	defer span.End()
	ctx = trace.ContextWithSpanContext(ctx, span.SpanContext().WithTraceState(ts))
	sc := span.SpanContext()

	parent, state := traceEnvOf(t, ctx, nil)
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if parent != want {
		t.Errorf("TRACEPARENT = %q, want %q", parent, want)
	}
	if state != "tether=1" {
		t.Errorf("TRACESTATE = %q, want tether=1", state)
	}

	// The caller's Env wins.
	mine := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if parent, _ := traceEnvOf(t, ctx, map[string]string{"TRACEPARENT": mine}); parent != mine {
		t.Errorf("with Options.Env: TRACEPARENT = %q, want %q", parent, mine)
	}
	// No span, no trace context.
	if parent, _ := traceEnvOf(t, testCtx(t), nil); parent != "" {
		t.Errorf("without a span: TRACEPARENT = %q", parent)
	}
}
