package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// VerbatimPrompts marks every user message client_composed, as the
// TypeScript SDK does; without it no message carries the member.
func TestVerbatimPrompts(t *testing.T) {
	for _, verbatim := range []bool{true, false} {
		lines := make(chan json.RawMessage, 2)
		fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			for range 2 {
				l, err := c.ReadUser(ctx)
				if err != nil {
					return err
				}
				lines <- l.Raw
			}
			return nil
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := claude.Connect(ctx, &claude.Options{Transport: fake, VerbatimPrompts: verbatim})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(ctx, "@secrets.txt /clear"); err != nil {
			t.Fatal(err)
		}
		m := claude.NewUserMessage("second")
		m.UUID = "11111111-2222-4333-8444-555555555555"
		if err := s.SendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			var got struct {
				Type           string
				ClientComposed *bool `json:"client_composed"`
				UUID           string
				Message        struct{ Role string }
			}
			raw := <-lines
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("line %s: %v", raw, err)
			}
			if got.Type != "user" || got.Message.Role != "user" || (i == 1 && got.UUID != m.UUID) {
				t.Errorf("verbatim %v: line %d lost members: %s", verbatim, i, raw)
			}
			if verbatim != (got.ClientComposed != nil && *got.ClientComposed) {
				t.Errorf("verbatim %v: line %d = %s", verbatim, i, raw)
			}
		}
		s.Close()
		cancel()
	}
}

// A batch file CLI is a *BatchFileError, whether Options.CLIPath or
// $TETHER_CLI_PATH names it (discovery refusing npm's claude.cmd shim on
// Windows is tested in internal/proc).
func TestBatchFileCLIRefused(t *testing.T) {
	for _, o := range []*claude.Options{{CLIPath: `C:\npm\claude.cmd`}, {CLIPath: "/x/CLAUDE.BAT"}} {
		o.Transport = &claudetest.FakeCLI{Script: claudetest.Echo}
		_, err := claude.Connect(context.Background(), o)
		var be *claude.BatchFileError
		if !errors.As(err, &be) || be.Path != o.CLIPath || be.Found {
			t.Errorf("CLIPath %s: err = %v, want a *BatchFileError", o.CLIPath, err)
		}
	}
	dir := t.TempDir()
	shim := filepath.Join(dir, "claude.cmd")
	if err := os.WriteFile(shim, []byte("@echo off\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(claude.EnvCLIPath, shim)
	_, err := claude.Connect(context.Background(), &claude.Options{})
	var be *claude.BatchFileError
	if !errors.As(err, &be) || be.Path != shim || errors.Is(err, claude.ErrCLINotFound) || !strings.Contains(err.Error(), "claude.exe") {
		t.Errorf("$%s = %s: err = %v, want a *BatchFileError", claude.EnvCLIPath, shim, err)
	}
}
