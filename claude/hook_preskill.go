package claude

import "encoding/json"

// The PreSkillShellCommand hook event (SDK 0.3.332, CLI 2.1.332): its
// input is generated (hook_input_gen.go); its output is written by hand,
// as every hook output is.

// HookEventPreSkillShellCommand fires before a shell command written in
// a skill's or a slash command's text (a !`…` line) runs as the skill
// loads. CLI 2.1.332 and later; older CLIs accept a hook for it and never
// call it.
const HookEventPreSkillShellCommand HookEvent = "PreSkillShellCommand"

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

func (*PreSkillShellCommandHookOutput) HookEvent() HookEvent { return HookEventPreSkillShellCommand }

func (o *PreSkillShellCommandHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName            HookEvent              `json:"hookEventName"`
		PermissionDecision       HookPermissionDecision `json:"permissionDecision,omitempty"`
		PermissionDecisionReason string                 `json:"permissionDecisionReason,omitempty"`
		UpdatedInput             json.RawMessage        `json:"updatedInput,omitempty"`
	}{HookEventPreSkillShellCommand, o.PermissionDecision, o.PermissionDecisionReason, o.UpdatedInput}
}
