package host_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/telemetry"
)

// meteredTurns plays turns that each ask permission for a Bash call and
// end with a result whose per-model totals grow by the given steps (the
// CLI's modelUsage is the process's running total).
func meteredTurns(steps ...claude.ModelUsage) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		var total claude.ModelUsage
		for i, st := range steps {
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			id := fmt.Sprint("toolu_", i)
			c.Write(c.SystemInit(), c.AssistantToolUse(id, "Bash", map[string]string{"command": "ls"}))
			if _, err := c.CanUseTool(ctx, id, "Bash", map[string]string{"command": "ls"}); err != nil {
				return err
			}
			total.InputTokens += st.InputTokens
			total.OutputTokens += st.OutputTokens
			total.CacheCreationInputTokens += st.CacheCreationInputTokens
			total.CacheReadInputTokens += st.CacheReadInputTokens
			total.CostUSD += st.CostUSD
			c.Write(c.ToolResult(id, "ok", false), c.AssistantText("done"), c.ResultSuccess("done").
				With("total_cost_usd", total.CostUSD).
				With("modelUsage", map[string]any{"claude-opus-4-8[1m]": map[string]any{
					"inputTokens": total.InputTokens, "outputTokens": total.OutputTokens,
					"cacheCreationInputTokens": total.CacheCreationInputTokens,
					"cacheReadInputTokens":     total.CacheReadInputTokens, "costUSD": total.CostUSD}}))
		}
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	}
}

func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := telemetry.Value(g, name, labels)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

// TestManagerMetrics drives two turns, each with an approval answered,
// through a Manager with a registry, and reads what the metrics say:
// CLI starts and exits, sessions by state, pending approvals while one
// waits, approval waits by who answered, turn times, and the tokens and
// cost of each result's delta, by model without its "[1m]" suffix.
func TestManagerMetrics(t *testing.T) {
	ctx := testCtx(t)
	reg := prometheus.NewRegistry()
	script := meteredTurns(
		claude.ModelUsage{InputTokens: 1200, OutputTokens: 50, CacheCreationInputTokens: 7, CacheReadInputTokens: 300, CostUSD: 0.25},
		claude.ModelUsage{InputTokens: 34, OutputTokens: 6, CacheReadInputTokens: 1500, CostUSD: 0.125},
	)
	m := host.NewManager(&host.ManagerOptions{Registerer: reg})
	defer m.Close()
	s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: script}}})
	if err != nil {
		t.Fatal(err)
	}
	l := watchStates(ctx, s)
	if got := value(t, reg, "tether_cli_starts_total", nil); got != 1 {
		t.Errorf("starts = %v, want 1", got)
	}
	if got := value(t, reg, "tether_sessions", map[string]string{"state": "ready"}); got != 1 {
		t.Errorf("sessions{ready} = %v, want 1", got)
	}
	for turn := range 2 {
		d, err := s.Send(ctx, "list")
		if err != nil {
			t.Fatal(err)
		}
		a := l.waitFor(t, ctx, "approval", func(v host.Liveness) bool {
			return v.State == host.StateAwaitingApproval && v.Approval != nil && v.Approval.Request.ToolUseID == fmt.Sprint("toolu_", turn)
		}).Approval
		if got := value(t, reg, "tether_pending_approvals", map[string]string{"kind": "tool"}); got != 1 {
			t.Errorf("pending tool approvals = %v, want 1", got)
		}
		if got := value(t, reg, "tether_sessions", map[string]string{"state": "awaiting_approval"}); got != 1 {
			t.Errorf("sessions{awaiting_approval} = %v, want 1", got)
		}
		if err := a.Allow(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	l.waitState(t, ctx, host.StateIdle)
	want := map[string]float64{"input": 1234, "output": 56, "cache_creation": 7, "cache_read": 1800}
	for kind, n := range want {
		if got := value(t, reg, "tether_tokens_total", map[string]string{"model": "claude-opus-4-8", "kind": kind}); got != n {
			t.Errorf("tokens{%s} = %v, want %v", kind, got, n)
		}
	}
	if got := value(t, reg, "tether_cost_usd_total", map[string]string{"model": "claude-opus-4-8"}); got != 0.375 {
		t.Errorf("cost = %v, want 0.375", got)
	}
	if got := value(t, reg, "tether_approval_wait_seconds", map[string]string{"answered_by": "person"}); got != 2 {
		t.Errorf("approval waits answered by a person = %v, want 2", got)
	}
	if got := value(t, reg, "tether_approval_wait_seconds", map[string]string{"answered_by": "withdrawn"}); got != 0 {
		t.Errorf("approval waits withdrawn = %v, want 0", got)
	}
	if got := value(t, reg, "tether_turn_duration_seconds", nil); got != 2 {
		t.Errorf("turns = %v, want 2", got)
	}
	if got := value(t, reg, "tether_pending_approvals", map[string]string{"kind": "tool"}); got != 0 {
		t.Errorf("pending tool approvals after the turns = %v, want 0", got)
	}
	if got := value(t, reg, "tether_sessions", map[string]string{"state": "idle"}); got != 1 {
		t.Errorf("sessions{idle} = %v, want 1", got)
	}
	s.Close()
	if got := value(t, reg, "tether_cli_exits_total", map[string]string{"reason": "closed"}); got != 1 {
		t.Errorf("exits{closed} = %v, want 1", got)
	}
	if got := value(t, reg, "tether_cli_exits_total", map[string]string{"reason": "crashed"}); got != 0 {
		t.Errorf("exits{crashed} = %v, want 0", got)
	}
}

// TestManagerMetricsStartFailureAndCrash counts a CLI that cannot start
// and one that dies.
func TestManagerMetricsStartFailureAndCrash(t *testing.T) {
	ctx := testCtx(t)
	reg := prometheus.NewRegistry()
	m := host.NewManager(&host.ManagerOptions{Registerer: reg})
	defer m.Close()
	_, err := m.Start(ctx, &host.Options{CLI: &claude.Options{CLIPath: filepath.Join(t.TempDir(), "no-such-cli")}})
	if err == nil {
		t.Fatal("a missing CLI started")
	}
	if got := value(t, reg, "tether_cli_start_failures_total", nil); got != 1 {
		t.Errorf("start failures = %v, want 1", got)
	}
	s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		c.ReadUser(ctx)
		return fmt.Errorf("crash")
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, "die"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the session did not end")
	}
	if got := value(t, reg, "tether_cli_exits_total", map[string]string{"reason": "crashed"}); got != 1 {
		t.Errorf("exits{crashed} = %v, want 1", got)
	}
}

// TestMetricsLabelsBounded runs 50 sessions with distinct ids and working
// directories: the number of series must not grow with them (no session
// id, no path in a label).
func TestMetricsLabelsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	m := host.NewManager(&host.ManagerOptions{Registerer: reg})
	defer m.Close()
	fake := &claudetest.FakeCLI{Script: meteredTurns(claude.ModelUsage{InputTokens: 3, OutputTokens: 2, CostUSD: 0.001})}
	run := func(i int) {
		t.Helper()
		s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: fake, Cwd: filepath.Join(t.TempDir(), fmt.Sprint("dir", i))}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Send(ctx, "list")
		if err != nil {
			t.Fatal(err)
		}
		for {
			if as := s.Approvals(); len(as) > 0 {
				as[0].Allow()
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("no approval")
			case <-time.After(time.Millisecond):
			}
		}
		if _, err := d.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	run(0)
	first := telemetry.Series(reg)
	for i := 1; i < 50; i++ {
		run(i)
	}
	if n := telemetry.Series(reg); n != first || n == 0 {
		t.Errorf("series after 1 session: %d, after 50: %d", first, n)
	}
	if got := value(t, reg, "tether_cli_starts_total", nil); got != 50 {
		t.Errorf("starts = %v, want 50", got)
	}
}

// TestManagerWithoutRegistererHasNoMetrics: nil means off; a session
// runs as before.
func TestManagerWithoutRegisterer(t *testing.T) {
	ctx := testCtx(t)
	m := host.NewManager(nil)
	defer m.Close()
	s, err := m.Start(ctx, &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Send(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
