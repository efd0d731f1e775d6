package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// HookOutput is a hook's answer. The zero value (like a nil *HookOutput)
// changes nothing.
type HookOutput struct {
	// Stop ends the turn once the hooks have run ("continue": false):
	// the model is not asked again and the result's TerminalReason is
	// hook_stopped. StopReason is meant for the user, not the model; in
	// stream-json mode the CLI (2.1.197, 2.1.330) does not echo it.
	Stop       bool
	StopReason string
	// SuppressOutput hides the hook's output from the transcript.
	SuppressOutput bool
	// SystemMessage is a warning for the user (the CLI's interface; in
	// stream-json mode 2.1.197 and 2.1.330 write it nowhere).
	SystemMessage string

	// Decision "block" refuses what the event is about, with Reason
	// telling the model why: Stop and SubagentStop go on instead of
	// ending, UserPromptSubmit drops the prompt, PostToolUse feeds Reason
	// back to the model. For tools, PreToolUseHookOutput's
	// PermissionDecision is the finer-grained way.
	Decision HookDecision
	Reason   string

	// Event is the event-specific output ("hookSpecificOutput"). It must
	// belong to the event the hook was called for:
	//
	//   - *PreToolUseHookOutput, *PostToolUseHookOutput,
	//     *PostToolUseFailureHookOutput, *PostToolBatchHookOutput,
	//     *PermissionRequestHookOutput, *PermissionDeniedHookOutput
	//   - *UserPromptSubmitHookOutput, *UserPromptExpansionHookOutput,
	//     *StopHookOutput, *NotificationHookOutput,
	//     *MessageDisplayHookOutput
	//   - *SessionStartHookOutput, *SetupHookOutput,
	//     *CwdChangedHookOutput, *FileChangedHookOutput,
	//     *PreModelSwitchHookOutput, *PostModelSwitchHookOutput
	//   - *SubagentStartHookOutput, *SubagentStopHookOutput,
	//     *ElicitationHookOutput, *ElicitationResultHookOutput,
	//     *WorktreeCreateHookOutput
	//   - *PreSkillShellCommandHookOutput (hook_preskill.go)
	Event HookEventOutput

	// TerminalSequence is a terminal escape sequence (a desktop
	// notification OSC, BEL) for the CLI to emit on the hook's behalf;
	// the CLI drops anything else. It matters to a CLI in a terminal.
	TerminalSequence string

	// Async answers at once that the hook goes on in the background, so
	// the CLI does not wait for it; AsyncTimeout (in milliseconds, 0 for
	// the CLI's default) bounds how long the CLI keeps it. The other
	// fields are then not sent: an async hook decides nothing.
	Async        bool
	AsyncTimeout int

	// Raw, when set, is sent as the whole output instead of the fields
	// above: for output fields Tether does not model yet. It must be a
	// JSON object.
	Raw json.RawMessage
}

// HookDecision is a hook's verdict on what its event is about.
type HookDecision string

// Hook decisions.
const (
	HookDecisionApprove HookDecision = "approve"
	HookDecisionBlock   HookDecision = "block"
)

// HookPermissionDecision is a PreToolUse hook's verdict on a tool call.
type HookPermissionDecision string

// PreToolUse verdicts.
const (
	// HookPermissionDecisionAllow runs the tool without asking anyone
	// (the permission rules and CanUseTool are skipped).
	HookPermissionDecisionAllow HookPermissionDecision = "allow"
	// HookPermissionDecisionDeny refuses the tool; the model sees
	// PermissionDecisionReason.
	HookPermissionDecisionDeny HookPermissionDecision = "deny"
	// HookPermissionDecisionAsk sends the call to the permission prompt
	// (CanUseTool) even when a rule allows it; the request's
	// DecisionReason is PermissionDecisionReason.
	HookPermissionDecisionAsk HookPermissionDecision = "ask"
	// HookPermissionDecisionDefer decides nothing yet: the turn ends with
	// the call pending (terminal reason tool_deferred), for the host to
	// settle later.
	HookPermissionDecisionDefer HookPermissionDecision = "defer"
)

// HookEventOutput is the event-specific part of a HookOutput; see
// HookOutput.Event for its variants.
type HookEventOutput interface {
	// HookEvent returns the event the output belongs to.
	HookEvent() HookEvent
	hookSpecific(in *HookInput) any
}

// PreToolUseHookOutput decides a tool call before it runs.
type PreToolUseHookOutput struct {
	PermissionDecision HookPermissionDecision
	// PermissionDecisionReason is shown to the model for a denial, to the
	// user otherwise.
	PermissionDecisionReason string
	// UpdatedInput replaces the tool's input (a JSON object); with
	// HookPermissionDecisionAllow it is what runs.
	UpdatedInput json.RawMessage
	// AdditionalContext is added to what the model sees.
	AdditionalContext string
}

// PostToolUseHookOutput reacts to a tool's result.
type PostToolUseHookOutput struct {
	AdditionalContext string
	// UpdatedToolOutput replaces the tool's output before the model sees
	// it (any JSON value).
	UpdatedToolOutput json.RawMessage
	// UpdatedMCPToolOutput does the same for MCP tools only; prefer
	// UpdatedToolOutput.
	UpdatedMCPToolOutput json.RawMessage
	// ClassifierContext is shown to the auto-mode permission classifier
	// with the tool's result (newer CLIs).
	ClassifierContext string
}

// PostToolUseFailureHookOutput reacts to a tool's failure.
type PostToolUseFailureHookOutput struct{ AdditionalContext string }

// PostToolBatchHookOutput reacts to a finished batch of tool calls.
type PostToolBatchHookOutput struct{ AdditionalContext string }

// PermissionRequestHookOutput answers a permission prompt in the hook:
// Decision is a *PermissionAllow or a *PermissionDeny, as CanUseTool
// would return.
type PermissionRequestHookOutput struct{ Decision PermissionResult }

// PermissionDeniedHookOutput reacts to a refused tool call.
type PermissionDeniedHookOutput struct {
	// Retry lets the model try the call again.
	Retry bool
}

// UserPromptSubmitHookOutput adds to a prompt.
type UserPromptSubmitHookOutput struct {
	// AdditionalContext goes to the model with the prompt.
	AdditionalContext string
	SessionTitle      string
	// SuppressOriginalPrompt leaves the prompt out of the message shown
	// when Decision is "block".
	SuppressOriginalPrompt bool
}

// UserPromptExpansionHookOutput adds to an expanded prompt.
type UserPromptExpansionHookOutput struct {
	AdditionalContext string
	// SuppressOriginalPrompt leaves the original prompt out of the block
	// message when Decision is "block".
	SuppressOriginalPrompt bool
}

// StopHookOutput gives the model feedback as its turn ends; the model
// goes on so it can act on it.
type StopHookOutput struct{ AdditionalContext string }

// NotificationHookOutput reacts to a notification.
type NotificationHookOutput struct{ AdditionalContext string }

// MessageDisplayHookOutput changes what is displayed for a streamed
// delta; the stored message is untouched.
type MessageDisplayHookOutput struct{ DisplayContent string }

// SessionStartHookOutput prepares a session.
type SessionStartHookOutput struct {
	// AdditionalContext goes to the model at the start of the session.
	AdditionalContext  string
	InitialUserMessage string
	SessionTitle       string
	// WatchPaths are absolute paths whose changes fire FileChanged.
	WatchPaths []string
	// ReloadSkills rescans skills and commands after the hooks ran.
	ReloadSkills bool
}

// SetupHookOutput reacts to the CLI's setup.
type SetupHookOutput struct{ AdditionalContext string }

// CwdChangedHookOutput reacts to a change of directory.
type CwdChangedHookOutput struct{ WatchPaths []string }

// FileChangedHookOutput reacts to a changed file.
type FileChangedHookOutput struct{ WatchPaths []string }

// PreModelSwitchHookOutput decides a model switch (CLI 2.1.330 and
// later): allow, deny or ask.
type PreModelSwitchHookOutput struct {
	PermissionDecision       HookPermissionDecision
	PermissionDecisionReason string
}

// PostModelSwitchHookOutput reacts to a model switch (CLI 2.1.330 and
// later).
type PostModelSwitchHookOutput struct{ AdditionalContext string }

// SubagentStartHookOutput adds to a subagent's context.
type SubagentStartHookOutput struct{ AdditionalContext string }

// SubagentStopHookOutput gives a subagent feedback as it ends; it goes on
// so it can act on it.
type SubagentStopHookOutput struct{ AdditionalContext string }

// ElicitationHookOutput answers an MCP elicitation without asking the
// user. CLI 2.1.197 and 2.1.330 read this answer only from command hooks
// (settings): from a HookFunc it changes nothing, so answer elicitations
// with Options.OnElicitation.
type ElicitationHookOutput struct {
	Action  string          // accept, decline, cancel
	Content json.RawMessage // the answer (a JSON object), for accept
}

// ElicitationResultHookOutput overrides the user's answer to an
// elicitation. Like ElicitationHookOutput, CLI 2.1.197 and 2.1.330 ignore
// it from a HookFunc.
type ElicitationResultHookOutput struct {
	Action  string // accept, decline, cancel
	Content json.RawMessage
}

// WorktreeCreateHookOutput reports the worktree the hook created.
type WorktreeCreateHookOutput struct{ WorktreePath string }

func (*PreToolUseHookOutput) HookEvent() HookEvent          { return HookEventPreToolUse }
func (*PostToolUseHookOutput) HookEvent() HookEvent         { return HookEventPostToolUse }
func (*PostToolUseFailureHookOutput) HookEvent() HookEvent  { return HookEventPostToolUseFailure }
func (*PostToolBatchHookOutput) HookEvent() HookEvent       { return HookEventPostToolBatch }
func (*PermissionRequestHookOutput) HookEvent() HookEvent   { return HookEventPermissionRequest }
func (*PermissionDeniedHookOutput) HookEvent() HookEvent    { return HookEventPermissionDenied }
func (*UserPromptSubmitHookOutput) HookEvent() HookEvent    { return HookEventUserPromptSubmit }
func (*UserPromptExpansionHookOutput) HookEvent() HookEvent { return HookEventUserPromptExpansion }
func (*StopHookOutput) HookEvent() HookEvent                { return HookEventStop }
func (*NotificationHookOutput) HookEvent() HookEvent        { return HookEventNotification }
func (*MessageDisplayHookOutput) HookEvent() HookEvent      { return HookEventMessageDisplay }
func (*SessionStartHookOutput) HookEvent() HookEvent        { return HookEventSessionStart }
func (*SetupHookOutput) HookEvent() HookEvent               { return HookEventSetup }
func (*CwdChangedHookOutput) HookEvent() HookEvent          { return HookEventCwdChanged }
func (*FileChangedHookOutput) HookEvent() HookEvent         { return HookEventFileChanged }
func (*PreModelSwitchHookOutput) HookEvent() HookEvent      { return HookEventPreModelSwitch }
func (*PostModelSwitchHookOutput) HookEvent() HookEvent     { return HookEventPostModelSwitch }
func (*SubagentStartHookOutput) HookEvent() HookEvent       { return HookEventSubagentStart }
func (*SubagentStopHookOutput) HookEvent() HookEvent        { return HookEventSubagentStop }
func (*ElicitationHookOutput) HookEvent() HookEvent         { return HookEventElicitation }
func (*ElicitationResultHookOutput) HookEvent() HookEvent   { return HookEventElicitationResult }
func (*WorktreeCreateHookOutput) HookEvent() HookEvent      { return HookEventWorktreeCreate }

// Wire forms. Every hookSpecificOutput names its event; the CLI checks it
// against the event it called the hook for.

type wireContextOutput struct {
	HookEventName     HookEvent `json:"hookEventName"`
	AdditionalContext string    `json:"additionalContext,omitempty"`
}

type wireWatchOutput struct {
	HookEventName HookEvent `json:"hookEventName"`
	WatchPaths    []string  `json:"watchPaths,omitempty"`
}

func contextOutput(ev HookEvent, ctx string) any { return wireContextOutput{ev, ctx} }

func (o *PreToolUseHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName            HookEvent              `json:"hookEventName"`
		PermissionDecision       HookPermissionDecision `json:"permissionDecision,omitempty"`
		PermissionDecisionReason string                 `json:"permissionDecisionReason,omitempty"`
		UpdatedInput             json.RawMessage        `json:"updatedInput,omitempty"`
		AdditionalContext        string                 `json:"additionalContext,omitempty"`
	}{HookEventPreToolUse, o.PermissionDecision, o.PermissionDecisionReason, o.UpdatedInput, o.AdditionalContext}
}

func (o *PostToolUseHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName        HookEvent       `json:"hookEventName"`
		AdditionalContext    string          `json:"additionalContext,omitempty"`
		UpdatedToolOutput    json.RawMessage `json:"updatedToolOutput,omitempty"`
		UpdatedMCPToolOutput json.RawMessage `json:"updatedMCPToolOutput,omitempty"`
		ClassifierContext    string          `json:"classifierContext,omitempty"`
	}{HookEventPostToolUse, o.AdditionalContext, o.UpdatedToolOutput, o.UpdatedMCPToolOutput, o.ClassifierContext}
}

func (o *PostToolUseFailureHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventPostToolUseFailure, o.AdditionalContext)
}

func (o *PostToolBatchHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventPostToolBatch, o.AdditionalContext)
}

func (o *PermissionRequestHookOutput) hookSpecific(in *HookInput) any {
	var decision any
	if !noResult(o.Decision) {
		req := &ToolPermissionRequest{Input: json.RawMessage("{}")}
		if pr, ok := in.Event.(*PermissionRequestHookInput); ok && len(pr.ToolInput) > 0 {
			req.Input = pr.ToolInput
		}
		decision = o.Decision.permissionResponse(req)
	}
	return struct {
		HookEventName HookEvent `json:"hookEventName"`
		Decision      any       `json:"decision,omitempty"`
	}{HookEventPermissionRequest, decision}
}

func (o *PermissionDeniedHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName HookEvent `json:"hookEventName"`
		Retry         bool      `json:"retry,omitempty"`
	}{HookEventPermissionDenied, o.Retry}
}

func (o *UserPromptSubmitHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName          HookEvent `json:"hookEventName"`
		AdditionalContext      string    `json:"additionalContext,omitempty"`
		SessionTitle           string    `json:"sessionTitle,omitempty"`
		SuppressOriginalPrompt bool      `json:"suppressOriginalPrompt,omitempty"`
	}{HookEventUserPromptSubmit, o.AdditionalContext, o.SessionTitle, o.SuppressOriginalPrompt}
}

func (o *UserPromptExpansionHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName          HookEvent `json:"hookEventName"`
		AdditionalContext      string    `json:"additionalContext,omitempty"`
		SuppressOriginalPrompt bool      `json:"suppressOriginalPrompt,omitempty"`
	}{HookEventUserPromptExpansion, o.AdditionalContext, o.SuppressOriginalPrompt}
}

func (o *StopHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventStop, o.AdditionalContext)
}

func (o *NotificationHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventNotification, o.AdditionalContext)
}

func (o *MessageDisplayHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName  HookEvent `json:"hookEventName"`
		DisplayContent string    `json:"displayContent,omitempty"`
	}{HookEventMessageDisplay, o.DisplayContent}
}

func (o *SessionStartHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName      HookEvent `json:"hookEventName"`
		AdditionalContext  string    `json:"additionalContext,omitempty"`
		InitialUserMessage string    `json:"initialUserMessage,omitempty"`
		SessionTitle       string    `json:"sessionTitle,omitempty"`
		WatchPaths         []string  `json:"watchPaths,omitempty"`
		ReloadSkills       bool      `json:"reloadSkills,omitempty"`
	}{HookEventSessionStart, o.AdditionalContext, o.InitialUserMessage, o.SessionTitle, o.WatchPaths, o.ReloadSkills}
}

func (o *SetupHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventSetup, o.AdditionalContext)
}

func (o *CwdChangedHookOutput) hookSpecific(*HookInput) any {
	return wireWatchOutput{HookEventCwdChanged, o.WatchPaths}
}

func (o *FileChangedHookOutput) hookSpecific(*HookInput) any {
	return wireWatchOutput{HookEventFileChanged, o.WatchPaths}
}

func (o *PreModelSwitchHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName            HookEvent              `json:"hookEventName"`
		PermissionDecision       HookPermissionDecision `json:"permissionDecision,omitempty"`
		PermissionDecisionReason string                 `json:"permissionDecisionReason,omitempty"`
	}{HookEventPreModelSwitch, o.PermissionDecision, o.PermissionDecisionReason}
}

func (o *PostModelSwitchHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventPostModelSwitch, o.AdditionalContext)
}

func (o *SubagentStartHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventSubagentStart, o.AdditionalContext)
}

func (o *SubagentStopHookOutput) hookSpecific(*HookInput) any {
	return contextOutput(HookEventSubagentStop, o.AdditionalContext)
}

type wireElicitationOutput struct {
	HookEventName HookEvent       `json:"hookEventName"`
	Action        string          `json:"action,omitempty"`
	Content       json.RawMessage `json:"content,omitempty"`
}

func (o *ElicitationHookOutput) hookSpecific(*HookInput) any {
	return wireElicitationOutput{HookEventElicitation, o.Action, o.Content}
}

func (o *ElicitationResultHookOutput) hookSpecific(*HookInput) any {
	return wireElicitationOutput{HookEventElicitationResult, o.Action, o.Content}
}

func (o *WorktreeCreateHookOutput) hookSpecific(*HookInput) any {
	return struct {
		HookEventName HookEvent `json:"hookEventName"`
		WorktreePath  string    `json:"worktreePath"`
	}{HookEventWorktreeCreate, o.WorktreePath}
}

// wireHookOutput is the hook output the CLI reads.
type wireHookOutput struct {
	Continue           *bool        `json:"continue,omitempty"`
	StopReason         string       `json:"stopReason,omitempty"`
	SuppressOutput     bool         `json:"suppressOutput,omitempty"`
	SystemMessage      string       `json:"systemMessage,omitempty"`
	Decision           HookDecision `json:"decision,omitempty"`
	Reason             string       `json:"reason,omitempty"`
	TerminalSequence   string       `json:"terminalSequence,omitempty"`
	HookSpecificOutput any          `json:"hookSpecificOutput,omitempty"`
}

// encode builds the control response payload for a hook's output to in.
func (o *HookOutput) encode(in *HookInput) (any, error) {
	if o == nil {
		return struct{}{}, nil
	}
	if len(o.Raw) > 0 {
		if raw := bytes.TrimSpace(o.Raw); !json.Valid(raw) || raw[0] != '{' {
			return nil, fmt.Errorf("HookOutput.Raw is not a JSON object: %.40s", o.Raw)
		}
		return o.Raw, nil
	}
	if o.Async {
		if o.AsyncTimeout < 0 {
			return nil, fmt.Errorf("HookOutput.AsyncTimeout is negative (%d)", o.AsyncTimeout)
		}
		return struct {
			Async        bool `json:"async"`
			AsyncTimeout int  `json:"asyncTimeout,omitempty"`
		}{true, o.AsyncTimeout}, nil
	}
	w := wireHookOutput{
		StopReason: o.StopReason, SuppressOutput: o.SuppressOutput, SystemMessage: o.SystemMessage,
		Decision: o.Decision, Reason: o.Reason, TerminalSequence: o.TerminalSequence,
	}
	if o.Stop {
		f := false
		w.Continue = &f
	}
	if o.Event != nil {
		if ev := o.Event.HookEvent(); ev != in.HookEventName {
			// The CLI would reject it with a less helpful message.
			return nil, fmt.Errorf("a %s hook returned %s output (%T)", in.HookEventName, ev, o.Event)
		}
		w.HookSpecificOutput = o.Event.hookSpecific(in)
	}
	return w, nil
}
