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

// HookMCPServer says which MCP server serves an mcp__* tool. Trust
// Source, not the server or tool name: only the host can register an
// "sdk" server.
type HookMCPServer struct {
	Name   string `json:"name"`
	Source string `json:"source"` // sdk, plugin, user, project, local, dynamic, managed, …
}

// PreToolUseHookInput: a tool is about to run. The hook may allow it
// (skipping the permission prompt), deny it, ask, or rewrite its input;
// see PreToolUseHookOutput.
type PreToolUseHookInput struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"` // as the model wrote it
	ToolUseID string          `json:"tool_use_id"`
	MCPServer *HookMCPServer  `json:"mcp_server,omitempty"`
}

// PostToolUseHookInput: a tool ran and succeeded.
type PostToolUseHookInput struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	// ToolResponse is the tool's structured result, e.g. for Bash
	// {"stdout", "stderr", "interrupted", …}.
	ToolResponse json.RawMessage `json:"tool_response"`
	ToolUseID    string          `json:"tool_use_id"`
	// DurationMS is how long the tool ran, prompts and hooks excluded.
	DurationMS float64        `json:"duration_ms,omitempty"`
	MCPServer  *HookMCPServer `json:"mcp_server,omitempty"`
}

// PostToolUseFailureHookInput: a tool ran and failed.
type PostToolUseFailureHookInput struct {
	ToolName    string          `json:"tool_name"`
	ToolInput   json.RawMessage `json:"tool_input"`
	ToolUseID   string          `json:"tool_use_id"`
	Error       string          `json:"error"`
	IsInterrupt bool            `json:"is_interrupt,omitempty"`
	DurationMS  float64         `json:"duration_ms,omitempty"`
	MCPServer   *HookMCPServer  `json:"mcp_server,omitempty"`
}

// PostToolBatchHookInput: every tool call of one model response has
// finished, before the next request to the model.
type PostToolBatchHookInput struct {
	ToolCalls []HookToolCall `json:"tool_calls"`
}

// HookToolCall is one call of a PostToolBatchHookInput.
type HookToolCall struct {
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolUseID    string          `json:"tool_use_id"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
}

// PermissionRequestHookInput: the CLI is about to ask for permission to
// run a tool; the hook may decide instead (PermissionRequestHookOutput).
type PermissionRequestHookInput struct {
	ToolName              string             `json:"tool_name"`
	ToolInput             json.RawMessage    `json:"tool_input"`
	PermissionSuggestions []PermissionUpdate `json:"permission_suggestions,omitempty"`
	MCPServer             *HookMCPServer     `json:"mcp_server,omitempty"`
}

// PermissionDeniedHookInput: a tool call was refused.
type PermissionDeniedHookInput struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
	Reason    string          `json:"reason"`
	MCPServer *HookMCPServer  `json:"mcp_server,omitempty"`
}

// UserPromptSubmitHookInput: a prompt is about to go to the model.
type UserPromptSubmitHookInput struct {
	Prompt string `json:"prompt"`
	// Source says who wrote the prompt: "sdk" for a host like Tether,
	// "user", "system", … (newer CLIs).
	Source       string `json:"source,omitempty"`
	SessionTitle string `json:"session_title,omitempty"`
}

// UserPromptExpansionHookInput: a slash command or an MCP prompt was
// expanded into a prompt.
type UserPromptExpansionHookInput struct {
	ExpansionType string `json:"expansion_type"` // slash_command, mcp_prompt
	CommandName   string `json:"command_name"`
	CommandArgs   string `json:"command_args"`
	CommandSource string `json:"command_source,omitempty"`
	Prompt        string `json:"prompt"`
}

// StopHookInput: the model finished its answer and the turn is about to
// end. A hook that answers Decision "block" makes the model go on, with
// Reason as feedback.
type StopHookInput struct {
	// StopHookActive is true when the model is already going on because
	// of a Stop hook: a hook that always blocks would loop forever.
	StopHookActive       bool                 `json:"stop_hook_active"`
	LastAssistantMessage string               `json:"last_assistant_message,omitempty"`
	BackgroundTasks      []HookBackgroundTask `json:"background_tasks,omitempty"`
	SessionCrons         []HookSessionCron    `json:"session_crons,omitempty"`
}

// HookBackgroundTask is work still running when a Stop hook fires.
type HookBackgroundTask struct {
	ID          string `json:"id"`
	Type        string `json:"type"` // shell, subagent, monitor, workflow, …
	Status      string `json:"status"`
	Description string `json:"description"`
	Command     string `json:"command,omitempty"`
	AgentType   string `json:"agent_type,omitempty"`
	Server      string `json:"server,omitempty"`
	Tool        string `json:"tool,omitempty"`
	Name        string `json:"name,omitempty"`
}

// HookSessionCron is a scheduled task that will wake the session later.
type HookSessionCron struct {
	ID        string `json:"id"`
	Schedule  string `json:"schedule"` // a cron expression
	Recurring bool   `json:"recurring"`
	Prompt    string `json:"prompt"`
}

// StopFailureHookInput: the turn ended on an API error.
type StopFailureHookInput struct {
	Error                string `json:"error"` // rate_limit, server_error, authentication_failed, …
	ErrorDetails         string `json:"error_details,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
}

// NotificationHookInput: the CLI wants the user's attention.
type NotificationHookInput struct {
	Message          string `json:"message"`
	Title            string `json:"title,omitempty"`
	NotificationType string `json:"notification_type"`
}

// MessageDisplayHookInput: newly completed lines of a streaming assistant
// message are about to be shown. What the model sees is not affected.
type MessageDisplayHookInput struct {
	TurnID    string `json:"turn_id"`
	MessageID string `json:"message_id"` // stable across the message's flushes
	Index     int    `json:"index"`
	Final     bool   `json:"final"`
	Delta     string `json:"delta"`
}

// SessionStartHookInput: a session started, resumed, was cleared or
// compacted.
type SessionStartHookInput struct {
	Source string `json:"source"` // startup, resume, clear, compact, fork
	// AgentType is the agent the session runs as (Options.Agent), when
	// one was given.
	AgentType    string `json:"agent_type,omitempty"`
	Model        string `json:"model,omitempty"`
	SessionTitle string `json:"session_title,omitempty"`
	// For resume and fork (newer CLIs): how stale the prompt cache is.
	SecondsSinceLastResponse float64 `json:"seconds_since_last_response,omitempty"`
	ContextTokens            int64   `json:"context_tokens,omitempty"`
	PromptCacheLikelyExpired bool    `json:"prompt_cache_likely_expired,omitempty"`
	EstimatedCacheWriteUSD   float64 `json:"estimated_cache_write_usd,omitempty"`
}

// SessionEndHookInput: the session is ending.
type SessionEndHookInput struct {
	Reason string `json:"reason"` // clear, resume, logout, prompt_input_exit, other
}

// SetupHookInput: the CLI runs its setup (--init, maintenance).
type SetupHookInput struct {
	Trigger string `json:"trigger"` // init, maintenance
}

// PreCompactHookInput: the conversation is about to be compacted.
type PreCompactHookInput struct {
	Trigger            string `json:"trigger"` // manual, auto
	CustomInstructions string `json:"custom_instructions"`
}

// PostCompactHookInput: the conversation was compacted.
type PostCompactHookInput struct {
	Trigger        string `json:"trigger"`
	CompactSummary string `json:"compact_summary"`
}

// ConfigChangeHookInput: a settings file or skill changed.
type ConfigChangeHookInput struct {
	Source   string `json:"source"` // user_settings, project_settings, local_settings, policy_settings, skills
	FilePath string `json:"file_path,omitempty"`
}

// InstructionsLoadedHookInput: an instructions file (CLAUDE.md, a rules
// file) was loaded into the context.
type InstructionsLoadedHookInput struct {
	FilePath        string   `json:"file_path"`
	MemoryType      string   `json:"memory_type"` // User, Project, Local, Managed
	LoadReason      string   `json:"load_reason"` // session_start, nested_traversal, path_glob_match, include, compact
	Globs           []string `json:"globs,omitempty"`
	TriggerFilePath string   `json:"trigger_file_path,omitempty"`
	ParentFilePath  string   `json:"parent_file_path,omitempty"`
}

// CwdChangedHookInput: the working directory changed.
type CwdChangedHookInput struct {
	OldCwd string `json:"old_cwd"`
	NewCwd string `json:"new_cwd"`
}

// FileChangedHookInput: a watched file changed (see the WatchPaths of
// SessionStartHookOutput and CwdChangedHookOutput).
type FileChangedHookInput struct {
	FilePath string `json:"file_path"`
	Change   string `json:"event"` // change, add, unlink
}

// PreModelSwitchHookInput: the model is about to change (CLI 2.1.330 and
// later).
type PreModelSwitchHookInput struct {
	FromModel      string `json:"from_model"`
	ToModel        string `json:"to_model"`
	RequestedModel string `json:"requested_model"` // "" for the default
	Source         string `json:"source"`          // command, picker, sdk
	// What switching costs: the context the next request resends, and
	// whether the prompt cache would be lost.
	ContextTokens          int64   `json:"context_tokens"`
	PromptCacheWarm        bool    `json:"prompt_cache_warm"`
	CacheTTL               string  `json:"cache_ttl"`
	EstimatedCacheWriteUSD float64 `json:"estimated_cache_write_usd"`
	Pricing                string  `json:"pricing"`
}

// PostModelSwitchHookInput: the model changed (CLI 2.1.330 and later).
type PostModelSwitchHookInput struct {
	FromModel              string  `json:"from_model"`
	ToModel                string  `json:"to_model"`
	RequestedModel         string  `json:"requested_model"`
	Source                 string  `json:"source"` // command, picker, sdk, auto, resume
	ContextTokens          int64   `json:"context_tokens"`
	PromptCacheWarm        bool    `json:"prompt_cache_warm"`
	CacheTTL               string  `json:"cache_ttl"`
	EstimatedCacheWriteUSD float64 `json:"estimated_cache_write_usd"`
	Pricing                string  `json:"pricing"`
}

// DirectoryAddedHookInput: a directory was added to the workspace (CLI
// 2.1.330 and later).
type DirectoryAddedHookInput struct {
	Directory string `json:"directory"`
	Source    string `json:"source"` // slash_command, register_repo_root
}

// SubagentStartHookInput: a subagent started.
type SubagentStartHookInput struct {
	AgentID   string `json:"agent_id"`
	AgentType string `json:"agent_type"`
}

// SubagentStopHookInput: a subagent finished its answer; like Stop, a
// "block" decision makes it go on.
type SubagentStopHookInput struct {
	StopHookActive       bool                 `json:"stop_hook_active"`
	AgentID              string               `json:"agent_id"`
	AgentTranscriptPath  string               `json:"agent_transcript_path"`
	AgentType            string               `json:"agent_type"`
	LastAssistantMessage string               `json:"last_assistant_message,omitempty"`
	BackgroundTasks      []HookBackgroundTask `json:"background_tasks,omitempty"`
	SessionCrons         []HookSessionCron    `json:"session_crons,omitempty"`
}

// TaskCreatedHookInput: a task was created on the session's task list.
type TaskCreatedHookInput struct {
	TaskID          string `json:"task_id"`
	TaskSubject     string `json:"task_subject"`
	TaskDescription string `json:"task_description,omitempty"`
	TeammateName    string `json:"teammate_name,omitempty"`
	TeamName        string `json:"team_name,omitempty"`
}

// TaskCompletedHookInput: a task was completed.
type TaskCompletedHookInput struct {
	TaskID          string `json:"task_id"`
	TaskSubject     string `json:"task_subject"`
	TaskDescription string `json:"task_description,omitempty"`
	TeammateName    string `json:"teammate_name,omitempty"`
	TeamName        string `json:"team_name,omitempty"`
}

// TeammateIdleHookInput: a teammate has nothing to do.
type TeammateIdleHookInput struct {
	TeammateName string `json:"teammate_name"`
	TeamName     string `json:"team_name"`
}

// ElicitationHookInput: an MCP server asks the user for input; the hook
// may answer instead (ElicitationHookOutput).
type ElicitationHookInput struct {
	MCPServerName   string          `json:"mcp_server_name"`
	Message         string          `json:"message"`
	Mode            string          `json:"mode,omitempty"` // form, url
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"` // a JSON schema, for form mode
}

// ElicitationResultHookInput: the user answered an elicitation; the hook
// may change the answer before it reaches the server.
type ElicitationResultHookInput struct {
	MCPServerName string          `json:"mcp_server_name"`
	ElicitationID string          `json:"elicitation_id,omitempty"`
	Mode          string          `json:"mode,omitempty"`
	Action        string          `json:"action"` // accept, decline, cancel
	Content       json.RawMessage `json:"content,omitempty"`
}

// WorktreeCreateHookInput: the CLI needs a worktree; the hook creates it
// and answers with its path (WorktreeCreateHookOutput).
type WorktreeCreateHookInput struct {
	Name string `json:"name"`
}

// WorktreeRemoveHookInput: a worktree is no longer needed.
type WorktreeRemoveHookInput struct {
	WorktreePath string `json:"worktree_path"`
}

// HookEvent methods: each variant names its event.

func (*PreToolUseHookInput) HookEvent() HookEvent          { return HookEventPreToolUse }
func (*PostToolUseHookInput) HookEvent() HookEvent         { return HookEventPostToolUse }
func (*PostToolUseFailureHookInput) HookEvent() HookEvent  { return HookEventPostToolUseFailure }
func (*PostToolBatchHookInput) HookEvent() HookEvent       { return HookEventPostToolBatch }
func (*PermissionRequestHookInput) HookEvent() HookEvent   { return HookEventPermissionRequest }
func (*PermissionDeniedHookInput) HookEvent() HookEvent    { return HookEventPermissionDenied }
func (*UserPromptSubmitHookInput) HookEvent() HookEvent    { return HookEventUserPromptSubmit }
func (*UserPromptExpansionHookInput) HookEvent() HookEvent { return HookEventUserPromptExpansion }
func (*StopHookInput) HookEvent() HookEvent                { return HookEventStop }
func (*StopFailureHookInput) HookEvent() HookEvent         { return HookEventStopFailure }
func (*NotificationHookInput) HookEvent() HookEvent        { return HookEventNotification }
func (*MessageDisplayHookInput) HookEvent() HookEvent      { return HookEventMessageDisplay }
func (*SessionStartHookInput) HookEvent() HookEvent        { return HookEventSessionStart }
func (*SessionEndHookInput) HookEvent() HookEvent          { return HookEventSessionEnd }
func (*SetupHookInput) HookEvent() HookEvent               { return HookEventSetup }
func (*PreCompactHookInput) HookEvent() HookEvent          { return HookEventPreCompact }
func (*PostCompactHookInput) HookEvent() HookEvent         { return HookEventPostCompact }
func (*ConfigChangeHookInput) HookEvent() HookEvent        { return HookEventConfigChange }
func (*InstructionsLoadedHookInput) HookEvent() HookEvent  { return HookEventInstructionsLoaded }
func (*CwdChangedHookInput) HookEvent() HookEvent          { return HookEventCwdChanged }
func (*FileChangedHookInput) HookEvent() HookEvent         { return HookEventFileChanged }
func (*PreModelSwitchHookInput) HookEvent() HookEvent      { return HookEventPreModelSwitch }
func (*PostModelSwitchHookInput) HookEvent() HookEvent     { return HookEventPostModelSwitch }
func (*DirectoryAddedHookInput) HookEvent() HookEvent      { return HookEventDirectoryAdded }
func (*SubagentStartHookInput) HookEvent() HookEvent       { return HookEventSubagentStart }
func (*SubagentStopHookInput) HookEvent() HookEvent        { return HookEventSubagentStop }
func (*TaskCreatedHookInput) HookEvent() HookEvent         { return HookEventTaskCreated }
func (*TaskCompletedHookInput) HookEvent() HookEvent       { return HookEventTaskCompleted }
func (*TeammateIdleHookInput) HookEvent() HookEvent        { return HookEventTeammateIdle }
func (*ElicitationHookInput) HookEvent() HookEvent         { return HookEventElicitation }
func (*ElicitationResultHookInput) HookEvent() HookEvent   { return HookEventElicitationResult }
func (*WorktreeCreateHookInput) HookEvent() HookEvent      { return HookEventWorktreeCreate }
func (*WorktreeRemoveHookInput) HookEvent() HookEvent      { return HookEventWorktreeRemove }

func (*PreToolUseHookInput) isHookEventInput()          {}
func (*PostToolUseHookInput) isHookEventInput()         {}
func (*PostToolUseFailureHookInput) isHookEventInput()  {}
func (*PostToolBatchHookInput) isHookEventInput()       {}
func (*PermissionRequestHookInput) isHookEventInput()   {}
func (*PermissionDeniedHookInput) isHookEventInput()    {}
func (*UserPromptSubmitHookInput) isHookEventInput()    {}
func (*UserPromptExpansionHookInput) isHookEventInput() {}
func (*StopHookInput) isHookEventInput()                {}
func (*StopFailureHookInput) isHookEventInput()         {}
func (*NotificationHookInput) isHookEventInput()        {}
func (*MessageDisplayHookInput) isHookEventInput()      {}
func (*SessionStartHookInput) isHookEventInput()        {}
func (*SessionEndHookInput) isHookEventInput()          {}
func (*SetupHookInput) isHookEventInput()               {}
func (*PreCompactHookInput) isHookEventInput()          {}
func (*PostCompactHookInput) isHookEventInput()         {}
func (*ConfigChangeHookInput) isHookEventInput()        {}
func (*InstructionsLoadedHookInput) isHookEventInput()  {}
func (*CwdChangedHookInput) isHookEventInput()          {}
func (*FileChangedHookInput) isHookEventInput()         {}
func (*PreModelSwitchHookInput) isHookEventInput()      {}
func (*PostModelSwitchHookInput) isHookEventInput()     {}
func (*DirectoryAddedHookInput) isHookEventInput()      {}
func (*SubagentStartHookInput) isHookEventInput()       {}
func (*SubagentStopHookInput) isHookEventInput()        {}
func (*TaskCreatedHookInput) isHookEventInput()         {}
func (*TaskCompletedHookInput) isHookEventInput()       {}
func (*TeammateIdleHookInput) isHookEventInput()        {}
func (*ElicitationHookInput) isHookEventInput()         {}
func (*ElicitationResultHookInput) isHookEventInput()   {}
func (*WorktreeCreateHookInput) isHookEventInput()      {}
func (*WorktreeRemoveHookInput) isHookEventInput()      {}

// hookInputs makes the empty variant for each known event.
var hookInputs = map[HookEvent]func() HookEventInput{
	HookEventPreToolUse:          func() HookEventInput { return new(PreToolUseHookInput) },
	HookEventPostToolUse:         func() HookEventInput { return new(PostToolUseHookInput) },
	HookEventPostToolUseFailure:  func() HookEventInput { return new(PostToolUseFailureHookInput) },
	HookEventPostToolBatch:       func() HookEventInput { return new(PostToolBatchHookInput) },
	HookEventPermissionRequest:   func() HookEventInput { return new(PermissionRequestHookInput) },
	HookEventPermissionDenied:    func() HookEventInput { return new(PermissionDeniedHookInput) },
	HookEventUserPromptSubmit:    func() HookEventInput { return new(UserPromptSubmitHookInput) },
	HookEventUserPromptExpansion: func() HookEventInput { return new(UserPromptExpansionHookInput) },
	HookEventStop:                func() HookEventInput { return new(StopHookInput) },
	HookEventStopFailure:         func() HookEventInput { return new(StopFailureHookInput) },
	HookEventNotification:        func() HookEventInput { return new(NotificationHookInput) },
	HookEventMessageDisplay:      func() HookEventInput { return new(MessageDisplayHookInput) },
	HookEventSessionStart:        func() HookEventInput { return new(SessionStartHookInput) },
	HookEventSessionEnd:          func() HookEventInput { return new(SessionEndHookInput) },
	HookEventSetup:               func() HookEventInput { return new(SetupHookInput) },
	HookEventPreCompact:          func() HookEventInput { return new(PreCompactHookInput) },
	HookEventPostCompact:         func() HookEventInput { return new(PostCompactHookInput) },
	HookEventConfigChange:        func() HookEventInput { return new(ConfigChangeHookInput) },
	HookEventInstructionsLoaded:  func() HookEventInput { return new(InstructionsLoadedHookInput) },
	HookEventCwdChanged:          func() HookEventInput { return new(CwdChangedHookInput) },
	HookEventFileChanged:         func() HookEventInput { return new(FileChangedHookInput) },
	HookEventPreModelSwitch:      func() HookEventInput { return new(PreModelSwitchHookInput) },
	HookEventPostModelSwitch:     func() HookEventInput { return new(PostModelSwitchHookInput) },
	HookEventDirectoryAdded:      func() HookEventInput { return new(DirectoryAddedHookInput) },
	HookEventSubagentStart:       func() HookEventInput { return new(SubagentStartHookInput) },
	HookEventSubagentStop:        func() HookEventInput { return new(SubagentStopHookInput) },
	HookEventTaskCreated:         func() HookEventInput { return new(TaskCreatedHookInput) },
	HookEventTaskCompleted:       func() HookEventInput { return new(TaskCompletedHookInput) },
	HookEventTeammateIdle:        func() HookEventInput { return new(TeammateIdleHookInput) },
	HookEventElicitation:         func() HookEventInput { return new(ElicitationHookInput) },
	HookEventElicitationResult:   func() HookEventInput { return new(ElicitationResultHookInput) },
	HookEventWorktreeCreate:      func() HookEventInput { return new(WorktreeCreateHookInput) },
	HookEventWorktreeRemove:      func() HookEventInput { return new(WorktreeRemoveHookInput) },
}

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
