package claude

import "encoding/json"

// Inputs of the built-in tools for tasks, schedules, plan mode and
// monitoring that CLI 2.1.330 offers a stream-json session (its
// system/init lists them). Shapes from the TypeScript SDK's
// sdk-tools.d.ts (0.3.330).

func init() {
	for name, f := range map[string]func() ToolInput{
		"CronList":       func() ToolInput { return new(CronListInput) },
		"TaskList":       func() ToolInput { return new(TaskListInput) },
		"EnterPlanMode":  func() ToolInput { return new(EnterPlanModeInput) },
		"Monitor":        func() ToolInput { return new(MonitorInput) },
		"ScheduleWakeup": func() ToolInput { return new(ScheduleWakeupInput) },
		"Workflow":       func() ToolInput { return new(WorkflowInput) },
		"ReportFindings": func() ToolInput { return new(ReportFindingsInput) },
	} {
		toolInputs[name] = f
	}
}

// CronListInput lists the session's scheduled prompts (no fields).
type CronListInput struct{}

// TaskListInput lists the session's tasks (no fields).
type TaskListInput struct{}

// EnterPlanModeInput asks to switch to plan mode (no fields).
type EnterPlanModeInput struct{}

// MonitorInput watches a command's output lines, or a WebSocket's
// frames, as events for the model, until Timeout.
type MonitorInput struct {
	// Description says what is watched (shown in notifications).
	Description string `json:"description"`
	// TimeoutMS ends the watch (the CLI caps it at 30 minutes).
	TimeoutMS int `json:"timeout_ms"`
	// Command is a shell command whose stdout lines are the events.
	Command string `json:"command,omitempty"`
	// WS is a WebSocket whose text frames are the events; not with
	// Command.
	WS *MonitorWebSocket `json:"ws,omitempty"`
}

// MonitorWebSocket is the WebSocket a MonitorInput opens.
type MonitorWebSocket struct {
	URL       string   `json:"url"`
	Protocols []string `json:"protocols,omitempty"`
}

// ScheduleWakeupInput schedules the next turn of a /loop.
type ScheduleWakeupInput struct {
	// DelaySeconds is clamped by the CLI to 60–3600.
	DelaySeconds int    `json:"delaySeconds,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Prompt       string `json:"prompt,omitempty"`
	// Stop ends the loop; the other fields are then ignored.
	Stop bool `json:"stop,omitempty"`
	// Noop says nothing changed since the last wake-up.
	Noop bool `json:"noop,omitempty"`
}

// WorkflowInput runs a workflow script (agents in phases): a script, a
// predefined workflow by name, or a script file.
type WorkflowInput struct {
	Script     string          `json:"script,omitempty"`
	Name       string          `json:"name,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ScriptPath string          `json:"scriptPath,omitempty"`
	// ResumeFromRunID replays a prior run from its cache.
	ResumeFromRunID string `json:"resumeFromRunId,omitempty"`
	// Description and Title are ignored by the CLI (the script's meta
	// block sets them) but the model may write them.
	Description string `json:"description,omitempty"`
	Title       string `json:"title,omitempty"`
}

// ReportFindingsInput reports a code review's findings.
type ReportFindingsInput struct {
	// Level is the review's effort level.
	Level    Effort          `json:"level,omitempty"`
	Findings []ReviewFinding `json:"findings"`
}

// ReviewFinding is one finding of a ReportFindingsInput.
type ReviewFinding struct {
	File            string `json:"file"`
	Line            int    `json:"line,omitempty"`
	Summary         string `json:"summary"`
	ShortSummary    string `json:"short_summary,omitempty"`
	FailureScenario string `json:"failure_scenario"`
	Category        string `json:"category,omitempty"`
	// Severity is "important", "pre_existing" or "nit".
	Severity string `json:"severity,omitempty"`
	// Verdict is "CONFIRMED" or "PLAUSIBLE" after a verify pass.
	Verdict string `json:"verdict,omitempty"`
	// Outcome is "fixed", "skipped" or "no_change_needed" on a re-report.
	Outcome string `json:"outcome,omitempty"`
}

func (*CronListInput) ToolName() string       { return "CronList" }
func (*TaskListInput) ToolName() string       { return "TaskList" }
func (*EnterPlanModeInput) ToolName() string  { return "EnterPlanMode" }
func (*MonitorInput) ToolName() string        { return "Monitor" }
func (*ScheduleWakeupInput) ToolName() string { return "ScheduleWakeup" }
func (*WorkflowInput) ToolName() string       { return "Workflow" }
func (*ReportFindingsInput) ToolName() string { return "ReportFindings" }

func (*CronListInput) isToolInput()       {}
func (*TaskListInput) isToolInput()       {}
func (*EnterPlanModeInput) isToolInput()  {}
func (*MonitorInput) isToolInput()        {}
func (*ScheduleWakeupInput) isToolInput() {}
func (*WorkflowInput) isToolInput()       {}
func (*ReportFindingsInput) isToolInput() {}
