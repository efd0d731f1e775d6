package claude_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The same session code over a real subprocess: pipes, exit codes, stderr.
func TestSubprocessTurn(t *testing.T) {
	ctx := testCtx(t)
	var mu sync.Mutex
	var stderr []string
	o := claudetest.ExecOptions("stderr-chatter")
	o.Stderr = func(line string) { mu.Lock(); stderr = append(stderr, line); mu.Unlock() }
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.PID() <= 0 {
		t.Errorf("PID = %d", s.PID())
	}
	for range 3 {
		if err := s.Send(ctx, "ping"); err != nil {
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
		if text != "echo: ping" {
			t.Errorf("text = %q", text)
		}
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after a clean exit = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stderr) == 0 || stderr[0] != "warning: settings ignored" {
		t.Errorf("stderr lines = %q", stderr)
	}
}

func TestSubprocessCrashMidTurn(t *testing.T) {
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, claudetest.ExecOptions("crash-after-init"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	msgs, errs := collect(t, s.ReceiveTurn(ctx))
	var pe *claude.ProcessError
	if len(msgs) != 1 || len(errs) != 1 || !errors.As(errs[0], &pe) {
		t.Fatalf("turn = %v, %v; want init then a *ProcessError", types(msgs), errs)
	}
	if pe.ExitCode != 3 || !strings.Contains(strings.Join(pe.Stderr, "\n"), "out of cheese") {
		t.Errorf("ProcessError = %+v", pe)
	}
	if err := s.Interrupt(ctx); !errors.As(err, &pe) {
		t.Errorf("Interrupt after the crash = %v", err)
	}
}

func TestSubprocessExitsAtStart(t *testing.T) {
	ctx := testCtx(t)
	_, err := claude.Connect(ctx, claudetest.ExecOptions("bad-flag"))
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || pe.ExitCode != 1 || !strings.Contains(strings.Join(pe.Stderr, "\n"), "unknown option") {
		t.Fatalf("Connect = %v, want a *ProcessError with the CLI's stderr", err)
	}
}

func TestVersionCheck(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "claude")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho '1.0.3 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	_, err := claude.Connect(ctx, &claude.Options{CLIPath: old})
	var ve *claude.CLIVersionError
	if !errors.As(err, &ve) || ve.Version != "1.0.3" || ve.Minimum != claude.MinCLIVersion {
		t.Fatalf("Connect with an old CLI = %v, want a *CLIVersionError", err)
	}
	_, err = claude.Connect(ctx, &claude.Options{CLIPath: old, SkipVersionCheck: true})
	if errors.As(err, &ve) {
		t.Fatalf("SkipVersionCheck did not skip: %v", err)
	}
	var pe *claude.ProcessError
	if !errors.As(err, &pe) {
		t.Errorf("the script is no CLI, so Connect should fail with a *ProcessError, got %v", err)
	}
}
