package main

// resultSpecs maps the declarations of sdk-tools.d.ts's ToolOutputSchemas (the built-in tools' structured results) to the Go
// types of package claude. It was first written from the hand-written
// types it replaces, so that the generated ones keep their names, JSON
// behaviour and documentation: package claude changes only compatibly.
// A Type or Go override says where Tether has always decoded something
// tighter or named it otherwise than the declaration would give; edit
// this table, not the generated files, and run go generate ./claude.
var resultSpecs = map[string]typeSpec{
	"AgentOutput":           {Skip: "AgentResult, in conversation.go: a union the CLI sends one member of"},
	"ArtifactOutput":        {Skip: "ArtifactResult, in tools_results.go: a union by action, decoded into one struct with Raw"},
	"AskUserQuestionOutput": {Skip: "AskUserQuestionResult, in conversation.go"},
	"BashOutput":            {Skip: "BashResult, in conversation.go"},
	"ClaudeDesignOutput": {
		Go:  "ClaudeDesignResult",
		Doc: "ClaudeDesignResult is the structured result of the ClaudeDesign tool.",
		Fields: []fieldSpec{
			{JSON: "content", Doc: "Content is the operation's output, JSON objects."},
		},
	},
	"CronCreateOutput": {
		Go:  "CronCreateResult",
		Doc: "CronCreateResult is the structured result of the CronCreate tool.",
		Fields: []fieldSpec{
			{JSON: "nextFireAt", Type: "int64", Doc: "NextFireAt is the next run, in Unix milliseconds."},
			{JSON: "maxAgeMs", Type: "int64", Doc: "MaxAgeMS is when a recurring job ends; 0 means never."},
			{JSON: "otherOneShots", Doc: "OtherOneShots are the session's other pending one-shot jobs."},
		},
	},
	"CronCreateOutput.otherOneShots": {
		Go:  "CronOneShot",
		Doc: "CronOneShot is a pending one-shot job in CronCreateResult.OtherOneShots.",
	},
	"CronDeleteOutput": {
		Go:  "CronDeleteResult",
		Doc: "CronDeleteResult is the structured result of the CronDelete tool.",
		Fields: []fieldSpec{
			{JSON: "endedLoopWakeup", Type: "bool"},
		},
	},
	"CronListOutput": {
		Go:  "CronListResult",
		Doc: "CronListResult is the structured result of the CronList tool.",
	},
	"CronListOutput.jobs": {
		Go:  "CronJob",
		Doc: "CronJob is a scheduled prompt in a CronListResult.",
		Fields: []fieldSpec{
			{JSON: "nextFireAt", Type: "int64"},
		},
	},
	"EnterPlanModeOutput": {
		Go:  "EnterPlanModeResult",
		Doc: "EnterPlanModeResult is the structured result of the EnterPlanMode tool.",
	},
	"EnterWorktreeOutput": {
		Go:  "EnterWorktreeResult",
		Doc: "EnterWorktreeResult is the structured result of the EnterWorktree tool.",
	},
	"ExitPlanModeOutput": {
		Go:  "ExitPlanModeResult",
		Doc: "ExitPlanModeResult is the structured result of the ExitPlanMode tool.",
		Fields: []fieldSpec{
			{JSON: "plan", Type: "*string", Doc: "Plan is the plan shown to the user; nil when there was none."},
			{JSON: "filePath", Doc: "FilePath is where the plan was saved."},
			{JSON: "planWasEdited", Doc: "PlanWasEdited is set when the user edited the plan."},
			{JSON: "awaitingLeaderApproval", Doc: "AwaitingLeaderApproval and RequestID: a teammate's plan sent to the team leader for approval."},
		},
	},
	"ExitWorktreeOutput": {
		Go:  "ExitWorktreeResult",
		Doc: "ExitWorktreeResult is the structured result of the ExitWorktree tool.",
		Fields: []fieldSpec{
			{JSON: "action", Doc: "Action is \"keep\" or \"remove\"."},
		},
	},
	"FileEditOutput": {
		Go:  "EditResult",
		Doc: "EditResult is the structured result of the Edit tool.",
		Fields: []fieldSpec{
			{JSON: "originalFile", Doc: "OriginalFile is the file before the edit (\"\" for a new file)."},
			{JSON: "gitDiff", Type: "*GitDiff"},
		},
	},
	"FileEditOutput.gitDiff": {
		Go:  "GitDiff",
		Doc: "GitDiff is a file change as git sees it.",
		Fields: []fieldSpec{
			{JSON: "status", Note: "\"modified\" or \"added\""},
		},
	},
	"FileEditOutput.structuredPatch": {
		Go:  "DiffHunk",
		Doc: "DiffHunk is one hunk of a unified diff; Lines start with \" \", \"-\" or \"+\".",
	},
	"FileReadOutput":  {Skip: "ReadResult, in tools_results.go: a union by type, text typed and the rest in Raw"},
	"FileWriteOutput": {Skip: "WriteResult, in conversation.go"},
	"GlobOutput": {
		Go:  "GlobResult",
		Doc: "GlobResult is the structured result of the Glob tool.",
		Fields: []fieldSpec{
			{JSON: "durationMs", Type: "float64"},
			{JSON: "truncated", Doc: "Truncated is set when more files matched than were returned."},
			{JSON: "countIsComplete", Type: "*bool"},
		},
	},
	"GrepOutput": {
		// Order: as the hand-written type had it.
		Order: []string{"mode", "numFiles", "filenames", "content", "numLines", "numMatches", "appliedLimit", "appliedOffset", "timedOut", "totalFiles", "totalLines"},
		Go:    "GrepResult",
		Doc:   "GrepResult is the structured result of the Grep tool.",
		Fields: []fieldSpec{
			{JSON: "mode", Doc: "Mode is \"content\", \"files_with_matches\" or \"count\"."},
			{JSON: "totalFiles", Doc: "TotalFiles and TotalLines count all there was before a limit cut the result."},
		},
	},
	"ListMcpResourcesOutput": {Go: "ListMCPResourcesResult", Doc: "ListMCPResourcesResult is the structured result of the ListMcpResourcesTool tool: every resource of the servers asked."},
	"ListMcpResourcesOutput[]": {
		Go:  "MCPResourceListing",
		Doc: "MCPResourceListing is one resource in a ListMCPResourcesResult.",
		Fields: []fieldSpec{
			{JSON: "mimeType", Go: "MIMEType"},
			{JSON: "server", Doc: "Server is the MCP server that has the resource."},
		},
	},
	"McpOutput": {Skip: "an MCP tool's own output type: DecodeToolUseResult"},
	"MonitorOutput": {
		Go:  "MonitorResult",
		Doc: "MonitorResult is the structured result of the Monitor tool: the background task watching.",
		Fields: []fieldSpec{
			{JSON: "timeoutMs", Type: "int64", Doc: "TimeoutMS is the watch's deadline (0 when persistent)."},
			{JSON: "keptInSandboxByCheck", Doc: "KeptInSandboxByCheck: the command ran sandboxed only because its permission check relied on the sandbox."},
		},
	},
	"NotebookEditOutput": {
		Go:  "NotebookEditResult",
		Doc: "NotebookEditResult is the structured result of the NotebookEdit tool.",
	},
	"OfferChromeSetupOutput": {
		Go:  "OfferChromeSetupResult",
		Doc: "OfferChromeSetupResult is the structured result of the OfferChromeSetup tool.",
		Fields: []fieldSpec{
			{JSON: "outcome", Doc: "Outcome is \"connected\", \"not_now\" or \"no_attempt_yet\"."},
		},
	},
	"ProjectsOutput": {Skip: "ProjectsResult, in tools_results.go: a union by method, decoded into one struct with Raw"},
	"ProposeGoalOutput": {
		Go:  "ProposeGoalResult",
		Doc: "ProposeGoalResult is the structured result of the ProposeGoal tool.",
	},
	"ProposeSkillsOutput": {
		Go:  "ProposeSkillsResult",
		Doc: "ProposeSkillsResult is the structured result of the propose_skills tool.",
	},
	"PushNotificationOutput": {
		Go:  "PushNotificationResult",
		Doc: "PushNotificationResult is the structured result of the PushNotification tool.",
		Fields: []fieldSpec{
			{JSON: "disabledReason", Doc: "DisabledReason is \"config_off\", \"user_present\" or \"no_transport\" when nothing was sent."},
		},
	},
	"ReadMcpResourceDirOutput": {
		Go:  "ReadMCPResourceDirResult",
		Doc: "ReadMCPResourceDirResult is the structured result of the ReadMcpResourceDirTool tool.",
		Fields: []fieldSpec{
			{JSON: "resources", Doc: "Resources are the directory's direct children; subdirectories have MIMEType \"inode/directory\"."},
		},
	},
	"ReadMcpResourceDirOutput.resources": {
		Go:  "MCPResourceDirEntry",
		Doc: "MCPResourceDirEntry is one child in a ReadMCPResourceDirResult.",
		Fields: []fieldSpec{
			{JSON: "mimeType", Go: "MIMEType"},
		},
	},
	"ReadMcpResourceOutput": {
		Go:  "ReadMCPResourceToolResult",
		Doc: "ReadMCPResourceToolResult is the structured result of the ReadMcpResourceTool tool. (ReadMCPResourceResult is the answer to the mcp_read_resource control request.)",
		Fields: []fieldSpec{
			{JSON: "error", Doc: "Error says why the server could not read the resource."},
		},
	},
	"ReadMcpResourceOutput.contents": {
		Go:  "MCPResourceToolContents",
		Doc: "MCPResourceToolContents is one item of a resource the model read: Text, or binary data the CLI saved to BlobSavedTo.",
		Fields: []fieldSpec{
			{JSON: "mimeType", Go: "MIMEType"},
		},
	},
	"ReadNotificationsOutput": {
		Go:  "ReadNotificationsResult",
		Doc: "ReadNotificationsResult is the structured result of the ReadNotifications tool.",
		Fields: []fieldSpec{
			{JSON: "remaining", Doc: "Remaining counts the notifications still queued."},
		},
	},
	"ReadNotificationsOutput.notifications": {
		Go:  "QueuedNotification",
		Doc: "QueuedNotification is one notification ReadNotifications returned.",
	},
	"RefreshMcpToolsOutput": {Go: "RefreshMCPToolsResult", Doc: "RefreshMCPToolsResult is the structured result of the RefreshMcpTools tool, one entry per server."},
	"RefreshMcpToolsOutput[]": {
		Go:  "MCPToolsRefresh",
		Doc: "MCPToolsRefresh is one server's refresh.",
		Fields: []fieldSpec{
			{JSON: "status", Doc: "Status is \"refreshed\", \"error\" (the previous tools were kept) or \"not_connected\"."},
		},
	},
	"RemoteTriggerOutput": {
		Go:  "RemoteTriggerResult",
		Doc: "RemoteTriggerResult is the structured result of the RemoteTrigger tool: the HTTP status and body of the trigger API's answer.",
	},
	"ReportFindingsOutput": {
		Go:  "ReportFindingsResult",
		Doc: "ReportFindingsResult is the structured result of the ReportFindings tool: the findings, echoed.",
		Fields: []fieldSpec{
			{JSON: "level", Type: "Effort"},
		},
	},
	"ReportFindingsOutput.findings": {Go: "ReviewFinding"}, // written for ReportFindingsInput.findings
	"ScheduleWakeupOutput": {
		Go:  "ScheduleWakeupResult",
		Doc: "ScheduleWakeupResult is the structured result of the ScheduleWakeup tool.",
		Fields: []fieldSpec{
			{JSON: "scheduledFor", Type: "int64", Doc: "ScheduledFor is the wake-up, in Unix milliseconds."},
		},
	},
	"SendFeedbackOutput": {
		Go:  "SendFeedbackResult",
		Doc: "SendFeedbackResult is the structured result of the SendFeedback tool.",
	},
	"ShowOnboardingRolePickerOutput": {
		Go:  "ShowOnboardingRolePickerResult",
		Doc: "ShowOnboardingRolePickerResult is the structured result of the ShowOnboardingRolePicker tool.",
	},
	"TaskCreateOutput": {
		Go:  "TaskCreateResult",
		Doc: "TaskCreateResult is the structured result of the TaskCreate tool.",
	},
	"TaskCreateOutput.task": {
		Go:  "TaskRef",
		Doc: "TaskRef is a task as TaskCreate reports it.",
	},
	"TaskGetOutput": {
		Go:  "TaskGetResult",
		Doc: "TaskGetResult is the structured result of the TaskGet tool; Task is nil for an unknown id.",
		Fields: []fieldSpec{
			{JSON: "task", Type: "*TaskDetail"},
		},
	},
	"TaskGetOutput.task": {
		Go:  "TaskDetail",
		Doc: "TaskDetail is a task as TaskGet reports it.",
		Fields: []fieldSpec{
			{JSON: "status", Doc: "Status is \"pending\", \"in_progress\" or \"completed\"."},
		},
	},
	"TaskListOutput": {
		Go:  "TaskListResult",
		Doc: "TaskListResult is the structured result of the TaskList tool.",
	},
	"TaskListOutput.tasks": {
		Go:  "TaskSummary",
		Doc: "TaskSummary is a task in a TaskListResult.",
	},
	"TaskStopOutput": {
		Go:  "TaskStopResult",
		Doc: "TaskStopResult is the structured result of the TaskStop tool.",
	},
	"TaskUpdateOutput": {
		Go:  "TaskUpdateResult",
		Doc: "TaskUpdateResult is the structured result of the TaskUpdate tool.",
		Fields: []fieldSpec{
			{JSON: "statusChange", Type: "*TaskStatusChange"},
		},
	},
	"TaskUpdateOutput.statusChange": {
		Go:  "TaskStatusChange",
		Doc: "TaskStatusChange is a task's status before and after a TaskUpdate.",
	},
	"TodoWriteOutput": {
		Go:  "TodoWriteResult",
		Doc: "TodoWriteResult is the structured result of the TodoWrite tool.",
	},
	"TodoWriteOutput.newTodos": {Go: "Todo"}, // written for TodoWriteInput.todos
	"TodoWriteOutput.oldTodos": {Go: "Todo"}, // written for TodoWriteInput.todos
	"WebFetchOutput": {
		Go:  "WebFetchResult",
		Doc: "WebFetchResult is the structured result of the WebFetch tool.",
		Fields: []fieldSpec{
			{JSON: "result", Doc: "Result is what the prompt made of the page."},
			{JSON: "durationMs", Type: "float64"},
			{JSON: "artifactRead", Type: "*ArtifactReadRef", Doc: "ArtifactRead is set when the page was a claude.ai artifact."},
		},
	},
	"WebFetchOutput.artifactRead": {
		Go:  "ArtifactReadRef",
		Doc: "ArtifactReadRef names the artifact a read returned.",
		Fields: []fieldSpec{
			{JSON: "seeded", Type: "*bool"},
		},
	},
	"WebSearchOutput": {
		Go:  "WebSearchResult",
		Doc: "WebSearchResult is the structured result of the WebSearch tool.",
		Fields: []fieldSpec{
			{JSON: "results", Type: "[]WebSearchResultItem", Doc: "Results holds the searches' hits and the model's commentary, in order."},
			{JSON: "durationSeconds", Type: "float64"},
		},
	},
	"WorkflowOutput": {
		Go:  "WorkflowResult",
		Doc: "WorkflowResult is the structured result of the Workflow tool: the background task running it.",
		Fields: []fieldSpec{
			{JSON: "status", Doc: "Status is \"async_launched\" or \"remote_launched\"."},
			{JSON: "taskType", Doc: "TaskType is \"local_workflow\" or \"remote_agent\"."},
		},
	},
}
