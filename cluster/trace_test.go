package cluster_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry/otlptest"
	"github.com/tetherhq/tether/serve"
)

// tracerTo is a tracer provider of service exporting over OTLP/HTTP to
// the receiver, shut down (flushed) at the end of the test.
func tracerTo(t *testing.T, r *otlptest.Receiver, service string) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracehttp.New(testCtx(t), otlptracehttp.WithEndpointURL(r.URL()))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tp.Shutdown(ctx)
	})
	return tp
}

// One turn's trace across serve, NATS, the agent and the CLI: a browser
// starts a session, sends a prompt whose tool call asks for approval and
// answers it, through tether serve over the cluster; each process exports
// its spans to an OTLP receiver. The spans must form one tree per
// request: serve's "do send" is the parent (through NATS headers) of the
// agent's command span, itself the parent of the host's turn, itself the
// parent of the tool call and the approval wait; the start request's tree
// reaches the session and CLI starts, and the CLI was told its parent in
// TRACEPARENT.
func TestTraceOfATurnAcrossTheCluster(t *testing.T) {
	recv := otlptest.NewReceiver()
	defer recv.Close()
	serveTP, agentTP := tracerTo(t, recv, "tether-serve"), tracerTo(t, recv, "tether-agent")
	ns := newNATS(t, nil)
	fake := &claudetest.FakeCLI{Script: memoryCLI}
	a, err := cluster.NewAgent(testCtx(t), &cluster.AgentOptions{
		URL: ns.URL(), ID: "a1", Capacity: 2, Limits: limits, Logger: testLogger(),
		Session: &host.Options{CLI: &claude.Options{
			Transport: fake,
			Env:       map[string]string{claude.EnvConfigDir: t.TempDir()},
		}},
		TracerProvider: agentTP,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c, err := cluster.NewClient(testCtx(t), &cluster.ClientOptions{URL: ns.URL(), Limits: limits, Logger: testLogger(), TracerProvider: serveTP})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const token = serveToken
	hs := serveOverCluster(t, c, &serve.Options{TracerProvider: serveTP})

	b := dialServe(t, hs.URL, token)
	rep := b.next("the start reply", replyTo(b.send(map[string]any{"type": "start"})))
	var started struct {
		Session serve.SessionInfo `json:"session"`
	}
	if err := json.Unmarshal(rep["result"], &started); err != nil || started.Session.ID == "" {
		t.Fatalf("start: %s %s", rep["result"], rep["error"])
	}
	sid := started.Session.ID
	b.next("the subscribe reply", replyTo(b.send(map[string]any{"type": "subscribe", "session": sid, "after": 0})))
	// The approval may come before the send's reply (the reply crosses
	// the bus twice, the events once) and next drops what it does not
	// match: look for the reply from where it was sent, on a cursor of
	// its own.
	sent := b.from
	sendID := b.send(map[string]any{"type": "do", "session": sid, "command": map[string]any{"type": "send", "text": "approve"}})
	f := b.next("the approval", func(f map[string]json.RawMessage) bool {
		ev, ok := eventOf(f)
		return ok && ev.Kind == host.EventApproval
	})
	b.nextAt("the send reply", &sent, replyTo(sendID))
	ev, _ := eventOf(f)
	var ap host.ApprovalInfo
	if err := json.Unmarshal(ev.Data, &ap); err != nil {
		t.Fatal(err)
	}
	rep = b.next("the answer reply", replyTo(b.send(map[string]any{"type": "do", "session": sid,
		"command": map[string]any{"type": "answer", "approval": ap.ID, "behavior": "allow"}})))
	if rep["error"] != nil {
		t.Fatalf("answer: %s", rep["error"])
	}
	b.waitResults("the turn's result", 1)

	// Every span of the story has ended by now, or ends soon (the agent
	// ends its command span after replying): flush until all are in.
	want := []string{"serve start", "cluster start", "agent start", "session start", "cli start",
		"serve do send", "cluster command send", "agent command send", "turn", "tool", "approval",
		"serve do answer", "cluster command answer", "agent command answer"}
	var spans []otlptest.Span
	deadline := time.Now().Add(time.Minute)
	for {
		serveTP.ForceFlush(testCtx(t))
		agentTP.ForceFlush(testCtx(t))
		spans = recv.Spans()
		missing := ""
		for _, name := range want {
			if n := countNamed(spans, name); n != 1 {
				missing += " " + name
			}
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans missing or repeated:%s; got %v", missing, names(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	check := func(child, parent, service string) {
		t.Helper()
		c, p := byName[child], byName[parent]
		if c.Service != service {
			t.Errorf("%s: service %q, want %q", child, c.Service, service)
		}
		if parent == "" {
			if c.Parent != "" {
				t.Errorf("%s: parent %s, want a root", child, c.Parent)
			}
			return
		}
		if c.Parent != p.SpanID || c.TraceID != p.TraceID {
			t.Errorf("%s: parent %s in trace %s, want %s (%s in %s)", child, c.Parent, c.TraceID, parent, p.SpanID, p.TraceID)
		}
	}
	check("serve start", "", "tether-serve")
	check("cluster start", "serve start", "tether-serve")
	check("agent start", "cluster start", "tether-agent")
	check("session start", "agent start", "tether-agent")
	check("cli start", "session start", "tether-agent")
	check("serve do send", "", "tether-serve")
	check("cluster command send", "serve do send", "tether-serve")
	check("agent command send", "cluster command send", "tether-agent")
	check("turn", "agent command send", "tether-agent")
	check("tool", "turn", "tether-agent")
	check("approval", "turn", "tether-agent")
	check("serve do answer", "", "tether-serve")
	check("cluster command answer", "serve do answer", "tether-serve")
	check("agent command answer", "cluster command answer", "tether-agent")
	for name, attrs := range map[string]map[string]string{
		"serve do send":      {"tether.session.id": sid, "tether.command.type": "send"},
		"agent command send": {"tether.session.id": sid, "tether.agent.id": "a1", "messaging.system": "nats"},
		"approval":           {"tether.approval.id": ap.ID, "tether.outcome": "allow", "tether.approval.answered_by": "person"},
		"tool":               {"tether.tool.name": "Bash", "tether.outcome": "ok"},
		"turn":               {"tether.delivery.status": "answered"},
	} {
		for k, v := range attrs {
			if got := byName[name].Attrs[k]; got != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got, v)
			}
		}
	}
	// No prompt in any attribute.
	for _, s := range spans {
		for k, v := range s.Attrs {
			if strings.Contains(v, "approve") && k != "tether.command.type" {
				t.Errorf("%s: %s = %q", s.Name, k, v)
			}
		}
	}
	// The CLI's parent is the cli start span.
	cli := byName["cli start"]
	wantTP := "00-" + cli.TraceID + "-" + cli.SpanID + "-01"
	var gotTP string
	for _, kv := range fake.Launches()[0].Env {
		if v, ok := strings.CutPrefix(kv, "TRACEPARENT="); ok {
			gotTP = v
		}
	}
	if gotTP != wantTP {
		t.Errorf("the CLI's TRACEPARENT = %q, want %q", gotTP, wantTP)
	}
}

func countNamed(spans []otlptest.Span, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name == name {
			n++
		}
	}
	return n
}

func names(spans []otlptest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Service+":"+s.Name)
	}
	return out
}
