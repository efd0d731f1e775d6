package main

// hookSpecs maps the hook inputs sdk.d.ts declares (the members of
// HookInput, each BaseHookInput & the event's own fields) to the Go
// types of package claude: each event's own fields (HookInput, written
// by hand, holds the base's). It was first written from the hand-written
// types it replaces, so that the generated ones keep their names, JSON
// behaviour and documentation: package claude changes only compatibly.
// Named object types of the declarations (McpServerProvenance…) have
// entries of their own, by name. Edit this table, not the generated
// file, and run go generate ./claude.
var hookSpecs = map[string]typeSpec{
	"BackgroundTaskSummary": {
		Go:  "HookBackgroundTask",
		Doc: "HookBackgroundTask is work still running when a Stop hook fires.",
		Fields: []fieldSpec{
			{JSON: "type", Note: "shell, subagent, monitor, workflow, …"},
		},
	},
	"ConfigChangeHookInput": {
		Go:  "ConfigChangeHookInput",
		Doc: "ConfigChangeHookInput: a settings file or skill changed.",
		Fields: []fieldSpec{
			{JSON: "source", Note: "user_settings, project_settings, local_settings, policy_settings, skills"},
		},
	},
	"CwdChangedHookInput": {
		Go:  "CwdChangedHookInput",
		Doc: "CwdChangedHookInput: the working directory changed.",
	},
	"DirectoryAddedHookInput": {
		Go:  "DirectoryAddedHookInput",
		Doc: "DirectoryAddedHookInput: a directory was added to the workspace (CLI 2.1.330 and later).",
		Fields: []fieldSpec{
			{JSON: "source", Note: "slash_command, register_repo_root"},
		},
	},
	"ElicitationHookInput": {
		Go:  "ElicitationHookInput",
		Doc: "ElicitationHookInput: an MCP server asks the user for input; the hook may answer instead (ElicitationHookOutput).",
		Fields: []fieldSpec{
			{JSON: "mode", Note: "form, url"},
			{JSON: "requested_schema", Note: "a JSON schema, for form mode"},
		},
	},
	"ElicitationResultHookInput": {
		Go:  "ElicitationResultHookInput",
		Doc: "ElicitationResultHookInput: the user answered an elicitation; the hook may change the answer before it reaches the server.",
		Fields: []fieldSpec{
			{JSON: "action", Note: "accept, decline, cancel"},
		},
	},
	"FileChangedHookInput": {
		Go:  "FileChangedHookInput",
		Doc: "FileChangedHookInput: a watched file changed (see the WatchPaths of SessionStartHookOutput and CwdChangedHookOutput).",
		Fields: []fieldSpec{
			{JSON: "event", Go: "Change", Note: "change, add, unlink"},
		},
	},
	"InstructionsLoadedHookInput": {
		Go:  "InstructionsLoadedHookInput",
		Doc: "InstructionsLoadedHookInput: an instructions file (CLAUDE.md, a rules file) was loaded into the context.",
		Fields: []fieldSpec{
			{JSON: "memory_type", Note: "User, Project, Local, Managed"},
			{JSON: "load_reason", Note: "session_start, nested_traversal, path_glob_match, include, compact"},
		},
	},
	"McpServerProvenance": {
		Go:  "HookMCPServer",
		Doc: "HookMCPServer says which MCP server serves an mcp__* tool. Trust Source, not the server or tool name: only the host can register an \"sdk\" server.",
		Fields: []fieldSpec{
			{JSON: "source", Note: "sdk, plugin, user, project, local, dynamic, managed, …"},
			{JSON: "built_in", Doc: "BuiltIn (2.1.337 and later, tool hooks only): the app that started the session (Claude Desktop, the VS Code extension) says the server is its own. Some of those run commands or control the computer: check the server and tool names too before allowing a call. False means unknown, not untrusted."},
		},
	},
	"MessageDisplayHookInput": {
		Go:  "MessageDisplayHookInput",
		Doc: "MessageDisplayHookInput: newly completed lines of a streaming assistant message are about to be shown. What the model sees is not affected.",
		Fields: []fieldSpec{
			{JSON: "message_id", Note: "stable across the message's flushes"},
		},
	},
	"NotificationHookInput": {
		Go:  "NotificationHookInput",
		Doc: "NotificationHookInput: the CLI wants the user's attention.",
	},
	"PermissionDeniedHookInput": {
		Go:  "PermissionDeniedHookInput",
		Doc: "PermissionDeniedHookInput: a tool call was refused.",
	},
	"PermissionRequestHookInput": {
		Go:  "PermissionRequestHookInput",
		Doc: "PermissionRequestHookInput: the CLI is about to ask for permission to run a tool; the hook may decide instead (PermissionRequestHookOutput).",
		Fields: []fieldSpec{
			{JSON: "permission_suggestions", Type: "[]PermissionUpdate"},
		},
	},
	"PostCompactHookInput": {
		Go:  "PostCompactHookInput",
		Doc: "PostCompactHookInput: the conversation was compacted.",
	},
	"PostModelSwitchHookInput": {
		Go:  "PostModelSwitchHookInput",
		Doc: "PostModelSwitchHookInput: the model changed (CLI 2.1.330 and later).",
		Fields: []fieldSpec{
			{JSON: "source", Note: "command, picker, sdk, auto, resume"},
			{JSON: "context_tokens", Type: "int64"},
			{JSON: "cache_ttl", Go: "CacheTTL"},
			{JSON: "estimated_cache_write_usd", Type: "float64"},
		},
	},
	"PostToolBatchHookInput": {
		Go:  "PostToolBatchHookInput",
		Doc: "PostToolBatchHookInput: every tool call of one model response has finished, before the next request to the model.",
	},
	"PostToolBatchToolCall": {
		Go:  "HookToolCall",
		Doc: "HookToolCall is one call of a PostToolBatchHookInput.",
	},
	"PostToolUseFailureHookInput": {
		Go:  "PostToolUseFailureHookInput",
		Doc: "PostToolUseFailureHookInput: a tool ran and failed.",
		Fields: []fieldSpec{
			{JSON: "duration_ms", Type: "float64"},
		},
	},
	"PostToolUseHookInput": {
		Go:  "PostToolUseHookInput",
		Doc: "PostToolUseHookInput: a tool ran and succeeded.",
		Fields: []fieldSpec{
			{JSON: "tool_response", Doc: "ToolResponse is the tool's structured result, e.g. for Bash {\"stdout\", \"stderr\", \"interrupted\", …}."},
			{JSON: "duration_ms", Type: "float64", Doc: "DurationMS is how long the tool ran, prompts and hooks excluded."},
		},
	},
	"PreCompactHookInput": {
		Go:  "PreCompactHookInput",
		Doc: "PreCompactHookInput: the conversation is about to be compacted.",
		Fields: []fieldSpec{
			{JSON: "trigger", Note: "manual, auto"},
		},
	},
	"PreModelSwitchHookInput": {
		Go:  "PreModelSwitchHookInput",
		Doc: "PreModelSwitchHookInput: the model is about to change (CLI 2.1.330 and later).",
		Fields: []fieldSpec{
			{JSON: "requested_model", Note: "\"\" for the default"},
			{JSON: "source", Note: "command, picker, sdk"},
			{JSON: "context_tokens", Type: "int64", Doc: "What switching costs: the context the next request resends, and whether the prompt cache would be lost."},
			{JSON: "cache_ttl", Go: "CacheTTL"},
			{JSON: "estimated_cache_write_usd", Type: "float64"},
		},
	},
	"PreSkillShellCommandHookInput": {
		Go:  "PreSkillShellCommandHookInput",
		Doc: "PreSkillShellCommandHookInput: a shell command in a skill's or command's text is about to run (CLI 2.1.332 and later). The hook may let it run or keep it from running (PreSkillShellCommandHookOutput).",
		Fields: []fieldSpec{
			{JSON: "tool_name", Doc: "ToolName is the shell tool that runs the command: Bash or PowerShell."},
			{JSON: "tool_use_id", Doc: "ToolUseID identifies this command; it names no tool call in the transcript."},
			{JSON: "command_name", Doc: "CommandName is the skill or command whose text holds the shell command, and CommandSource where it comes from (projectSettings, userSettings, plugin, …), when the CLI says."},
			{JSON: "invoked_by", Doc: "InvokedBy says who started the load: \"user\" (typed, or sent by a host as a prompt), \"claude\" (the Skill tool, or a turn the model scheduled) or \"other\" (a subagent's preload, a channel message, or not known)."},
		},
	},
	"PreSkillShellCommandHookInput.tool_input": {
		Go:  "SkillShellCommandToolInput",
		Doc: "SkillShellCommandToolInput is the tool_input of a PreSkillShellCommandHookInput.",
		Fields: []fieldSpec{
			{JSON: "command", Doc: "Command is the command as it would run, arguments filled in."},
		},
	},
	"PreToolUseHookInput": {
		Go:  "PreToolUseHookInput",
		Doc: "PreToolUseHookInput: a tool is about to run. The hook may allow it (skipping the permission prompt), deny it, ask, or rewrite its input; see PreToolUseHookOutput.",
		Fields: []fieldSpec{
			{JSON: "tool_input", Note: "as the model wrote it"},
		},
	},
	"SessionCronSummary": {
		Go:  "HookSessionCron",
		Doc: "HookSessionCron is a scheduled task that will wake the session later.",
		Fields: []fieldSpec{
			{JSON: "schedule", Note: "a cron expression"},
		},
	},
	"SessionEndHookInput": {
		Go:  "SessionEndHookInput",
		Doc: "SessionEndHookInput: the session is ending.",
		Fields: []fieldSpec{
			{JSON: "reason", Note: "clear, resume, logout, prompt_input_exit, other"},
		},
	},
	"SessionStartHookInput": {
		Go:  "SessionStartHookInput",
		Doc: "SessionStartHookInput: a session started, resumed, was cleared or compacted.",
		Fields: []fieldSpec{
			{JSON: "source", Note: "startup, resume, clear, compact, fork"},
			{JSON: "agent_type", Doc: "AgentType is the agent the session runs as (Options.Agent), when one was given."},
			{JSON: "seconds_since_last_response", Type: "float64", Doc: "For resume and fork (newer CLIs): how stale the prompt cache is."},
			{JSON: "context_tokens", Type: "int64"},
			{JSON: "estimated_cache_write_usd", Type: "float64"},
		},
	},
	"SetupHookInput": {
		Go:  "SetupHookInput",
		Doc: "SetupHookInput: the CLI runs its setup (--init, maintenance).",
		Fields: []fieldSpec{
			{JSON: "trigger", Note: "init, maintenance"},
		},
	},
	"StopFailureHookInput": {
		Go:  "StopFailureHookInput",
		Doc: "StopFailureHookInput: the turn ended on an API error.",
		Fields: []fieldSpec{
			{JSON: "error", Note: "rate_limit, server_error, authentication_failed, …"},
		},
	},
	"InterruptHookInput": {
		Go:  "InterruptHookInput",
		Doc: "InterruptHookInput: an interrupt ended the main conversation's turn (CLI 2.1.335 and later; not where the work goes on by itself, nor when the CLI is exiting). Its output is ignored.",
		Fields: []fieldSpec{
			{JSON: "source", Note: "user (a person, or a client that does not say who sent it, such as Interrupt), session (another session's Claude) or system"},
			{JSON: "reason", Note: "stop, permission_denied, rewind or other"},
			{JSON: "via", Note: "terminal or client, where known"},
		},
	},
	"StopHookInput": {
		Go:  "StopHookInput",
		Doc: "StopHookInput: the model finished its answer and the turn is about to end. A hook that answers Decision \"block\" makes the model go on, with Reason as feedback.",
		Fields: []fieldSpec{
			{JSON: "stop_hook_active", Doc: "StopHookActive is true when the model is already going on because of a Stop hook: a hook that always blocks would loop forever."},
		},
	},
	"SubagentStartHookInput": {
		Go:  "SubagentStartHookInput",
		Doc: "SubagentStartHookInput: a subagent started.",
	},
	"SubagentStopHookInput": {
		Go:  "SubagentStopHookInput",
		Doc: "SubagentStopHookInput: a subagent finished its answer; like Stop, a \"block\" decision makes it go on.",
	},
	"TaskCompletedHookInput": {
		Go:  "TaskCompletedHookInput",
		Doc: "TaskCompletedHookInput: a task was completed.",
	},
	"TaskCreatedHookInput": {
		Go:  "TaskCreatedHookInput",
		Doc: "TaskCreatedHookInput: a task was created on the session's task list.",
	},
	"TeammateIdleHookInput": {
		Go:  "TeammateIdleHookInput",
		Doc: "TeammateIdleHookInput: a teammate has nothing to do.",
	},
	"UserPromptExpansionHookInput": {
		Go:  "UserPromptExpansionHookInput",
		Doc: "UserPromptExpansionHookInput: a slash command or an MCP prompt was expanded into a prompt.",
		Fields: []fieldSpec{
			{JSON: "expansion_type", Note: "slash_command, mcp_prompt"},
		},
	},
	"UserPromptSubmitHookInput": {
		Go:  "UserPromptSubmitHookInput",
		Doc: "UserPromptSubmitHookInput: a prompt is about to go to the model.",
		Fields: []fieldSpec{
			{JSON: "source", Doc: "Source says who wrote the prompt: \"sdk\" for a host like Tether, \"user\", \"system\", … (newer CLIs)."},
		},
	},
	"WorktreeCreateHookInput": {
		Go:  "WorktreeCreateHookInput",
		Doc: "WorktreeCreateHookInput: the CLI needs a worktree; the hook creates it and answers with its path (WorktreeCreateHookOutput).",
	},
	"WorktreeRemoveHookInput": {
		Go:  "WorktreeRemoveHookInput",
		Doc: "WorktreeRemoveHookInput: a worktree is no longer needed.",
	},
}
