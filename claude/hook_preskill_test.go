package claude_test

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestPreSkillShellCommandHook: the input decodes typed (the command
// inside tool_input, the skill, who loaded it), and the output goes out
// with its event's name and only the fields set.
func TestPreSkillShellCommandHook(t *testing.T) {
	got := make(chan *claude.PreSkillShellCommandHookInput, 1)
	opts := hooksFor(claude.HookEventPreSkillShellCommand, func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		e, _ := in.Event.(*claude.PreSkillShellCommandHookInput)
		got <- e
		return &claude.HookOutput{Event: &claude.PreSkillShellCommandHookOutput{
			PermissionDecision: claude.HookPermissionDecisionDeny, PermissionDecisionReason: "no shell"}}, nil
	})
	answers := callHooks(t, opts, eventCall("hook_0", "PreSkillShellCommand", claudetest.Msg{
		"tool_name": "Bash", "tool_input": map[string]string{"command": "git log -1"}, "tool_use_id": "skill-cmd-1",
		"command_name": "release-notes", "command_source": "projectSettings", "invoked_by": "claude",
	}))
	if answers[0].err != nil {
		t.Fatal(answers[0].err)
	}
	jsonEqual(t, "the hook's answer", answers[0].raw,
		`{"hookSpecificOutput":{"hookEventName":"PreSkillShellCommand","permissionDecision":"deny","permissionDecisionReason":"no shell"}}`)
	e := <-got
	if e == nil || e.ToolName != "Bash" || e.ToolInput.Command != "git log -1" || e.ToolUseID != "skill-cmd-1" ||
		e.CommandName != "release-notes" || e.CommandSource != "projectSettings" || e.InvokedBy != "claude" {
		t.Errorf("input = %+v", e)
	}
	if e != nil && e.HookEvent() != claude.HookEventPreSkillShellCommand {
		t.Errorf("HookEvent() = %s", e.HookEvent())
	}
}
