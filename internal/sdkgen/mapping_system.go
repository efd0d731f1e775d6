package main

// systemSpecs maps the system messages sdk.d.ts declares (the members of
// SDKMessage whose type is "system") to the Go types of package claude.
// It was first written from the hand-written types it replaces, so that
// the generated ones keep their names, JSON behaviour and documentation:
// package claude changes only compatibly. Every message embeds Meta
// (uuid, session_id and the raw line) in place of the declared uuid and
// session_id. Edit this table, not the generated file, and run
// go generate ./claude.
var systemSpecs = map[string]typeSpec{
	"SDKAPIRetryMessage": {
		Go:  "APIRetryMessage",
		Doc: "APIRetryMessage (system/api_retry) says an API call failed and will be retried after RetryDelayMS.",
		Fields: []fieldSpec{
			{JSON: "retry_delay_ms", Type: "float64"},
			{JSON: "error_status", Doc: "ErrorStatus is the HTTP status, 0 when there was none."},
			{JSON: "error", Doc: "Error is server_error, overloaded, rate_limit, authentication_failed, …"},
			{JSON: "no_response", Doc: "NoResponse is set when the API sent no response headers within the first-byte window (CLAUDE_STREAM_FIRST_BYTE_TIMEOUT_MS)."},
		},
	},
	"SDKAPIRetryMessage.no_response": {
		Go:  "APINoResponse",
		Doc: "APINoResponse is APIRetryMessage.NoResponse: how long the failed attempt waited for headers, and how long the retry will wait.",
		Fields: []fieldSpec{
			{JSON: "waited_ms", Type: "int64"},
			{JSON: "retry_wait_ms", Type: "int64"},
		},
	},
	"SDKBackgroundTasksChangedMessage": {
		Go:  "BackgroundTasksChangedMessage",
		Doc: "BackgroundTasksChangedMessage (system/background_tasks_changed, CLI 2.1.330 and later): the set of background tasks changed.",
	},
	"SDKBackgroundTasksChangedMessage.tasks": {
		Go:  "BackgroundTask",
		Doc: "BackgroundTask is a running background task.",
	},
	"SDKCommandsChangedMessage": {
		Go:  "CommandsChangedMessage",
		Doc: "CommandsChangedMessage (system/commands_changed): the slash commands changed (after reload_plugins).",
		Fields: []fieldSpec{
			{JSON: "commands", Type: "[]SlashCommand"},
		},
	},
	"SDKCompactBoundaryMessage": {
		Go:  "CompactBoundaryMessage",
		Doc: "CompactBoundaryMessage (system/compact_boundary) marks where the conversation was compacted.",
		Fields: []fieldSpec{
			// An anonymous struct cannot gain fields compatibly: it keeps
			// the fields it had (the declaration's duration_ms and the
			// preserved segment are in Raw).
			{JSON: "compact_metadata", Type: "struct {\nTrigger string `json:\"trigger\"` // manual, auto\nPreTokens int64 `json:\"pre_tokens\"`\nPostTokens int64 `json:\"post_tokens,omitempty\"`\n}"},
		},
	},
	"SDKControlRequestProgressMessage": {
		Go:  "ControlRequestProgressMessage",
		Doc: "ControlRequestProgressMessage (system/control_request_progress) reports progress on a long-running control request the host sent, named by RequestID: Status \"started\", or \"api_retry\" with the retry counters.",
		Fields: []fieldSpec{
			{JSON: "retry_delay_ms", Type: "float64"},
		},
	},
	"SDKElicitationCompleteMessage": {
		Go:  "ElicitationCompleteMessage",
		Doc: "ElicitationCompleteMessage (system/elicitation_complete): an MCP server's elicitation ended.",
	},
	"SDKFilesPersistedEvent": {
		Go:  "FilesPersistedMessage",
		Doc: "FilesPersistedMessage (system/files_persisted): files uploaded for the session.",
		Fields: []fieldSpec{
			// Anonymous structs, as they have always been.
			{JSON: "files", Type: "[]struct {\nFilename string `json:\"filename\"`\nFileID string `json:\"file_id\"`\n}"},
			{JSON: "failed", Type: "[]struct {\nFilename string `json:\"filename\"`\nError string `json:\"error\"`\n}"},
			{JSON: "processed_at", Tag: "processed_at,omitempty", Doc: "ProcessedAt is when the CLI finished the upload (an ISO 8601 time)."},
		},
	},
	"SDKHookProgressMessage": {
		Go:  "HookProgressMessage",
		Doc: "HookProgressMessage (system/hook_progress): a hook command's output so far.",
	},
	"SDKHookResponseMessage": {
		Go:  "HookResponseMessage",
		Doc: "HookResponseMessage (system/hook_response): a hook command finished.",
		Fields: []fieldSpec{
			{JSON: "outcome", Note: "success, error, cancelled"},
		},
	},
	"SDKHookStartedMessage": {
		Go:  "HookStartedMessage",
		Doc: "HookStartedMessage (system/hook_started): a hook command started.",
	},
	"SDKInformationalMessage": {
		Go:  "InformationalMessage",
		Doc: "InformationalMessage (system/informational): a notice, e.g. about a mode.",
		// Order: as the hand-written type had it.
		Order: []string{"content", "level", "tool_use_id", "tag", "prevent_continuation"},
		Fields: []fieldSpec{
			{JSON: "level", Tag: "level,omitempty", Note: "info, notice, suggestion, warning"},
			{JSON: "tag", Doc: "Tag classifies the notice for a host that filters them."},
			{JSON: "prevent_continuation", Doc: "PreventContinuation is set when the notice ends the turn."},
		},
	},
	"SDKLocalCommandOutputMessage": {
		Go:      "LocalCommandMessage",
		Aliases: []string{"local_command"}, // what 2.1.197 calls it
		Doc:     "LocalCommandMessage (system/local_command or local_command_output): the output of a local slash command.",
		Fields: []fieldSpec{
			{JSON: "level", Go: "Level", Type: "string", Extra: true},
		},
	},
	"SDKMemoryRecallMessage": {
		Go:  "MemoryRecallMessage",
		Doc: "MemoryRecallMessage (system/memory_recall) lists the memory files the CLI recalled into the conversation.",
		Fields: []fieldSpec{
			{JSON: "mode", Doc: "Mode is \"select\" or \"synthesize\"."},
		},
	},
	"SDKMemoryRecallMessage.memories": {
		Go:  "RecalledMemory",
		Doc: "RecalledMemory is one memory of a MemoryRecallMessage.",
		Fields: []fieldSpec{
			{JSON: "scope", Doc: "Scope is \"personal\", \"team\" or \"organization\"."},
		},
	},
	"SDKMirrorErrorMessage": {
		Go:  "MirrorErrorMessage",
		Doc: "MirrorErrorMessage (system/mirror_error) says writing a transcript to a session mirror failed.",
	},
	"SDKMirrorErrorMessage.key": {
		Go:  "MirrorKey",
		Doc: "MirrorKey names a mirrored transcript.",
	},
	"SDKModelRefusalFallbackMessage": {
		Go:  "ModelRefusalFallbackMessage",
		Doc: "ModelRefusalFallbackMessage (system/model_refusal_fallback) says the model refused and the CLI switched models: Direction \"retry\" (the turn is retried on FallbackModel), \"revert\" or \"sticky\". The messages in RetractedMessageUUIDs are withdrawn; remove them from a display.",
		Fields: []fieldSpec{
			{JSON: "content", Doc: "Content is the notice to show the user."},
		},
	},
	"SDKModelRefusalNoFallbackMessage": {
		Go:  "ModelRefusalNoFallbackMessage",
		Doc: "ModelRefusalNoFallbackMessage (system/model_refusal_no_fallback) says the model refused and no fallback model was available: the turn ends.",
	},
	"SDKNotificationMessage": {
		Go:  "NotificationMessage",
		Doc: "NotificationMessage (system/notification) is a notice for the user, such as a Stop hook's error.",
		Fields: []fieldSpec{
			{JSON: "color", Doc: "Color and TimeoutMS are display hints: a theme colour name and how long to show the notice."},
			{JSON: "timeout_ms", Type: "int64"},
		},
	},
	"SDKPermissionDeniedMessage": {
		Go:  "PermissionDeniedMessage",
		Doc: "PermissionDeniedMessage (system/permission_denied, CLI 2.1.330 and later): a tool call was refused without asking the host.",
	},
	"SDKPluginInstallMessage": {
		Go:  "PluginInstallMessage",
		Doc: "PluginInstallMessage (system/plugin_install): progress installing a plugin.",
	},
	"SDKSessionStateChangedMessage": {
		Go:  "SessionStateChangedMessage",
		Doc: "SessionStateChangedMessage (system/session_state_changed): \"running\" as a turn starts, \"idle\" after its result, \"requires_action\" while waiting for the host. The CLI writes it only with CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1 in its environment.",
	},
	"SDKSessionWritesLostMessage": {
		Go:  "SessionWritesLostMessage",
		Doc: "SessionWritesLostMessage (system/session_writes_lost) says the CLI could not write its session file or global config: the disk is full (ErrorCode \"ENOSPC\") or over quota (\"EDQUOT\"). Lost names what was not written (\"transcript\", \"global_config\"); a session whose transcript was lost cannot be resumed completely.",
	},
	"SDKStatusMessage": {
		Go:  "StatusMessage",
		Doc: "StatusMessage (system/status) reports the session's activity: \"requesting\" before each API call (with partial messages), \"compacting\", or \"\" (null); PermissionMode is set after a mode change.",
		Fields: []fieldSpec{
			{JSON: "permissionMode", Type: "PermissionMode"},
		},
	},
	"SDKSystemMessage": {
		Go:  "InitMessage",
		Doc: "InitMessage (system/init) starts every turn, not the process: the CLI writes it after it takes a user message off its queue. It reports the session as the turn sees it.",
		// Order: as the hand-written type had it.
		Order: []string{"cwd", "tools", "mcp_servers", "model", "permissionMode", "slash_commands", "apiKeySource", "claude_code_version", "output_style", "agents", "skills", "plugins", "betas", "fast_mode_state", "fast_mode_disabled_reason", "capabilities", "terminal_slash_commands", "plugin_errors", "effort", "view_mode"},
		Fields: []fieldSpec{
			{JSON: "permissionMode", Type: "PermissionMode"},
			{JSON: "agents", Tag: "agents"},
			{JSON: "fast_mode_disabled_reason", Doc: "FastModeDisabledReason says why fast mode is off, when it is."},
			{JSON: "capabilities", Doc: "Capabilities are feature flags newer CLIs advertise."},
			{JSON: "terminal_slash_commands", Doc: "TerminalSlashCommands are the slash commands that run only in the CLI's own terminal UI (newer CLIs)."},
			{JSON: "plugin_errors", Doc: "PluginErrors are the plugins that failed to load, or loaded without a component; absent when there were none (newer CLIs)."},
			{JSON: "effort", Doc: "Effort is the session's effort level (low, medium, high, xhigh, max); empty when the CLI did not say or sent null."},
			{JSON: "sandbox_enabled", Go: "SandboxEnabled", Type: "*bool", Extra: true, Doc: "SandboxEnabled says whether the session runs its commands in the sandbox; nil when the CLI does not say (before 2.1.332). The CLI sends it; the SDK (0.3.332) does not declare it."},
			{JSON: "view_mode", Doc: "ViewMode is \"focus\" or \"default\" (newer CLIs)."},
		},
	},
	"SDKSystemMessage.mcp_servers": {Go: "MCPServerStatus", Skip: "MCPServerStatus, in mcp.go: the mcp_status answer shares it, with more fields"},
	"SDKSystemMessage.plugin_errors": {
		Go:  "PluginError",
		Doc: "PluginError is a plugin's load-time failure in InitMessage.PluginErrors. Type is from an open set (path-not-found, generic-error, manifest-validation-error, …): treat an unknown one as generic.",
		Fields: []fieldSpec{
			{JSON: "plugin", Doc: "Plugin is name@marketplace, or inline[N] / synced[N] for a directory entry that failed before it had a name."},
			{JSON: "managed_lock", Doc: "ManagedLock is set when managed settings enable the plugin."},
		},
	},
	"SDKSystemMessage.plugin_errors.managed_lock": {
		Go:  "PluginManagedLock",
		Doc: "PluginManagedLock says a plugin is enabled by managed settings.",
	},
	"SDKSystemMessage.plugins": {
		Go:  "PluginInfo",
		Doc: "PluginInfo names a loaded plugin.",
	},
	"SDKTaskNotificationMessage": {
		Go:  "TaskNotificationMessage",
		Doc: "TaskNotificationMessage (system/task_notification): a task finished.",
		// Order: as the hand-written type had it.
		Order: []string{"task_id", "tool_use_id", "status", "output_file", "summary", "usage", "run_id", "resource_links", "skip_transcript", "ambient"},
		Fields: []fieldSpec{
			{JSON: "status", Note: "completed, failed, stopped"},
			{JSON: "run_id", Doc: "RunID is the run_id the task's task_* messages carried."},
			{JSON: "resource_links", Type: "[]MCPResourceLink", Doc: "ResourceLinks are MCP resource links the task produced."},
			{JSON: "reason", Doc: "Reason is set only when a resumed CLI closed the task: worker_restart (its worker restarted and found it orphaned), unfinished_at_resume (the transcript had no record of its end, 2.1.337 and later; no turn follows). New values are additive."},
			{JSON: "task_type", Doc: "TaskType is local_agent or local_workflow, and only with reason unfinished_at_resume: this CLI sent no task_started for the task."},
		},
	},
	"SDKTaskNotificationMessage.usage": {
		Go:  "TaskUsage",
		Doc: "TaskUsage is a background task's running usage.",
		Fields: []fieldSpec{
			{JSON: "total_tokens", Type: "int64"},
			{JSON: "tool_uses", Type: "int64"},
			{JSON: "duration_ms", Type: "int64"},
		},
	},
	"SDKTaskProgressMessage": {
		Go:  "TaskProgressMessage",
		Doc: "TaskProgressMessage (system/task_progress): a task's progress.",
		// Order: as the hand-written type had it.
		Order: []string{"task_id", "tool_use_id", "description", "subagent_type", "usage", "last_tool_name", "summary", "run_id"},
	},
	"SDKTaskProgressMessage.usage": {Go: "TaskUsage"}, // written for SDKTaskNotificationMessage.usage
	"SDKTaskStartedMessage": {
		Go:  "TaskStartedMessage",
		Doc: "TaskStartedMessage (system/task_started): a subagent or background task started.",
		// Order: as the hand-written type had it.
		Order: []string{"task_id", "tool_use_id", "description", "subagent_type", "task_type", "prompt", "run_id", "is_backgrounded", "spawn_depth", "parent_task_id", "workflow_name", "skip_transcript", "ambient"},
		Fields: []fieldSpec{
			{JSON: "run_id", Doc: "RunID tells one run of a task from another (newer CLIs)."},
			{JSON: "spawn_depth", Doc: "SpawnDepth is how deep in the subagent tree the task started."},
			{JSON: "skip_transcript", Doc: "SkipTranscript marks a task that writes no transcript of its own."},
			{JSON: "ambient", Doc: "Ambient marks a task that is not activity (a watcher): leave it out of activity indicators."},
		},
	},
	"SDKTaskUpdatedMessage": {
		Go:  "TaskUpdatedMessage",
		Doc: "TaskUpdatedMessage (system/task_updated): a change to a task's state.",
		Fields: []fieldSpec{
			// An anonymous struct cannot gain fields compatibly: it keeps
			// the fields it had (the declaration's total_paused_ms and
			// is_backgrounded are in Raw).
			{JSON: "patch", Type: "struct {\nStatus string `json:\"status,omitempty\"`\nDescription string `json:\"description,omitempty\"`\nEndTime int64 `json:\"end_time,omitempty\"`\nError string `json:\"error,omitempty\"`\n}"},
		},
	},
	"SDKThinkingTokensMessage": {
		Go:  "ThinkingTokensMessage",
		Doc: "ThinkingTokensMessage (system/thinking_tokens) estimates thinking tokens as they stream.",
		Fields: []fieldSpec{
			{JSON: "estimated_tokens", Type: "int64"},
			{JSON: "estimated_tokens_delta", Type: "int64"},
			{JSON: "user_message_uuid", Doc: "UserMessageUUID is the UUID of the host message whose turn this is (newer CLIs)."},
		},
	},
	"SDKWorkerShuttingDownMessage": {
		Go:  "WorkerShuttingDownMessage",
		Doc: "WorkerShuttingDownMessage (system/worker_shutting_down) says the CLI process is about to exit (a remote worker being replaced, a shutdown signal), with the reason.",
	},
}
