package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
)

// pidTransport starts the real CLI and notes the pid of each start; the
// connection is returned as it is, so the session sees the real one.
type pidTransport struct {
	inner claude.CommandTransport
	mu    sync.Mutex
	pids  []int
}

func (p *pidTransport) Connect(ctx context.Context, l *claude.Launch) (claude.Conn, error) {
	c, err := p.inner.Connect(ctx, l)
	if err == nil {
		if pi, ok := c.(claude.PIDer); ok {
			p.mu.Lock()
			p.pids = append(p.pids, pi.PID())
			p.mu.Unlock()
		}
	}
	return c, err
}

func (p *pidTransport) started() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pids)
}

// TestManagerClaimsWarmSpareRealCLI: a Manager's spare serves a start
// with its own working directory and model. On a CLI that can be
// prewarmed (2.1.330 and newer) the session runs on the CLI that was
// parked before the start, in the requested folder (its CLAUDE.md reaches
// the model) with the requested model; on 2.1.197 the start is cold, as
// before.
func TestManagerClaimsWarmSpareRealCLI(t *testing.T) {
	run := claudetest.NewRealRun(t, nil)
	tr := &pidTransport{}
	tmpl := run.Options
	tmpl.Transport = tr
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "CLAUDE.md"), []byte("WARM-MARKER-4410"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := host.NewManager(&host.ManagerOptions{Session: &host.Options{CLI: tmpl}, Spares: 1})
	defer m.Close()
	for m.Spares() != 1 {
		select {
		case <-ctx.Done():
			t.Fatal("no spare")
		case <-time.After(5 * time.Millisecond):
		}
	}
	before := tr.started()
	req := *tmpl
	req.Cwd, req.Model = target, "claude-sonnet-4-5"
	s, err := m.Start(ctx, &host.Options{CLI: &req})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	warm := slices.Contains(before, s.Claude().PID())
	if canClaim := proc.CompareVersions(claudetest.CLIVersion(), claude.ClaimVersion) >= 0; warm != canClaim {
		t.Fatalf("CLI %s: session on a pre-started CLI = %v, want %v", claudetest.CLIVersion(), warm, canClaim)
	}
	if got := s.Snapshot().Cwd; got != target {
		t.Errorf("Snapshot().Cwd = %q, want %q", got, target)
	}
	d, err := s.Send(ctx, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx); err != nil {
		t.Fatalf("delivery: %v", err)
	}
	var r *claudetest.Request
	for r == nil {
		if reqs := run.API.MessagesRequests(); len(reqs) > 0 {
			r = reqs[len(reqs)-1]
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no Messages API request")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !strings.Contains(string(r.Body), "WARM-MARKER-4410") {
		t.Error("the request lacks the claimed folder's CLAUDE.md")
	}
	if r.Params.Model != "claude-sonnet-4-5" {
		t.Errorf("request model = %q, want claude-sonnet-4-5", r.Params.Model)
	}
}
