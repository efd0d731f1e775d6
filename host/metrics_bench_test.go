package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// benchDeltas is the text deltas of one benchmark turn.
const benchDeltas = 200

// benchTurns answers each prompt with a turn of benchDeltas text deltas
// and a result with per-model totals (what the metrics count).
func benchTurns(ctx context.Context, c *claudetest.CLI) error {
	bg := context.Background()
	if _, err := c.HandleInitialize(bg); err != nil {
		return err
	}
	for n := int64(1); ; n++ {
		if _, err := c.ReadUser(bg); err != nil {
			return nil
		}
		c.Write(c.SystemInit(), textStart(c))
		for range benchDeltas {
			c.Write(c.TextDelta(0, "token "))
		}
		c.Write(c.AssistantText("done"), c.ResultSuccess("done").With("modelUsage", map[string]any{
			"claude-opus-4-8": map[string]any{"inputTokens": 100 * n, "outputTokens": 200 * n, "costUSD": 0.01 * float64(n)}}))
	}
}

// BenchmarkMetricsMessagePath is the cost of metrics on the message path:
// one turn (benchDeltas + 4 messages through Session.handle) per
// iteration, with metrics off (no Registerer) and on. Compare ns/msg:
//
//	go test ./host -run '^$' -bench MetricsMessagePath -count 6 | tee m.txt   # benchstat m.txt
func BenchmarkMetricsMessagePath(b *testing.B) {
	for _, bc := range []struct {
		name string
		reg  prometheus.Registerer
	}{{"off", nil}, {"on", prometheus.NewRegistry()}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			m := host.NewManager(&host.ManagerOptions{Registerer: bc.reg})
			defer m.Close()
			s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: benchTurns}, IncludePartialMessages: true}})
			if err != nil {
				b.Fatal(err)
			}
			benchTurnLoop(b, ctx, s)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(benchDeltas+4)), "ns/msg")
		})
	}
}

// BenchmarkTelemetryStream is the cost of metrics and tracing on the
// message path, on a 100k-message stream: each iteration is one turn of
// 100,000 text deltas (and a tool call with an approval, so that every
// span kind is made) through a Manager's session, with telemetry off,
// metrics on (a registry), tracing on (a recording SDK provider, every
// span sampled) and both. Compare ns/msg:
//
//	go test ./host -run '^$' -bench TelemetryStream -benchtime 3x -count 6 | tee t.txt   # benchstat t.txt
func BenchmarkTelemetryStream(b *testing.B) {
	const deltas = 100_000
	script := func(ctx context.Context, c *claudetest.CLI) error {
		bg := context.Background()
		if _, err := c.HandleInitialize(bg); err != nil {
			return err
		}
		for n := int64(1); ; n++ {
			if _, err := c.ReadUser(bg); err != nil {
				return nil
			}
			c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "true"}))
			if _, err := c.CanUseTool(bg, "toolu_1", "Bash", map[string]string{"command": "true"}); err != nil {
				return nil
			}
			c.Write(c.ToolResult("toolu_1", "ok", false), textStart(c))
			for range deltas {
				c.Write(c.TextDelta(0, "token "))
			}
			c.Write(c.AssistantText("done"), c.ResultSuccess("done").With("modelUsage", map[string]any{
				"claude-opus-4-8": map[string]any{"inputTokens": 100 * n, "outputTokens": 200 * n, "costUSD": 0.01 * float64(n)}}))
		}
	}
	allow := func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return &claude.PermissionAllow{}, nil
	}
	for _, bc := range []struct {
		name    string
		metrics bool
		traces  bool
	}{{"off", false, false}, {"metrics", true, false}, {"traces", false, true}, {"both", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			mo := &host.ManagerOptions{}
			if bc.metrics {
				mo.Registerer = prometheus.NewRegistry()
			}
			if bc.traces {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
				defer tp.Shutdown(context.Background())
				mo.TracerProvider = tp
			}
			m := host.NewManager(mo)
			defer m.Close()
			s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: script}, IncludePartialMessages: true, CanUseTool: allow}})
			if err != nil {
				b.Fatal(err)
			}
			benchTurnLoop(b, ctx, s)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(deltas+6)), "ns/msg")
		})
	}
}

// benchTurnLoop sends a prompt and waits for its turn's result, once per
// benchmark iteration.
func benchTurnLoop(b *testing.B, ctx context.Context, s *host.Session) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d, err := s.Send(ctx, "go")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
