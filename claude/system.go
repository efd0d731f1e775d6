package claude

import (
	"github.com/tetherhq/tether/internal/wire"
)

// InitMessage (system/init) starts every turn, not the process: the CLI
// writes it after it takes a user message off its queue. It reports the
// session as the turn sees it.
type InitMessage struct {
	Meta
	Cwd               string            `json:"cwd"`
	Tools             []string          `json:"tools"`
	MCPServers        []MCPServerStatus `json:"mcp_servers"`
	Model             string            `json:"model"`
	PermissionMode    PermissionMode    `json:"permissionMode"`
	SlashCommands     []string          `json:"slash_commands"`
	APIKeySource      string            `json:"apiKeySource"`
	ClaudeCodeVersion string            `json:"claude_code_version"`
	OutputStyle       string            `json:"output_style"`
	Agents            []string          `json:"agents"`
	Skills            []string          `json:"skills"`
	Plugins           []PluginInfo      `json:"plugins"`
	Betas             []string          `json:"betas,omitempty"`
	FastModeState     string            `json:"fast_mode_state,omitempty"`
	// FastModeDisabledReason says why fast mode is off, when it is.
	FastModeDisabledReason string `json:"fast_mode_disabled_reason,omitempty"`
	// Capabilities are feature flags newer CLIs advertise.
	Capabilities []string `json:"capabilities,omitempty"`
	// TerminalSlashCommands are the slash commands that run only in the
	// CLI's own terminal UI (newer CLIs).
	TerminalSlashCommands []string `json:"terminal_slash_commands,omitempty"`
	// PluginErrors are the plugins that failed to load, or loaded
	// without a component; absent when there were none (newer CLIs).
	PluginErrors []PluginError `json:"plugin_errors,omitempty"`
	// Effort is the session's effort level (low, medium, high, xhigh,
	// max); empty when the CLI did not say or sent null.
	Effort string `json:"effort,omitempty"`
	// ViewMode is "focus" or "default" (newer CLIs).
	ViewMode string `json:"view_mode,omitempty"`
	// SandboxEnabled says whether the turn's tools run in the CLI's
	// sandbox (Options.Sandbox); nil from CLIs that do not say (before
	// 2.1.331).
	SandboxEnabled *bool `json:"sandbox_enabled,omitempty"`
}

// PluginError is a plugin's load-time failure in InitMessage.PluginErrors.
// Type is from an open set (path-not-found, generic-error,
// manifest-validation-error, …): treat an unknown one as generic.
type PluginError struct {
	// Plugin is name@marketplace, or inline[N] / synced[N] for a
	// directory entry that failed before it had a name.
	Plugin  string `json:"plugin"`
	Type    string `json:"type"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
	// ManagedLock is set when managed settings enable the plugin.
	ManagedLock *PluginManagedLock `json:"managed_lock,omitempty"`
}

// PluginManagedLock says a plugin is enabled by managed settings.
type PluginManagedLock struct {
	PluginEnabled bool   `json:"plugin_enabled"`
	Name          string `json:"name"`
	Marketplace   string `json:"marketplace,omitempty"`
}

// PluginInfo names a loaded plugin.
type PluginInfo struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Version string `json:"version,omitempty"`
}

// StatusMessage (system/status) reports the session's activity:
// "requesting" before each API call (with partial messages), "compacting",
// or "" (null); PermissionMode is set after a mode change.
type StatusMessage struct {
	Meta
	Status         string         `json:"status"`
	PermissionMode PermissionMode `json:"permissionMode,omitempty"`
	CompactResult  string         `json:"compact_result,omitempty"`
	CompactError   string         `json:"compact_error,omitempty"`
}

// APIRetryMessage (system/api_retry) says an API call failed and will be
// retried after RetryDelayMS.
type APIRetryMessage struct {
	Meta
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMS float64 `json:"retry_delay_ms"`
	// ErrorStatus is the HTTP status, 0 when there was none.
	ErrorStatus int `json:"error_status"`
	// Error is server_error, overloaded, rate_limit,
	// authentication_failed, …
	Error string `json:"error"`
	// NoResponse is set when the API sent no response headers within the
	// first-byte window (CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS).
	NoResponse *APINoResponse `json:"no_response,omitempty"`
}

// APINoResponse is APIRetryMessage.NoResponse: how long the failed
// attempt waited for headers, and how long the retry will wait.
type APINoResponse struct {
	WaitedMS    int64 `json:"waited_ms"`
	RetryWaitMS int64 `json:"retry_wait_ms"`
}

// ThinkingTokensMessage (system/thinking_tokens) estimates thinking tokens
// as they stream.
type ThinkingTokensMessage struct {
	Meta
	EstimatedTokens      int64 `json:"estimated_tokens"`
	EstimatedTokensDelta int64 `json:"estimated_tokens_delta"`
	// UserMessageUUID is the UUID of the host message whose turn this is
	// (newer CLIs).
	UserMessageUUID string `json:"user_message_uuid,omitempty"`
}

// TaskUsage is a background task's running usage.
type TaskUsage struct {
	TotalTokens int64 `json:"total_tokens"`
	ToolUses    int64 `json:"tool_uses"`
	DurationMS  int64 `json:"duration_ms"`
}

// TaskStartedMessage (system/task_started): a subagent or background task
// started.
type TaskStartedMessage struct {
	Meta
	TaskID       string `json:"task_id"`
	ToolUseID    string `json:"tool_use_id,omitempty"`
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type,omitempty"`
	TaskType     string `json:"task_type,omitempty"`
	Prompt       string `json:"prompt,omitempty"`
	// RunID tells one run of a task from another (newer CLIs).
	RunID          string `json:"run_id,omitempty"`
	IsBackgrounded bool   `json:"is_backgrounded,omitempty"`
	// SpawnDepth is how deep in the subagent tree the task started.
	SpawnDepth   int    `json:"spawn_depth,omitempty"`
	ParentTaskID string `json:"parent_task_id,omitempty"`
	WorkflowName string `json:"workflow_name,omitempty"`
	// SkipTranscript marks a task that writes no transcript of its own.
	SkipTranscript bool `json:"skip_transcript,omitempty"`
	// Ambient marks a task that is not activity (a watcher): leave it
	// out of activity indicators.
	Ambient bool `json:"ambient,omitempty"`
}

// TaskProgressMessage (system/task_progress): a task's progress.
type TaskProgressMessage struct {
	Meta
	TaskID       string    `json:"task_id"`
	ToolUseID    string    `json:"tool_use_id,omitempty"`
	Description  string    `json:"description"`
	SubagentType string    `json:"subagent_type,omitempty"`
	Usage        TaskUsage `json:"usage"`
	LastToolName string    `json:"last_tool_name,omitempty"`
	Summary      string    `json:"summary,omitempty"`
	RunID        string    `json:"run_id,omitempty"`
}

// TaskUpdatedMessage (system/task_updated): a change to a task's state.
type TaskUpdatedMessage struct {
	Meta
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id,omitempty"`
	Patch  struct {
		Status      string `json:"status,omitempty"`
		Description string `json:"description,omitempty"`
		EndTime     int64  `json:"end_time,omitempty"`
		Error       string `json:"error,omitempty"`
	} `json:"patch"`
}

// TaskNotificationMessage (system/task_notification): a task finished.
type TaskNotificationMessage struct {
	Meta
	TaskID     string     `json:"task_id"`
	ToolUseID  string     `json:"tool_use_id,omitempty"`
	Status     string     `json:"status"` // completed, failed, stopped
	OutputFile string     `json:"output_file"`
	Summary    string     `json:"summary"`
	Usage      *TaskUsage `json:"usage,omitempty"`
	// RunID is the run_id the task's task_* messages carried.
	RunID string `json:"run_id,omitempty"`
	// ResourceLinks are MCP resource links the task produced.
	ResourceLinks  []MCPResourceLink `json:"resource_links,omitempty"`
	SkipTranscript bool              `json:"skip_transcript,omitempty"`
	Ambient        bool              `json:"ambient,omitempty"`
}

// NotificationMessage (system/notification) is a notice for the user, such
// as a Stop hook's error.
type NotificationMessage struct {
	Meta
	Key      string `json:"key"`
	Text     string `json:"text"`
	Priority string `json:"priority"`
	// Color and TimeoutMS are display hints: a theme colour name and how
	// long to show the notice.
	Color     string `json:"color,omitempty"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
}

// CommandsChangedMessage (system/commands_changed): the slash commands
// changed (after reload_plugins).
type CommandsChangedMessage struct {
	Meta
	Commands []SlashCommand `json:"commands"`
}

// SessionStateChangedMessage (system/session_state_changed): "running" as
// a turn starts, "idle" after its result, "requires_action" while waiting
// for the host. The CLI writes it only with
// CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1 in its environment.
type SessionStateChangedMessage struct {
	Meta
	State string `json:"state"`
}

// CompactBoundaryMessage (system/compact_boundary) marks where the
// conversation was compacted.
type CompactBoundaryMessage struct {
	Meta
	CompactMetadata struct {
		Trigger    string `json:"trigger"` // manual, auto
		PreTokens  int64  `json:"pre_tokens"`
		PostTokens int64  `json:"post_tokens,omitempty"`
	} `json:"compact_metadata"`
}

// HookStartedMessage (system/hook_started): a hook command started.
type HookStartedMessage struct {
	Meta
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
}

// HookProgressMessage (system/hook_progress): a hook command's output so
// far.
type HookProgressMessage struct {
	Meta
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Output    string `json:"output"`
}

// HookResponseMessage (system/hook_response): a hook command finished.
type HookResponseMessage struct {
	Meta
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	Output    string `json:"output"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code,omitempty"`
	Outcome   string `json:"outcome"` // success, error, cancelled
}

// LocalCommandMessage (system/local_command or local_command_output): the
// output of a local slash command.
type LocalCommandMessage struct {
	Meta
	Content string `json:"content"`
	Level   string `json:"level,omitempty"`
}

// TurnDurationMessage (system/turn_duration): how long a turn took.
type TurnDurationMessage struct {
	Meta
	DurationMS   int64 `json:"durationMs"`
	MessageCount int   `json:"messageCount"`
}

// InformationalMessage (system/informational): a notice, e.g. about a
// mode.
type InformationalMessage struct {
	Meta
	Content   string `json:"content"`
	Level     string `json:"level,omitempty"` // info, notice, suggestion, warning
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Tag classifies the notice for a host that filters them.
	Tag string `json:"tag,omitempty"`
	// PreventContinuation is set when the notice ends the turn.
	PreventContinuation bool `json:"prevent_continuation,omitempty"`
}

// PermissionDeniedMessage (system/permission_denied, CLI 2.1.330 and
// later): a tool call was refused without asking the host.
type PermissionDeniedMessage struct {
	Meta
	ToolName           string `json:"tool_name"`
	ToolUseID          string `json:"tool_use_id"`
	AgentID            string `json:"agent_id,omitempty"`
	DecisionReasonType string `json:"decision_reason_type,omitempty"`
	DecisionReason     string `json:"decision_reason,omitempty"`
	Message            string `json:"message"`
}

// SessionTitleChangedMessage (system/session_title_changed, CLI 2.1.330
// and later).
type SessionTitleChangedMessage struct {
	Meta
	Title string `json:"title"`
}

// BackgroundTasksChangedMessage (system/background_tasks_changed, CLI
// 2.1.330 and later): the set of background tasks changed.
type BackgroundTasksChangedMessage struct {
	Meta
	Tasks []BackgroundTask `json:"tasks"`
}

// BackgroundTask is a running background task.
type BackgroundTask struct {
	TaskID       string `json:"task_id"`
	TaskType     string `json:"task_type"`
	SubagentType string `json:"subagent_type,omitempty"`
	Description  string `json:"description"`
	ParentTaskID string `json:"parent_task_id,omitempty"`
}

// FilesPersistedMessage (system/files_persisted): files uploaded for the
// session.
type FilesPersistedMessage struct {
	Meta
	Files []struct {
		Filename string `json:"filename"`
		FileID   string `json:"file_id"`
	} `json:"files"`
	Failed []struct {
		Filename string `json:"filename"`
		Error    string `json:"error"`
	} `json:"failed"`
	// ProcessedAt is when the CLI finished the upload (an ISO 8601 time).
	ProcessedAt string `json:"processed_at,omitempty"`
}

// ElicitationCompleteMessage (system/elicitation_complete): an MCP
// server's elicitation ended.
type ElicitationCompleteMessage struct {
	Meta
	MCPServerName string `json:"mcp_server_name"`
	ElicitationID string `json:"elicitation_id"`
}

// PluginInstallMessage (system/plugin_install): progress installing a
// plugin.
type PluginInstallMessage struct {
	Meta
	Status string `json:"status"`
	Name   string `json:"name,omitempty"`
	Error  string `json:"error,omitempty"`
}

// UnknownSystemMessage is a system subtype this version of Tether does
// not know. Raw has the whole line.
type UnknownSystemMessage struct {
	Meta
	Subtype string `json:"subtype"`
}

func (*InitMessage) isMessage()                   {}
func (*StatusMessage) isMessage()                 {}
func (*APIRetryMessage) isMessage()               {}
func (*ThinkingTokensMessage) isMessage()         {}
func (*TaskStartedMessage) isMessage()            {}
func (*TaskProgressMessage) isMessage()           {}
func (*TaskUpdatedMessage) isMessage()            {}
func (*TaskNotificationMessage) isMessage()       {}
func (*NotificationMessage) isMessage()           {}
func (*CommandsChangedMessage) isMessage()        {}
func (*SessionStateChangedMessage) isMessage()    {}
func (*CompactBoundaryMessage) isMessage()        {}
func (*HookStartedMessage) isMessage()            {}
func (*HookProgressMessage) isMessage()           {}
func (*HookResponseMessage) isMessage()           {}
func (*LocalCommandMessage) isMessage()           {}
func (*TurnDurationMessage) isMessage()           {}
func (*InformationalMessage) isMessage()          {}
func (*PermissionDeniedMessage) isMessage()       {}
func (*SessionTitleChangedMessage) isMessage()    {}
func (*BackgroundTasksChangedMessage) isMessage() {}
func (*FilesPersistedMessage) isMessage()         {}
func (*ElicitationCompleteMessage) isMessage()    {}
func (*PluginInstallMessage) isMessage()          {}
func (*UnknownSystemMessage) isMessage()          {}

// newSystem returns an empty message for a system subtype, nil when the
// subtype is unknown.
func newSystem(subtype string) Message {
	switch subtype {
	case "init":
		return new(InitMessage)
	case "status":
		return new(StatusMessage)
	case "api_retry":
		return new(APIRetryMessage)
	case "thinking_tokens":
		return new(ThinkingTokensMessage)
	case "task_started":
		return new(TaskStartedMessage)
	case "task_progress":
		return new(TaskProgressMessage)
	case "task_updated":
		return new(TaskUpdatedMessage)
	case "task_notification":
		return new(TaskNotificationMessage)
	case "notification":
		return new(NotificationMessage)
	case "commands_changed":
		return new(CommandsChangedMessage)
	case "session_state_changed":
		return new(SessionStateChangedMessage)
	case "compact_boundary":
		return new(CompactBoundaryMessage)
	case "hook_started":
		return new(HookStartedMessage)
	case "hook_progress":
		return new(HookProgressMessage)
	case "hook_response":
		return new(HookResponseMessage)
	case "local_command", "local_command_output":
		return new(LocalCommandMessage)
	case "turn_duration":
		return new(TurnDurationMessage)
	case "informational":
		return new(InformationalMessage)
	case "permission_denied":
		return new(PermissionDeniedMessage)
	case "session_title_changed":
		return new(SessionTitleChangedMessage)
	case "background_tasks_changed":
		return new(BackgroundTasksChangedMessage)
	case "files_persisted":
		return new(FilesPersistedMessage)
	case "elicitation_complete":
		return new(ElicitationCompleteMessage)
	case "plugin_install":
		return new(PluginInstallMessage)
	}
	return newSystemMore(subtype)
}

func decodeSystem(line []byte) (Message, error) {
	subtype, ok := wire.PeekString(line, `{"type":"system","subtype":"`)
	if !ok {
		var h struct {
			Subtype string `json:"subtype"`
		}
		if err := unmarshal(line, &h); err != nil {
			return nil, err
		}
		subtype = h.Subtype
	}
	m := newSystem(subtype)
	if m == nil {
		m = &UnknownSystemMessage{Subtype: subtype}
	}
	if err := unmarshal(line, m); err != nil {
		if !isTypeError(err) {
			return nil, err
		}
		m = &UnknownSystemMessage{Subtype: subtype}
		if err := unmarshal(line, m); err != nil && !isTypeError(err) {
			return nil, err
		}
	}
	m.(rawSetter).setRaw(line)
	return m, nil
}
