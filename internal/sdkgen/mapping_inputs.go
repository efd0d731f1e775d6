package main

// inputSpecs maps the declarations of sdk-tools.d.ts's ToolInputSchemas (the built-in tools' inputs) to the Go
// types of package claude. It was first written from the hand-written
// types it replaces, so that the generated ones keep their names, JSON
// behaviour and documentation: package claude changes only compatibly.
// A Type or Go override says where Tether has always decoded something
// tighter or named it otherwise than the declaration would give; edit
// this table, not the generated files, and run go generate ./claude.
var inputSpecs = map[string]typeSpec{
	"AgentInput": {
		// Order: as the hand-written type had it.
		Order:   []string{"description", "prompt", "subagent_type", "model", "effort", "run_in_background", "name", "mode", "isolation", "team_name"},
		Go:      "AgentInput",
		Aliases: []string{"Task"}, // the Agent tool's former name, still in system/init
		Doc:     "AgentInput starts a subagent (the Agent tool, formerly Task).",
		Fields: []fieldSpec{
			{JSON: "description", Note: "a 3-5 word summary of the task"},
			{JSON: "prompt", Note: "the task, as the agent's first message"},
			{JSON: "subagent_type", Doc: "SubagentType names the agent: one of Options.Agents, a built-in (\"general-purpose\", \"Explore\", \"Plan\", …) or a settings agent."},
			{JSON: "model", Note: "\"sonnet\", \"opus\", \"haiku\"…; overrides the agent's"},
			{JSON: "effort", Type: "Effort", Note: "2.1.330"},
			{JSON: "run_in_background", Type: "*bool", Doc: "RunInBackground: the default is the foreground in 2.1.197 and the background in 2.1.330."},
			{JSON: "name", Note: "makes a background agent addressable by SendMessage"},
			{JSON: "mode", Type: "PermissionMode"},
			{JSON: "isolation", Note: "\"worktree\" or \"remote\""},
			{JSON: "team_name", Doc: "TeamName is deprecated and ignored by the CLI (a session has one implicit team); read for older transcripts."},
		},
	},
	"ArtifactInput": {
		// Order: as the hand-written type had it.
		Order: []string{"action", "file_path", "file_paths", "icon", "favicon", "limit", "page_token", "scope", "title", "description", "label", "url", "prompt", "force", "pin", "out_dir", "asset_id", "after", "capabilities", "contract"},
		Go:    "ArtifactInput",
		Doc:   "ArtifactInput publishes an HTML page as a claude.ai artifact, or lists, reads, watches, pins artifacts or manages their assets (Action).",
		Fields: []fieldSpec{
			{JSON: "action", Doc: "Action is \"publish\" (the default when empty), \"list\", \"read\", \"list_types\", \"watch\", \"unwatch\", \"status\", \"upload_asset\", \"list_assets\", \"read_asset\", \"delete_asset\", \"pin\" or \"unpin\"."},
			{JSON: "file_paths", Type: "[]string", Doc: "FilePaths uploads several assets at once (1–25), in place of FilePath."},
			{JSON: "favicon", Note: "deprecated: Icon"},
			{JSON: "limit", Doc: "Limit, PageToken and Scope (\"mine\", \"shared\", \"all\") page a list."},
			{JSON: "url", Doc: "URL is the artifact to update, read, watch, pin, …"},
			{JSON: "prompt", Note: "read: what to extract"},
			{JSON: "force", Doc: "Force overwrites a newer version; only on the user's word."},
			{JSON: "capabilities", Doc: "Capabilities are the page's runtime capabilities, {name: config}."},
			{JSON: "contract", Doc: "Contract is the artifact's runtime version (\"latest\" or a version)."},
		},
	},
	"AskUserQuestionInput": {
		Go:  "AskUserQuestionInput",
		Doc: "AskUserQuestionInput asks the user one to four multiple-choice questions. Answer them with AnswerQuestions.",
		Fields: []fieldSpec{
			{JSON: "questions", Type: "[]Question"},
			{JSON: "answers", Type: "map[string]string", Doc: "Answers maps a question's text to the chosen option's label (labels joined by commas for MultiSelect questions, or free text). The model leaves it empty; the host fills it in."},
			{JSON: "annotations", Type: "map[string]QuestionAnnotation", Doc: "Annotations holds per-question notes, keyed by question text."},
			{JSON: "metadata", Type: "*QuestionMetadata"},
		},
	},
	"AskUserQuestionInput.metadata": {
		Go:  "QuestionMetadata",
		Doc: "QuestionMetadata says where questions came from.",
	},
	"BashInput": {
		Go:  "BashInput",
		Doc: "BashInput runs a shell command.",
		Fields: []fieldSpec{
			{JSON: "timeout", Note: "milliseconds, at most 600000"},
			{JSON: "description", Note: "what the command does, in a few words"},
			{JSON: "run_in_background", Doc: "RunInBackground starts the command as a background task."},
		},
	},
	"ClaudeDesignInput": {
		Go:  "ClaudeDesignInput",
		Doc: "ClaudeDesignInput runs a Claude Design operation; \"list\" discovers the operations and their argument schemas.",
		Fields: []fieldSpec{
			{JSON: "arguments", Doc: "Arguments is the operation's input, a JSON object."},
		},
	},
	"CronCreateInput": {
		Go:  "CronCreateInput",
		Doc: "CronCreateInput schedules a prompt on a cron schedule.",
		Fields: []fieldSpec{
			{JSON: "cron", Note: "five fields, local time"},
			{JSON: "recurring", Type: "*bool", Doc: "Recurring defaults to true; false fires once."},
			{JSON: "durable", Note: "survive restarts"},
		},
	},
	"CronDeleteInput": {
		Go:  "CronDeleteInput",
		Doc: "CronDeleteInput removes a scheduled prompt.",
	},
	"CronListInput": {
		Go:  "CronListInput",
		Doc: "CronListInput lists the session's scheduled prompts (no fields).",
	},
	"EnterPlanModeInput": {
		Go:  "EnterPlanModeInput",
		Doc: "EnterPlanModeInput asks to switch to plan mode (no fields).",
	},
	"EnterWorktreeInput": {
		Go:  "EnterWorktreeInput",
		Doc: "EnterWorktreeInput switches the session into a git worktree, new or existing.",
		Fields: []fieldSpec{
			{JSON: "name", Note: "for a new worktree"},
			{JSON: "path", Note: "of an existing worktree"},
		},
	},
	"ExitPlanModeInput": {
		Go:  "ExitPlanModeInput",
		Doc: "ExitPlanModeInput asks to leave plan mode and carry out the plan, which the CLI keeps in a file.",
		Fields: []fieldSpec{
			{JSON: "allowedPrompts", Doc: "AllowedPrompts are the kinds of action the plan needs permission for, e.g. {Tool: \"Bash\", Prompt: \"run tests\"}."},
		},
	},
	"ExitPlanModeInput.allowedPrompts": {
		Go:  "AllowedPrompt",
		Doc: "AllowedPrompt is a permission a plan asks for, described in words.",
	},
	"ExitWorktreeInput": {
		Go:  "ExitWorktreeInput",
		Doc: "ExitWorktreeInput leaves the worktree.",
		Fields: []fieldSpec{
			{JSON: "action", Note: "\"keep\" or \"remove\""},
		},
	},
	"FileEditInput": {
		Go:   "EditInput",
		Tool: "Edit",
		Doc:  "EditInput replaces text in a file.",
		Fields: []fieldSpec{
			{JSON: "replace_all", Note: "every occurrence, not exactly one"},
		},
	},
	"FileReadInput": {
		Go:   "ReadInput",
		Tool: "Read",
		Doc:  "ReadInput reads a file (text, image, PDF or notebook).",
		Fields: []fieldSpec{
			{JSON: "offset", Note: "first line to read"},
			{JSON: "limit", Note: "number of lines"},
			{JSON: "pages", Note: "PDF page range, e.g. \"1-5\""},
		},
	},
	"FileWriteInput": {
		Go:   "WriteInput",
		Tool: "Write",
		Doc:  "WriteInput writes a whole file.",
	},
	"GlobInput": {
		Go:  "GlobInput",
		Doc: "GlobInput finds files by name pattern.",
		Fields: []fieldSpec{
			{JSON: "path", Note: "the directory to search; \"\" = the working directory"},
		},
	},
	"GrepInput": {
		// Order: as the hand-written type had it.
		Order: []string{"pattern", "path", "glob", "type", "output_mode", "-A", "-B", "-C", "context", "-n", "-i", "-o", "head_limit", "offset", "multiline"},
		Go:    "GrepInput",
		Doc:   "GrepInput searches file contents with a regular expression (ripgrep).",
		Fields: []fieldSpec{
			{JSON: "glob", Note: "e.g. \"*.go\""},
			{JSON: "type", Note: "a ripgrep file type, e.g. \"go\""},
			{JSON: "output_mode", Doc: "OutputMode is \"files_with_matches\" (the default), \"content\" or \"count\"."},
			{JSON: "-B", Go: "Before"},
			{JSON: "-A", Go: "After", Doc: "Lines of context, for OutputMode \"content\": After (-A), Before (-B), and around (Context, or its alias C)."},

			{JSON: "-n", Go: "LineNumbers", Type: "*bool", Doc: "LineNumbers (-n) defaults to true."},
			{JSON: "-i", Go: "CaseInsensitive"},
			{JSON: "-o", Go: "OnlyMatching"},
			{JSON: "head_limit", Type: "*int", Doc: "HeadLimit keeps the first N lines or entries; nil means 250 and 0 means all."},
			{JSON: "offset", Note: "entries to skip first"},
		},
	},
	"ListMcpResourcesInput": {
		Go:   "ListMCPResourcesInput",
		Tool: "ListMcpResourcesTool",
		Doc:  "ListMCPResourcesInput lists MCP resources (the ListMcpResourcesTool tool).",
		Fields: []fieldSpec{
			{JSON: "server", Note: "\"\" = every server"},
		},
	},
	"McpInput": {Skip: "an MCP tool's own input type: DecodeInput"},
	"MonitorInput": {
		Go:  "MonitorInput",
		Doc: "MonitorInput watches a command's output lines, or a WebSocket's frames, as events for the model, until Timeout.",
		Fields: []fieldSpec{
			{JSON: "description", Doc: "Description says what is watched (shown in notifications)."},
			{JSON: "timeout_ms", Doc: "TimeoutMS ends the watch (the CLI caps it at 30 minutes)."},
			{JSON: "command", Doc: "Command is a shell command whose stdout lines are the events."},
			{JSON: "ws", Go: "WS", Type: "*MonitorWebSocket", Doc: "WS is a WebSocket whose text frames are the events; not with Command."},
		},
	},
	"MonitorInput.ws": {
		Go:  "MonitorWebSocket",
		Doc: "MonitorWebSocket is the WebSocket a MonitorInput opens.",
	},
	"NotebookEditInput": {
		Go:  "NotebookEditInput",
		Doc: "NotebookEditInput edits a Jupyter notebook cell.",
		Fields: []fieldSpec{
			{JSON: "cell_type", Note: "\"code\" or \"markdown\""},
			{JSON: "edit_mode", Note: "\"replace\" (default), \"insert\" or \"delete\""},
		},
	},
	"OfferChromeSetupInput": {
		Go:  "OfferChromeSetupInput",
		Doc: "OfferChromeSetupInput offers to connect the user's own Chrome.",
		Fields: []fieldSpec{
			{JSON: "reason", Doc: "Reason says what the task needs the user's browser for."},
		},
	},
	"ProjectsInput": {
		Go:  "ProjectsInput",
		Doc: "ProjectsInput reads or writes a claude.ai project's knowledge base.",
		Fields: []fieldSpec{
			{JSON: "method", Doc: "Method is \"project_info\", \"project_read\", \"project_search\", \"project_write\", \"project_delete\", \"project_memory_list\" or \"project_memory_read\"."},
			{JSON: "content", Doc: "Content (inline text) or LocalPath (a file to upload) for project_write."},
			{JSON: "query", Doc: "Query and N (hits, default 5) for project_search."},
		},
	},
	"ProposeGoalInput": {
		Go:  "ProposeGoalInput",
		Doc: "ProposeGoalInput proposes a completion condition for the session (/goal).",
		Fields: []fieldSpec{
			{JSON: "ask_user", Type: "*bool", Doc: "AskUser asks for approval first; nil means true."},
		},
	},
	"ProposeSkillsInput": {
		Go:   "ProposeSkillsInput",
		Tool: "propose_skills",
		Doc:  "ProposeSkillsInput proposes new skills or improvements to skills (the propose_skills tool).",
		Fields: []fieldSpec{
			{JSON: "proposals", Type: "[]SkillProposal", Note: "1–3"},
		},
	},
	"PushNotificationInput": {
		Go:  "PushNotificationInput",
		Doc: "PushNotificationInput sends the user a push notification.",
		Fields: []fieldSpec{
			{JSON: "status", Note: "\"proactive\""},
		},
	},
	"ReadMcpResourceDirInput": {
		Go:   "ReadMCPResourceDirInput",
		Tool: "ReadMcpResourceDirTool",
		Doc:  "ReadMCPResourceDirInput lists a directory resource of an MCP server.",
	},
	"ReadMcpResourceInput": {
		Go:   "ReadMCPResourceInput",
		Tool: "ReadMcpResourceTool",
		Doc:  "ReadMCPResourceInput reads an MCP resource (the ReadMcpResourceTool tool).",
	},
	"ReadNotificationsInput": {
		Go:  "ReadNotificationsInput",
		Doc: "ReadNotificationsInput reads the notifications queued for the session (no fields).",
	},
	"RefreshMcpToolsInput": {
		Go:  "RefreshMCPToolsInput",
		Doc: "RefreshMCPToolsInput re-lists the tools of one connected MCP server, or of all of them when Server is empty.",
	},
	"RemoteTriggerInput": {
		Go:  "RemoteTriggerInput",
		Doc: "RemoteTriggerInput manages remote triggers (scheduled cloud agents).",
		Fields: []fieldSpec{
			{JSON: "action", Doc: "Action is \"list\", \"get\", \"create\", \"update\", \"run\", \"create_webhook_trigger\", \"list_runs\" or \"get_run_log\"."},
			{JSON: "body", Doc: "Body is the trigger, a JSON object, for create and update."},
		},
	},
	"ReportFindingsInput": {
		Go:  "ReportFindingsInput",
		Doc: "ReportFindingsInput reports a code review's findings.",
		Fields: []fieldSpec{
			{JSON: "level", Type: "Effort", Doc: "Level is the review's effort level."},
		},
	},
	"ReportFindingsInput.findings": {
		Go:  "ReviewFinding",
		Doc: "ReviewFinding is one finding of a ReportFindingsInput.",
		Fields: []fieldSpec{
			{JSON: "severity", Doc: "Severity is \"important\", \"pre_existing\" or \"nit\"."},
			{JSON: "verdict", Doc: "Verdict is \"CONFIRMED\" or \"PLAUSIBLE\" after a verify pass."},
			{JSON: "outcome", Doc: "Outcome is \"fixed\", \"skipped\" or \"no_change_needed\" on a re-report."},
		},
	},
	"ScheduleWakeupInput": {
		Go:  "ScheduleWakeupInput",
		Doc: "ScheduleWakeupInput schedules the next turn of a /loop.",
		Fields: []fieldSpec{
			{JSON: "delaySeconds", Doc: "DelaySeconds is clamped by the CLI to 60–3600."},
			{JSON: "stop", Doc: "Stop ends the loop; the other fields are then ignored."},
			{JSON: "noop", Doc: "Noop says nothing changed since the last wake-up."},
		},
	},
	"SendFeedbackInput": {
		Go:  "SendFeedbackInput",
		Doc: "SendFeedbackInput files feedback about Claude Code.",
		Fields: []fieldSpec{
			{JSON: "type", Doc: "Type is \"bug\", \"idea\" or \"missing_capability\"."},
			{JSON: "failure_mode", Doc: "FailureMode names a model-behaviour failure (\"instruction_following\", \"overeager\", …, \"other\")."},
			{JSON: "task_category", Doc: "TaskCategory is \"code_edit\", \"debug\", \"explain\", \"plan\", \"shell\", \"search\", \"review\" or \"other\"."},
		},
	},
	"ShowOnboardingRolePickerInput": {
		Go:  "ShowOnboardingRolePickerInput",
		Doc: "ShowOnboardingRolePickerInput shows the onboarding role picker (no fields).",
	},
	"TaskCreateInput": {
		Go:  "TaskCreateInput",
		Doc: "TaskCreateInput adds a task to the session's task list.",
		Fields: []fieldSpec{
			{JSON: "metadata", Note: "a JSON object"},
		},
	},
	"TaskGetInput": {
		Go:  "TaskGetInput",
		Doc: "TaskGetInput reads a task.",
	},
	"TaskListInput": {
		Go:  "TaskListInput",
		Doc: "TaskListInput lists the session's tasks (no fields).",
	},
	"TaskStopInput": {
		Go:  "TaskStopInput",
		Doc: "TaskStopInput stops a background task.",
		Fields: []fieldSpec{
			{JSON: "shell_id", Note: "deprecated: TaskID"},
		},
	},
	"TaskUpdateInput": {
		Go:  "TaskUpdateInput",
		Doc: "TaskUpdateInput changes a task.",
		Fields: []fieldSpec{
			{JSON: "status", Note: "\"pending\", \"in_progress\", \"completed\" or \"deleted\""},
			{JSON: "metadata", Note: "keys to merge; null deletes one"},
		},
	},
	"TodoWriteInput": {
		Go:  "TodoWriteInput",
		Doc: "TodoWriteInput replaces the session's todo list.",
	},
	"TodoWriteInput.todos": {
		Go:  "Todo",
		Doc: "Todo is one item of a todo list.",
		Fields: []fieldSpec{
			{JSON: "status", Note: "\"pending\", \"in_progress\" or \"completed\""},
			{JSON: "activeForm", Note: "shown while in progress, e.g. \"Running tests\""},
		},
	},
	"WebFetchInput": {
		Go:  "WebFetchInput",
		Doc: "WebFetchInput fetches a URL and runs a prompt over its content.",
		Fields: []fieldSpec{
			{JSON: "offset", Note: "2.1.330: where to go on reading a long page"},
		},
	},
	"WebSearchInput": {
		Go:  "WebSearchInput",
		Doc: "WebSearchInput searches the web.",
	},
	"WorkflowInput": {
		// Order: as the hand-written type had it.
		Order: []string{"script", "name", "args", "scriptPath", "resumeFromRunId", "description", "title"},
		Go:    "WorkflowInput",
		Doc:   "WorkflowInput runs a workflow script (agents in phases): a script, a predefined workflow by name, or a script file.",
		Fields: []fieldSpec{
			{JSON: "resumeFromRunId", Doc: "ResumeFromRunID replays a prior run from its cache."},
			{JSON: "description", Doc: "Description and Title are ignored by the CLI (the script's meta block sets them) but the model may write them."},
		},
	},
}
