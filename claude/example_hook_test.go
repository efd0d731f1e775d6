package claude_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// A PreToolUse hook guards the shell: it refuses commands that delete
// files, before any permission prompt, and lets the others through. Here
// the fake CLI fires the hook for two commands the model wants to run and
// reports what the hook decided.
func ExampleOptions_hooks() {
	guard := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		pre, ok := in.Event.(*claude.PreToolUseHookInput)
		if !ok {
			return nil, fmt.Errorf("unexpected %s input", in.HookEventName)
		}
		var bash struct{ Command string }
		if err := json.Unmarshal(pre.ToolInput, &bash); err != nil {
			return nil, err
		}
		if strings.HasPrefix(bash.Command, "rm ") {
			return &claude.HookOutput{Event: &claude.PreToolUseHookOutput{
				PermissionDecision:       claude.HookPermissionDecisionDeny,
				PermissionDecisionReason: "deleting files is not allowed here",
			}}, nil
		}
		return nil, nil // no opinion: the usual permission rules apply
	}
	opts := &claude.Options{
		Transport: &claudetest.FakeCLI{Script: hookingCLI},
		Hooks: map[claude.HookEvent][]claude.HookMatcher{
			claude.HookEventPreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{guard}, Timeout: 10 * time.Second}},
		},
	}
	for msg, err := range claude.Query(context.Background(), "tidy up", opts) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if m, ok := msg.(*claude.AssistantMessage); ok {
			fmt.Println(m.Text())
		}
	}
	// Output:
	// ls: no opinion
	// rm -rf build: deny (deleting files is not allowed here)
}

// hookingCLI plays a CLI whose model wants two shell commands: it calls
// the host's PreToolUse hook for each and says what the hook answered.
func hookingCLI(ctx context.Context, c *claudetest.CLI) error {
	init, err := c.HandleInitialize(ctx)
	if err != nil {
		return err
	}
	hooks, err := claudetest.Hooks(init)
	if err != nil {
		return err
	}
	id := hooks["PreToolUse"][0].HookCallbackIDs[0]
	if _, err := c.ReadUser(ctx); err != nil {
		return err
	}
	for i, cmd := range []string{"ls", "rm -rf build"} {
		toolUseID := fmt.Sprintf("toolu_%d", i)
		answer, err := c.HookCallback(ctx, id, toolUseID, c.HookInput("PreToolUse", claudetest.Msg{
			"tool_name": "Bash", "tool_input": map[string]string{"command": cmd}, "tool_use_id": toolUseID,
		}))
		if err != nil {
			return err
		}
		var out struct {
			HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string }
		}
		json.Unmarshal(answer, &out)
		verdict := "no opinion"
		if d := out.HookSpecificOutput; d.PermissionDecision != "" {
			verdict = fmt.Sprintf("%s (%s)", d.PermissionDecision, d.PermissionDecisionReason)
		}
		c.Write(c.AssistantText(cmd + ": " + verdict))
	}
	c.Write(c.ResultSuccess("done"))
	_, err = c.ReadUser(ctx)
	return ignoreEOF(err)
}
