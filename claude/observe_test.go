package claude_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestObserveControlInStreamOrder checks that control events reach the
// observer on the receiving goroutine, between the messages they came
// between on stdout, even though the callback that serves the request
// runs at once on its own goroutine.
func TestObserveControlInStreamOrder(t *testing.T) {
	ctx := testCtx(t)
	var got []string
	answered := make(chan struct{})
	opts := &claude.Options{
		ObserveControl: func(ev *claude.ControlEvent) {
			got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Subtype))
			if ev.Subtype == "can_use_tool" {
				req, err := ev.PermissionRequest()
				if err != nil || req.ToolName != "Bash" || req.RequestID != ev.RequestID {
					t.Errorf("PermissionRequest() = %+v, %v", req, err)
				}
			}
		},
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			if req.ToolUseID == "toolu_2" {
				<-ctx.Done() // withdrawn by the CLI
				return nil, ctx.Err()
			}
			defer close(answered)
			return &claude.PermissionAllow{}, nil
		},
	}
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "ls"}))
		if _, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]string{"command": "ls"}); err != nil {
			return err
		}
		c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantToolUse("toolu_2", "Bash", map[string]string{"command": "rm x"}))
		id, _, err := c.SendRequest("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]string{"command": "rm x"}, "tool_use_id": "toolu_2"})
		if err != nil {
			return err
		}
		c.Cancel(id)
		c.Write(c.ResultInterrupted())
		_, err = c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	for m, err := range s.ReceiveTurn(ctx) {
		if m == nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%T", m))
	}
	<-answered
	want := []string{
		"*claude.InitMessage", "*claude.AssistantMessage", "control_request can_use_tool",
		"*claude.UserMessage", "*claude.AssistantMessage", "control_request can_use_tool",
		"control_cancel_request ", "*claude.ResultMessage",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestObserveControlPanicIsRecovered checks that a panicking observer costs
// the event, not the receive loop or the process: the turn still ends with
// its result and the permission request is still answered.
func TestObserveControlPanicIsRecovered(t *testing.T) {
	ctx := testCtx(t)
	opts := &claude.Options{
		ObserveControl: func(ev *claude.ControlEvent) { panic("observer bug") },
		CanUseTool: func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return &claude.PermissionAllow{}, nil
		},
	}
	s := connect(t, opts, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "Bash", map[string]string{"command": "ls"}))
		if _, err := c.CanUseTool(ctx, "toolu_1", "Bash", map[string]string{"command": "ls"}); err != nil {
			return err
		}
		c.Write(c.ToolResult("toolu_1", "ok", false), c.ResultSuccess("done"))
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	var last claude.Message
	for m, err := range s.ReceiveTurn(ctx) {
		if m == nil {
			t.Fatal(err)
		}
		last = m
	}
	if _, ok := last.(*claude.ResultMessage); !ok {
		t.Fatalf("turn ended with %T, want *claude.ResultMessage", last)
	}
}
