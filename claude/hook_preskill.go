package claude

import "encoding/json"

// This file holds the PreSkillShellCommand hook event (SDK 0.3.332, CLI
// 2.1.332), written by hand apart from the other events so that a
// generated file can take its place whole.

// HookEventPreSkillShellCommand fires before a shell command written in
// a skill's or a slash command's text (a !`…` line) runs as the skill
// loads. CLI 2.1.332 and later; older CLIs accept a hook for it and never
// call it.
const HookEventPreSkillShellCommand HookEvent = "PreSkillShellCommand"

// PreSkillShellCommandHookInput: a shell command in a skill's or
// command's text is about to run. The hook may let it run or keep it from
// running (PreSkillShellCommandHookOutput).
type PreSkillShellCommandHookInput struct {
	// ToolName is the shell tool that runs the command: Bash or
	// PowerShell.
	ToolName  string                     `json:"tool_name"`
	ToolInput SkillShellCommandToolInput `json:"tool_input"`
	// ToolUseID identifies this command; it names no tool call in the
	// transcript.
	ToolUseID string `json:"tool_use_id"`
	// CommandName is the skill or command whose text holds the shell
	// command, and CommandSource where it comes from (projectSettings,
	// userSettings, plugin, …), when the CLI says.
	CommandName   string `json:"command_name"`
	CommandSource string `json:"command_source,omitempty"`
	// InvokedBy says who started the load: "user" (typed, or sent by a
	// host as a prompt), "claude" (the Skill tool, or a turn the model
	// scheduled) or "other" (a subagent's preload, a channel message, or
	// not known).
	InvokedBy string `json:"invoked_by"`
}

// SkillShellCommandToolInput is the tool_input of a
// PreSkillShellCommandHookInput.
type SkillShellCommandToolInput struct {
	// Command is the command as it would run, arguments filled in.
	Command string `json:"command"`
}

// PreSkillShellCommandHookOutput decides whether a skill's shell command
// runs.
type PreSkillShellCommandHookOutput struct {
	// PermissionDecision: HookPermissionDecisionAllow adds nothing (the
	// command runs unless another hook refuses it); deny, ask and defer
	// all keep it from running.
	PermissionDecision       HookPermissionDecision
	PermissionDecisionReason string
	// UpdatedInput is never applied by the CLI: any value keeps the
	// command from running, as a denial does. It is here because the SDK
	// declares it; leave it nil unless blocking is what you mean.
	UpdatedInput json.RawMessage
}

func (*PreSkillShellCommandHookInput) HookEvent() HookEvent  { return HookEventPreSkillShellCommand }
func (*PreSkillShellCommandHookInput) isHookEventInput()     {}
func (*PreSkillShellCommandHookOutput) HookEvent() HookEvent { return HookEventPreSkillShellCommand }

func (o *PreSkillShellCommandHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName            HookEvent              `json:"hookEventName"`
		PermissionDecision       HookPermissionDecision `json:"permissionDecision,omitempty"`
		PermissionDecisionReason string                 `json:"permissionDecisionReason,omitempty"`
		UpdatedInput             json.RawMessage        `json:"updatedInput,omitempty"`
	}{HookEventPreSkillShellCommand, o.PermissionDecision, o.PermissionDecisionReason, o.UpdatedInput}
}

func init() {
	hookInputs[HookEventPreSkillShellCommand] = func() HookEventInput { return new(PreSkillShellCommandHookInput) }
}
