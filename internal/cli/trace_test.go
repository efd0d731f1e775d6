package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tetherhq/tether/internal/natstest"
	"github.com/tetherhq/tether/internal/telemetry/otlptest"
	"github.com/tetherhq/tether/serve/servetest"
)

// startTether runs Main with args until ctx ends, and returns the first
// stdout line that satisfies ok and the exit code's channel.
func startTether(t *testing.T, ctx context.Context, ok func(string) bool, args ...string) (string, <-chan int) {
	t.Helper()
	done := make(chan int, 1)
	out, outW := io.Pipe()
	go func() {
		defer outW.Close()
		done <- Main(ctx, args, strings.NewReader(""), outW, io.Discard)
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if ok(sc.Text()) {
			go io.Copy(io.Discard, out)
			return sc.Text(), done
		}
	}
	t.Fatalf("tether %s: no line expected", args[0])
	return "", nil
}

// serveLogin starts `tether serve` and returns its base URL and token.
func serveLogin(t *testing.T, ctx context.Context, args ...string) (base, token string, done <-chan int) {
	t.Helper()
	line, done := startTether(t, ctx, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "open ") }, args...)
	base, token, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "open "), "/#token=")
	if !ok {
		t.Fatalf("no login URL: %q", line)
	}
	return base, token, done
}

// wsRequest sends one request over the serve protocol and returns its
// reply frame.
func wsRequest(t *testing.T, ctx context.Context, base, token string, req map[string]any) *servetest.Frame {
	t.Helper()
	c, err := servetest.Dial(ctx, base, &servetest.DialOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, err := c.Call(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// `tether serve --nats` and `tether agent` export their spans where
// OTEL_EXPORTER_OTLP_ENDPOINT says, each under its service name, flushed
// at exit; a start request is one trace from serve through NATS to the
// agent (whose CLI, /bin/false, fails to start: the spans say so).
func TestServeAndAgentExportTraces(t *testing.T) {
	otlptest.ClearOTEL(t)
	recv := otlptest.NewReceiver()
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.Endpoint())
	ns := natstest.Start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	_, agentDone := startTether(t, actx, func(l string) bool { return strings.Contains(l, "tether agent tr-agent") },
		"agent", "--nats", ns.ClientURL(), "--id", "tr-agent", "--cli", "/bin/false", "--heartbeat", "300ms")
	sctx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	base, token, serveDone := serveLogin(t, sctx, "serve", "--nats", ns.ClientURL(), "--addr", "127.0.0.1:0")

	rep := wsRequest(t, ctx, base, token, map[string]any{"type": "start"})
	if rep.Error == nil {
		t.Fatalf("start with /bin/false as the CLI: %s", rep.Result)
	}
	stopServe()
	stopAgent()
	if code := <-serveDone; code != 0 {
		t.Errorf("serve exited %d", code)
	}
	if code := <-agentDone; code != 0 {
		t.Errorf("agent exited %d", code)
	}
	// Both flushed at exit: every span is in.
	byName := map[string]otlptest.Span{}
	for _, s := range recv.Spans() {
		byName[s.Name] = s
	}
	for _, c := range []struct{ name, parent, service string }{
		{"serve start", "", "tether-serve"},
		{"cluster start", "serve start", "tether-serve"},
		{"agent start", "cluster start", "tether-agent"},
		{"session start", "agent start", "tether-agent"},
		{"cli start", "session start", "tether-agent"},
	} {
		s, ok := byName[c.name]
		if !ok {
			t.Errorf("no span %q among %d", c.name, len(byName))
			continue
		}
		if s.Service != c.service {
			t.Errorf("%s: service.name %q, want %q", c.name, s.Service, c.service)
		}
		if p := byName[c.parent]; c.parent != "" && (s.Parent != p.SpanID || s.TraceID != p.TraceID) {
			t.Errorf("%s: parent %s, want %s's %s", c.name, s.Parent, c.parent, p.SpanID)
		}
		if !s.Error {
			t.Errorf("%s: not marked failed", c.name)
		}
	}
}

const envTraceChild = "TETHER_TEST_TRACE_CHILD"

// With no OTEL_ variable, `tether serve` exports nothing and leaves the
// global tracer provider a no-op. It runs in a process of its own
// (TestTracingOffChild), where no other test set the global provider.
func TestTracingOffWithoutOTELEnv(t *testing.T) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTracingOffChild$", "-test.count=1", "-test.v")
	cmd.Env = append(env, envTraceChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestTracingOffChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func TestTracingOffChild(t *testing.T) {
	if os.Getenv(envTraceChild) == "" {
		return // run by TestTracingOffWithoutOTELEnv
	}
	// The exporter's default endpoint: nothing may connect to it.
	var conns atomic.Int32
	if ln, err := net.Listen("tcp", "127.0.0.1:4318"); err == nil {
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				c.Close()
			}
		}()
	} else {
		t.Logf("4318 taken (%v): checking the provider only", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	base, token, done := serveLogin(t, sctx, "serve", "--cli", "/bin/true", "--addr", "127.0.0.1:0")
	rep := wsRequest(t, ctx, base, token, map[string]any{"type": "do", "session": "nope", "command": map[string]any{"type": "send", "text": "hi"}})
	if rep.Error == nil {
		t.Errorf("do on no session: %s", rep.Result)
	}
	if _, sdk := otel.GetTracerProvider().(*sdktrace.TracerProvider); sdk {
		t.Error("the global tracer provider is the SDK's")
	}
	if _, span := otel.Tracer("test").Start(ctx, "probe"); span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("the global tracer records")
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("serve exited %d", code)
	}
	if n := conns.Load(); n > 0 {
		t.Errorf("%d connections to the default OTLP endpoint", n)
	}
}
