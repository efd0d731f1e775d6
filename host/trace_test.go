package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// spanNamed returns the one ended span called name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans %q among %q", len(found), name, names)
	}
	return found[0]
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// A session's spans: session start and cli start under the starter's
// span (the CLI's TRACEPARENT names cli start), the turn under the
// sender's span, and the tool call and the approval wait under the turn,
// with their outcomes.
func TestSessionSpans(t *testing.T) {
	ctx := testCtx(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")

	answer := make(chan json.RawMessage, 1)
	fake := &claudetest.FakeCLI{Script: toolTurn("Bash", map[string]string{"command": "ls"}, answer)}
	m := host.NewManager(&host.ManagerOptions{TracerProvider: tp})
	defer m.Close()
	startCtx, starter := tr.Start(ctx, "starter")
	s, err := m.Start(startCtx, &host.Options{CLI: &claude.Options{Transport: fake}})
	starter.End()
	if err != nil {
		t.Fatal(err)
	}
	sendCtx, sender := tr.Start(ctx, "sender")
	d, err := s.Send(sendCtx, "list the files")
	sender.End()
	if err != nil {
		t.Fatal(err)
	}
	l := watchStates(ctx, s)
	defer func() { s.Close(); <-l.done }()
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	if err := a.Allow(); err != nil {
		t.Fatal(err)
	}
	<-answer
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	spans := exp.GetSpans()
	root, sender2 := spanNamed(t, spans, "starter"), spanNamed(t, spans, "sender")
	start, cli := spanNamed(t, spans, "session start"), spanNamed(t, spans, "cli start")
	turn, tool, appr := spanNamed(t, spans, "turn"), spanNamed(t, spans, "tool"), spanNamed(t, spans, "approval")
	parent := func(child, of tracetest.SpanStub) {
		t.Helper()
		if child.Parent.SpanID() != of.SpanContext.SpanID() || child.SpanContext.TraceID() != of.SpanContext.TraceID() {
			t.Errorf("%s: parent %s, want %s (%s)", child.Name, child.Parent.SpanID(), of.Name, of.SpanContext.SpanID())
		}
	}
	parent(start, root)
	parent(cli, start)
	parent(turn, sender2)
	parent(tool, turn)
	parent(appr, turn)
	for _, c := range []struct {
		s         tracetest.SpanStub
		key, want string
	}{
		{start, "tether.session.id", s.ID()},
		{turn, "tether.message.uuid", d.UUID},
		{turn, "tether.delivery.status", "answered"},
		{turn, "claude.result.subtype", "success"},
		{tool, "tether.tool.name", "Bash"},
		{tool, "tether.tool.use_id", "toolu_1"},
		{tool, "tether.outcome", "ok"},
		{appr, "tether.approval.kind", "tool"},
		{appr, "tether.outcome", "allow"},
		{appr, "tether.approval.answered_by", "person"},
	} {
		if got := attr(c.s, c.key); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.s.Name, c.key, got, c.want)
		}
	}
	// Nothing of the prompt or the tool's input in any attribute.
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if v := kv.Value.Emit(); strings.Contains(v, "list the files") || strings.Contains(v, `"ls"`) {
				t.Errorf("%s: attribute %s = %q", sp.Name, kv.Key, v)
			}
		}
	}
	// The CLI was started with cli start as its parent.
	want := "00-" + cli.SpanContext.TraceID().String() + "-" + cli.SpanContext.SpanID().String() + "-01"
	var got string
	for _, kv := range fake.Launches()[0].Env {
		if v, ok := strings.CutPrefix(kv, "TRACEPARENT="); ok {
			got = v
		}
	}
	if got != want {
		t.Errorf("the CLI's TRACEPARENT = %q, want %q", got, want)
	}
}
