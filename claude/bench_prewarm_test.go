package claude_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// BenchmarkSessionStart measures session start, from the call to ready
// for a prompt, with the real CLI (TETHER_CLI_VERSION) against the fake
// Messages API: cold (Connect) and claimed (Spare.Claim of a CLI that
// Prewarm parked beforehand, outside the timing). It reports p50 and p99
// in milliseconds besides ns/op. Run it with a fixed count, e.g.
//
//	TETHER_CLI_VERSION=2.1.331 go test -run '^$' -bench SessionStart -benchtime 20x ./claude
func BenchmarkSessionStart(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		run := claudetest.NewRealRun(b, nil)
		o := run.Options
		o.Transport = nil // the CommandTransport, not the recorder
		benchStarts(b, func(ctx context.Context) (func() (*claude.Session, error), error) {
			return func() (*claude.Session, error) { return claude.Connect(ctx, o) }, nil
		})
	})
	b.Run("claimed", func(b *testing.B) {
		if proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) < 0 {
			b.Skipf("CLI %s cannot be prewarmed", claudetest.CLIVersion())
		}
		run := claudetest.NewRealRun(b, nil)
		o := run.Options
		o.Transport = nil
		o.Cwd = b.TempDir()
		target := b.TempDir()
		benchStarts(b, func(ctx context.Context) (func() (*claude.Session, error), error) {
			sp, err := claude.Prewarm(ctx, o)
			if err != nil {
				return nil, err
			}
			return func() (*claude.Session, error) { return sp.Claim(ctx, &claude.ClaimOptions{Cwd: target}) }, nil
		})
	})
}

// benchStarts times b.N starts; prepare runs untimed before each.
func benchStarts(b *testing.B, prepare func(ctx context.Context) (func() (*claude.Session, error), error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		start, err := prepare(ctx)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		s, err := start()
		d := time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, d)
		s.Close()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	pct := func(p float64) float64 {
		i := int(p*float64(len(took))+0.5) - 1
		i = max(0, min(i, len(took)-1))
		return float64(took[i]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
