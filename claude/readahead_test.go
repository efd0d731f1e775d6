package claude_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// The read loop stays a short way (128 KiB) ahead of Receive while Receive
// keeps up, but that is no bound of its own: with nobody receiving, a
// permission request behind 600 KiB of messages (past the read-ahead,
// within MaxBufferedBytes, 1 MiB by default) is still read and answered,
// and every message is there, in order, when Receive comes.
func TestReadAheadGivesWay(t *testing.T) {
	const lines = 600 // of about 1 KiB each
	asked := make(chan struct{})
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		for i := range lines {
			if err := c.Write(c.AssistantText(fmt.Sprintf("line %d %s", i, strings.Repeat("x", 900)))); err != nil {
				return err
			}
		}
		if _, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]string{"command": "ls"}); err != nil {
			return err
		}
		return c.Write(c.ResultSuccess("done"))
	}}
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, &claude.Options{
		Transport: fake,
		CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			close(asked)
			return &claude.PermissionAllow{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "flood"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the permission request behind the unreceived messages was never answered")
	}
	n := 0
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok {
			if want := fmt.Sprintf("line %d ", n); !strings.HasPrefix(a.Text(), want) {
				t.Fatalf("message %d = %.20q, want %q…", n, a.Text(), want)
			}
			n++
		}
	}
	if n != lines {
		t.Errorf("received %d of %d lines", n, lines)
	}
}
