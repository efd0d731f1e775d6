package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// TestApprovalReleasedByModeChange: an approval is pending; a set_mode
// command makes the CLI answer with the mode in effect (which the session
// records, not the mode asked for) and withdraw the ask the new mode
// allows, as CLI 2.1.332 is said to. The approval is shown withdrawn,
// not left pending, and a late answer is refused.
func TestApprovalReleasedByModeChange(t *testing.T) {
	ctx := testCtx(t)
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		input := map[string]string{"file_path": "/tmp/x", "content": "x"}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Write", input))
		id, _, err := c.SendRequest("can_use_tool", map[string]any{"tool_name": "Write", "input": input, "tool_use_id": "toolu_1"})
		if err != nil {
			return err
		}
		ml, err := c.Expect(ctx, "control_request", "set_permission_mode")
		if err != nil {
			return err
		}
		// The mode in effect differs from the one asked for.
		if err := c.Respond(ml.RequestID, map[string]string{"mode": "acceptEdits"}); err != nil {
			return err
		}
		c.Cancel(id)
		c.Write(c.ToolResult("toolu_1", "File created", false), c.AssistantText("done"), c.ResultSuccess("done"))
		_, err = c.ReadUser(ctx)
		return err
	})
	s.Send(ctx, "write it")
	a := l.waitState(t, ctx, host.StateAwaitingApproval).Approval
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandSetMode, Mode: "plan"}); err != nil {
		t.Fatal(err)
	}
	l.waitState(t, ctx, host.StateIdle)
	if err := a.Allow(); !errors.Is(err, host.ErrWithdrawn) {
		t.Errorf("answer after the mode change released it: %v, want ErrWithdrawn", err)
	}
	if n := len(s.Approvals()); n != 0 {
		t.Errorf("%d approvals still pending after the release", n)
	}
	if snap := s.Snapshot(); snap.PermissionMode != "acceptEdits" || len(snap.Approvals) != 0 {
		t.Errorf("snapshot: mode %q, approvals %v; want the mode in effect and none pending", snap.PermissionMode, snap.Approvals)
	}
}
