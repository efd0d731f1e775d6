package claude_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A permission callback that waits (for a person) runs on the goroutine
// that read its request; reading must move on without it: the messages
// and the second request behind it are delivered and answered while it
// waits, and its own answer still goes out when it returns.
func TestSlowCallbackDoesNotHoldUpReading(t *testing.T) {
	release := make(chan struct{})
	secondAnswered := make(chan struct{})
	o := &claude.Options{
		CanUseTool: func(ctx context.Context, r *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			if r.ToolUseID == "toolu_slow" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return &claude.PermissionAllow{}, nil
		},
		Transport: &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
			if _, err := c.HandleInitialize(ctx); err != nil {
				return err
			}
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			slowID, slow, err := c.SendRequest("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_slow"})
			if err != nil {
				return err
			}
			if err := c.Write(c.AssistantText("while you decide")); err != nil {
				return err
			}
			if _, err := c.Request(ctx, "can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "pwd"}, "tool_use_id": "toolu_fast"}); err != nil {
				return err
			}
			close(secondAnswered)
			if _, err := c.AwaitResponse(ctx, slowID, "can_use_tool", slow); err != nil {
				return err
			}
			if err := c.Write(c.ResultSuccess("done")); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		}},
	}
	ctx := testCtx(t)
	s, err := claude.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	var sawText bool
	for m, err := range s.ReceiveTurn(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := m.(*claude.AssistantMessage); ok && a.Text() == "while you decide" {
			sawText = true
			// The first request is still waiting: the second one is
			// answered all the same.
			select {
			case <-secondAnswered:
			case <-ctx.Done():
				t.Fatal("the second request was not answered while the first waited")
			}
			close(release)
		}
	}
	if !sawText {
		t.Fatal("the message behind the waiting request never arrived")
	}
}
