package claude

import (
	"encoding/json"
	"fmt"
)

// HookInput is what a hook is called with: the fields every event
// carries, the event's own fields in Event, and the input as the CLI sent
// it in Raw.
type HookInput struct {
	HookEventName  HookEvent
	SessionID      string
	TranscriptPath string // the session's transcript file (JSON lines)
	Cwd            string
	PermissionMode PermissionMode
	// PromptID ties together everything that follows one user prompt;
	// empty before the first prompt.
	PromptID string
	// AgentID is set when the hook fires inside a subagent; AgentType
	// names the subagent's (or the session's --agent) type.
	AgentID   string
	AgentType string
	// Effort is the reasoning effort of the turn ("high" …), when the
	// model supports effort and the event happens inside a turn.
	Effort string
	// ToolUseID is the tool call the hook is about, for tool events. For
	// other events the CLI may send an id of its own.
	ToolUseID string

	// Event holds the fields of the event, one of
	//
	//   - tool use: *PreToolUseHookInput, *PostToolUseHookInput,
	//     *PostToolUseFailureHookInput, *PostToolBatchHookInput,
	//     *PermissionRequestHookInput, *PermissionDeniedHookInput
	//   - prompts and turns: *UserPromptSubmitHookInput,
	//     *UserPromptExpansionHookInput, *StopHookInput,
	//     *StopFailureHookInput, *NotificationHookInput,
	//     *MessageDisplayHookInput
	//   - sessions: *SessionStartHookInput, *SessionEndHookInput,
	//     *SetupHookInput, *PreCompactHookInput, *PostCompactHookInput,
	//     *ConfigChangeHookInput, *InstructionsLoadedHookInput,
	//     *CwdChangedHookInput, *FileChangedHookInput,
	//     *PreModelSwitchHookInput, *PostModelSwitchHookInput,
	//     *DirectoryAddedHookInput
	//   - subagents and tasks: *SubagentStartHookInput,
	//     *SubagentStopHookInput, *TaskCreatedHookInput,
	//     *TaskCompletedHookInput, *TeammateIdleHookInput
	//   - *ElicitationHookInput, *ElicitationResultHookInput,
	//     *WorktreeCreateHookInput, *WorktreeRemoveHookInput
	//   - *PreSkillShellCommandHookInput (hook_preskill.go)
	//
	// It is nil for an event this version of Tether does not know, and
	// when a newer CLI changed the type of one of the event's fields (the
	// session's Logger says which): read Raw then. A hook that guards
	// something should refuse when Event is not what it expects.
	Event HookEventInput

	// Raw is the input object as the CLI sent it, fields Tether does not
	// model included.
	Raw json.RawMessage

	typeErr error // why Event is nil for a known event
}

// HookEventInput is the event-specific part of a HookInput; see
// HookInput.Event for its variants.
type HookEventInput interface {
	// HookEvent returns the event the input belongs to.
	HookEvent() HookEvent
	isHookEventInput()
}

// The variants, their HookEvent methods and the table decodeHookInput
// looks events up in are generated (hook_input_gen.go) from the
// TypeScript SDK's sdk.d.ts by internal/sdkgen; this file holds what is
// common to all events and the decoding, which keeps the input raw in
// HookInput.Raw and leaves Event nil for an event it does not know or a
// field whose JSON type changed.

// wireHookInput is what every event's input carries.
type wireHookInput struct {
	HookEventName  HookEvent      `json:"hook_event_name"`
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	PromptID       string         `json:"prompt_id"`
	PermissionMode PermissionMode `json:"permission_mode"`
	AgentID        string         `json:"agent_id"`
	AgentType      string         `json:"agent_type"`
	Effort         *struct {
		Level string `json:"level"`
	} `json:"effort"`
}

// decodeHookInput decodes a hook_callback's input. toolUseID is the
// request's own tool_use_id.
func decodeHookInput(raw json.RawMessage, toolUseID string) (*HookInput, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("decoding hook input: not a JSON object: %.40s", raw)
	}
	var w wireHookInput
	if err := unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decoding hook input: %w", err)
	}
	in := &HookInput{
		HookEventName: w.HookEventName, SessionID: w.SessionID, TranscriptPath: w.TranscriptPath,
		Cwd: w.Cwd, PermissionMode: w.PermissionMode, PromptID: w.PromptID,
		AgentID: w.AgentID, AgentType: w.AgentType, ToolUseID: toolUseID, Raw: raw,
	}
	if w.Effort != nil {
		in.Effort = w.Effort.Level
	}
	mk, ok := hookInputs[w.HookEventName]
	if !ok {
		return in, nil
	}
	ev := mk()
	if err := unmarshal(raw, ev); err != nil {
		if !isTypeError(err) {
			return nil, fmt.Errorf("decoding %s hook input: %w", w.HookEventName, err)
		}
		in.typeErr = err
		return in, nil
	}
	in.Event = ev
	return in, nil
}
