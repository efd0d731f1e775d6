package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Typed inputs of Claude Code's built-in tools, for reading what the model
// asks a tool to do: in CanUseTool (ToolPermissionRequest.Input), in hooks
// (the tool input they receive) and in transcripts (ToolUseBlock.Input).
//
//	in, err := claude.DecodeInput[claude.BashInput](req.Input)
//	if err == nil && strings.Contains(in.Command, "rm -rf") {
//		return &claude.PermissionDeny{Message: "not that"}, nil
//	}
//
// The field names and JSON keys are those of the CLI's tool schemas
// (sdk-tools.d.ts in the CLI's package, 2.1.197 and 2.1.330). The inputs a
// permission request carries have been checked and normalised by the CLI
// (file paths made absolute, defaults such as Edit's replace_all filled
// in); those in an assistant message are as the model wrote them.
//
// Optional fields whose zero value would mean something other than
// "absent" are pointers, so that a decoded and re-encoded input (for
// PermissionAllow.UpdatedInput) keeps its meaning. Re-encoding drops the
// keys a type doesn't know; to change one field and keep the rest, edit
// the raw JSON instead.

// DecodeInput decodes a tool's input (a ToolPermissionRequest's or a
// ToolUseBlock's Input, or a hook's tool input) into T, one of the
// *Input types of this package or a type of the caller's own (for MCP
// tools). Keys T doesn't know are ignored, so newer CLIs decode.
func DecodeInput[T any](input json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(input, &v); err != nil {
		return v, fmt.Errorf("claude: decoding %T tool input: %w", v, err)
	}
	return v, nil
}

// ToolInput is the typed input of a built-in tool, as returned by
// DecodeToolInput: one *…Input type of this package for each built-in
// tool whose input the TypeScript SDK declares (*BashInput, *EditInput,
// *AgentInput, *TaskCreateInput, *EnterWorktreeInput, …; docs/parity.md
// lists them all), or *UnknownToolInput for any other tool (MCP tools,
// tools newer than this package, tools without input).
type ToolInput interface {
	// ToolName is the name the model calls the tool by.
	ToolName() string
	isToolInput()
}

// DecodeToolInput decodes the input of the tool named toolName into its
// type, for a type switch:
//
//	in, err := claude.DecodeToolInput(req.ToolName, req.Input)
//	switch in := in.(type) {
//	case *claude.BashInput:
//		log.Printf("run %q", in.Command)
//	case *claude.WriteInput:
//		log.Printf("write %s", in.FilePath)
//	}
//
// A tool it has no type for gives an *UnknownToolInput and no error.
func DecodeToolInput(toolName string, input json.RawMessage) (ToolInput, error) {
	newInput, ok := toolInputs[toolName]
	if !ok {
		return &UnknownToolInput{Name: toolName, Raw: input}, nil
	}
	v := newInput()
	if err := json.Unmarshal(input, v); err != nil {
		return nil, fmt.Errorf("claude: decoding %s tool input: %w", toolName, err)
	}
	return v, nil
}

// toolInputs maps tool names, current and legacy, to their input types.
var toolInputs = map[string]func() ToolInput{
	"Agent":                func() ToolInput { return new(AgentInput) },
	"Task":                 func() ToolInput { return new(AgentInput) }, // the Agent tool's former name, still in system/init
	"Bash":                 func() ToolInput { return new(BashInput) },
	"TaskOutput":           func() ToolInput { return new(TaskOutputInput) },
	"TaskStop":             func() ToolInput { return new(TaskStopInput) },
	"ExitPlanMode":         func() ToolInput { return new(ExitPlanModeInput) },
	"Edit":                 func() ToolInput { return new(EditInput) },
	"Read":                 func() ToolInput { return new(ReadInput) },
	"Write":                func() ToolInput { return new(WriteInput) },
	"Glob":                 func() ToolInput { return new(GlobInput) },
	"Grep":                 func() ToolInput { return new(GrepInput) },
	"NotebookEdit":         func() ToolInput { return new(NotebookEditInput) },
	"TodoWrite":            func() ToolInput { return new(TodoWriteInput) },
	"WebFetch":             func() ToolInput { return new(WebFetchInput) },
	"WebSearch":            func() ToolInput { return new(WebSearchInput) },
	"AskUserQuestion":      func() ToolInput { return new(AskUserQuestionInput) },
	"TaskCreate":           func() ToolInput { return new(TaskCreateInput) },
	"TaskGet":              func() ToolInput { return new(TaskGetInput) },
	"TaskUpdate":           func() ToolInput { return new(TaskUpdateInput) },
	"ListMcpResourcesTool": func() ToolInput { return new(ListMCPResourcesInput) },
	"ReadMcpResourceTool":  func() ToolInput { return new(ReadMCPResourceInput) },
	"CronCreate":           func() ToolInput { return new(CronCreateInput) },
	"CronDelete":           func() ToolInput { return new(CronDeleteInput) },
	"EnterWorktree":        func() ToolInput { return new(EnterWorktreeInput) },
	"ExitWorktree":         func() ToolInput { return new(ExitWorktreeInput) },
}

// UnknownToolInput is the input of a tool DecodeToolInput has no type for.
type UnknownToolInput struct {
	Name string
	Raw  json.RawMessage
}

// AgentInput starts a subagent (the Agent tool, formerly Task).
type AgentInput struct {
	Description string `json:"description"` // a 3-5 word summary of the task
	Prompt      string `json:"prompt"`      // the task, as the agent's first message
	// SubagentType names the agent: one of Options.Agents, a built-in
	// ("general-purpose", "Explore", "Plan", …) or a settings agent.
	SubagentType string `json:"subagent_type,omitempty"`
	Model        string `json:"model,omitempty"`  // "sonnet", "opus", "haiku"…; overrides the agent's
	Effort       Effort `json:"effort,omitempty"` // 2.1.330
	// RunInBackground: the default is the foreground in 2.1.197 and the
	// background in 2.1.330.
	RunInBackground *bool          `json:"run_in_background,omitempty"`
	Name            string         `json:"name,omitempty"` // makes a background agent addressable by SendMessage
	Mode            PermissionMode `json:"mode,omitempty"`
	Isolation       string         `json:"isolation,omitempty"` // "worktree" or "remote"
	// TeamName is deprecated and ignored by the CLI (a session has one
	// implicit team); read for older transcripts.
	TeamName string `json:"team_name,omitempty"`
}

// BashInput runs a shell command.
type BashInput struct {
	Command     string `json:"command"`
	Timeout     int    `json:"timeout,omitempty"`     // milliseconds, at most 600000
	Description string `json:"description,omitempty"` // what the command does, in a few words
	// RunInBackground starts the command as a background task.
	RunInBackground           bool `json:"run_in_background,omitempty"`
	DangerouslyDisableSandbox bool `json:"dangerouslyDisableSandbox,omitempty"`
}

// TaskOutputInput reads a background task's output (2.1.197).
type TaskOutputInput struct {
	TaskID  string `json:"task_id"`
	Block   bool   `json:"block"`   // wait for the task to finish
	Timeout int    `json:"timeout"` // milliseconds to wait at most
}

// TaskStopInput stops a background task.
type TaskStopInput struct {
	TaskID  string `json:"task_id,omitempty"`
	ShellID string `json:"shell_id,omitempty"` // deprecated: TaskID
}

// ExitPlanModeInput asks to leave plan mode and carry out the plan, which
// the CLI keeps in a file.
type ExitPlanModeInput struct {
	// AllowedPrompts are the kinds of action the plan needs permission
	// for, e.g. {Tool: "Bash", Prompt: "run tests"}.
	AllowedPrompts []AllowedPrompt `json:"allowedPrompts,omitempty"`
}

// AllowedPrompt is a permission a plan asks for, described in words.
type AllowedPrompt struct {
	Tool   string `json:"tool"`
	Prompt string `json:"prompt"`
}

// EditInput replaces text in a file.
type EditInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"` // every occurrence, not exactly one
}

// ReadInput reads a file (text, image, PDF or notebook).
type ReadInput struct {
	FilePath   string `json:"file_path"`
	Offset     int    `json:"offset,omitempty"` // first line to read
	Limit      int    `json:"limit,omitempty"`  // number of lines
	Pages      string `json:"pages,omitempty"`  // PDF page range, e.g. "1-5"
	AllowLarge bool   `json:"allow_large,omitempty"`
}

// WriteInput writes a whole file.
type WriteInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// GlobInput finds files by name pattern.
type GlobInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"` // the directory to search; "" = the working directory
}

// GrepInput searches file contents with a regular expression (ripgrep).
type GrepInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path,omitempty"`
	Glob    string `json:"glob,omitempty"` // e.g. "*.go"
	Type    string `json:"type,omitempty"` // a ripgrep file type, e.g. "go"
	// OutputMode is "files_with_matches" (the default), "content" or
	// "count".
	OutputMode string `json:"output_mode,omitempty"`
	// Lines of context, for OutputMode "content": After (-A), Before (-B),
	// and around (Context, or its alias C).
	After   int `json:"-A,omitempty"`
	Before  int `json:"-B,omitempty"`
	C       int `json:"-C,omitempty"`
	Context int `json:"context,omitempty"`
	// LineNumbers (-n) defaults to true.
	LineNumbers     *bool `json:"-n,omitempty"`
	CaseInsensitive bool  `json:"-i,omitempty"`
	OnlyMatching    bool  `json:"-o,omitempty"`
	// HeadLimit keeps the first N lines or entries; nil means 250 and 0
	// means all.
	HeadLimit *int `json:"head_limit,omitempty"`
	Offset    int  `json:"offset,omitempty"` // entries to skip first
	Multiline bool `json:"multiline,omitempty"`
}

// NotebookEditInput edits a Jupyter notebook cell.
type NotebookEditInput struct {
	NotebookPath string `json:"notebook_path"`
	CellID       string `json:"cell_id,omitempty"`
	NewSource    string `json:"new_source"`
	CellType     string `json:"cell_type,omitempty"` // "code" or "markdown"
	EditMode     string `json:"edit_mode,omitempty"` // "replace" (default), "insert" or "delete"
}

// TodoWriteInput replaces the session's todo list.
type TodoWriteInput struct {
	Todos []Todo `json:"todos"`
}

// Todo is one item of a todo list.
type Todo struct {
	Content    string `json:"content"`
	Status     string `json:"status"`     // "pending", "in_progress" or "completed"
	ActiveForm string `json:"activeForm"` // shown while in progress, e.g. "Running tests"
}

// WebFetchInput fetches a URL and runs a prompt over its content.
type WebFetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
	Offset int    `json:"offset,omitempty"` // 2.1.330: where to go on reading a long page
}

// WebSearchInput searches the web.
type WebSearchInput struct {
	Query          string   `json:"query"`
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	BlockedDomains []string `json:"blocked_domains,omitempty"`
}

// AskUserQuestionInput asks the user one to four multiple-choice
// questions. Answer them with AnswerQuestions.
type AskUserQuestionInput struct {
	Questions []Question `json:"questions"`
	// Answers maps a question's text to the chosen option's label (labels
	// joined by commas for MultiSelect questions, or free text). The model
	// leaves it empty; the host fills it in.
	Answers map[string]string `json:"answers,omitempty"`
	// Annotations holds per-question notes, keyed by question text.
	Annotations map[string]QuestionAnnotation `json:"annotations,omitempty"`
	Metadata    *QuestionMetadata             `json:"metadata,omitempty"`
}

// QuestionAnnotation is what the user added to an answer.
type QuestionAnnotation struct {
	Preview string `json:"preview,omitempty"`
	Notes   string `json:"notes,omitempty"`
	// Unanswered says why a question has no answer (in a result):
	// skipped, replied_in_chat, dismissed.
	Unanswered string `json:"unanswered,omitempty"`
}

// QuestionMetadata says where questions came from.
type QuestionMetadata struct {
	Source string `json:"source,omitempty"`
}

// TaskCreateInput adds a task to the session's task list.
type TaskCreateInput struct {
	Subject     string          `json:"subject"`
	Description string          `json:"description"`
	ActiveForm  string          `json:"activeForm,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"` // a JSON object
}

// TaskGetInput reads a task.
type TaskGetInput struct {
	TaskID string `json:"taskId"`
}

// TaskUpdateInput changes a task.
type TaskUpdateInput struct {
	TaskID       string          `json:"taskId"`
	Subject      string          `json:"subject,omitempty"`
	Description  string          `json:"description,omitempty"`
	ActiveForm   string          `json:"activeForm,omitempty"`
	Status       string          `json:"status,omitempty"` // "pending", "in_progress", "completed" or "deleted"
	AddBlocks    []string        `json:"addBlocks,omitempty"`
	AddBlockedBy []string        `json:"addBlockedBy,omitempty"`
	Owner        string          `json:"owner,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"` // keys to merge; null deletes one
}

// ListMCPResourcesInput lists MCP resources (the ListMcpResourcesTool
// tool).
type ListMCPResourcesInput struct {
	Server string `json:"server,omitempty"` // "" = every server
}

// ReadMCPResourceInput reads an MCP resource (the ReadMcpResourceTool
// tool).
type ReadMCPResourceInput struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// CronCreateInput schedules a prompt on a cron schedule.
type CronCreateInput struct {
	Cron   string `json:"cron"` // five fields, local time
	Prompt string `json:"prompt"`
	// Recurring defaults to true; false fires once.
	Recurring *bool `json:"recurring,omitempty"`
	Durable   bool  `json:"durable,omitempty"` // survive restarts
}

// CronDeleteInput removes a scheduled prompt.
type CronDeleteInput struct {
	ID string `json:"id"`
}

// EnterWorktreeInput switches the session into a git worktree, new or
// existing.
type EnterWorktreeInput struct {
	Name string `json:"name,omitempty"` // for a new worktree
	Path string `json:"path,omitempty"` // of an existing worktree
}

// ExitWorktreeInput leaves the worktree.
type ExitWorktreeInput struct {
	Action         string `json:"action"` // "keep" or "remove"
	DiscardChanges bool   `json:"discard_changes,omitempty"`
}

func (*AgentInput) ToolName() string            { return "Agent" }
func (*BashInput) ToolName() string             { return "Bash" }
func (*TaskOutputInput) ToolName() string       { return "TaskOutput" }
func (*TaskStopInput) ToolName() string         { return "TaskStop" }
func (*ExitPlanModeInput) ToolName() string     { return "ExitPlanMode" }
func (*EditInput) ToolName() string             { return "Edit" }
func (*ReadInput) ToolName() string             { return "Read" }
func (*WriteInput) ToolName() string            { return "Write" }
func (*GlobInput) ToolName() string             { return "Glob" }
func (*GrepInput) ToolName() string             { return "Grep" }
func (*NotebookEditInput) ToolName() string     { return "NotebookEdit" }
func (*TodoWriteInput) ToolName() string        { return "TodoWrite" }
func (*WebFetchInput) ToolName() string         { return "WebFetch" }
func (*WebSearchInput) ToolName() string        { return "WebSearch" }
func (*AskUserQuestionInput) ToolName() string  { return "AskUserQuestion" }
func (*TaskCreateInput) ToolName() string       { return "TaskCreate" }
func (*TaskGetInput) ToolName() string          { return "TaskGet" }
func (*TaskUpdateInput) ToolName() string       { return "TaskUpdate" }
func (*ListMCPResourcesInput) ToolName() string { return "ListMcpResourcesTool" }
func (*ReadMCPResourceInput) ToolName() string  { return "ReadMcpResourceTool" }
func (*CronCreateInput) ToolName() string       { return "CronCreate" }
func (*CronDeleteInput) ToolName() string       { return "CronDelete" }
func (*EnterWorktreeInput) ToolName() string    { return "EnterWorktree" }
func (*ExitWorktreeInput) ToolName() string     { return "ExitWorktree" }
func (u *UnknownToolInput) ToolName() string    { return u.Name }

func (*AgentInput) isToolInput()            {}
func (*BashInput) isToolInput()             {}
func (*TaskOutputInput) isToolInput()       {}
func (*TaskStopInput) isToolInput()         {}
func (*ExitPlanModeInput) isToolInput()     {}
func (*EditInput) isToolInput()             {}
func (*ReadInput) isToolInput()             {}
func (*WriteInput) isToolInput()            {}
func (*GlobInput) isToolInput()             {}
func (*GrepInput) isToolInput()             {}
func (*NotebookEditInput) isToolInput()     {}
func (*TodoWriteInput) isToolInput()        {}
func (*WebFetchInput) isToolInput()         {}
func (*WebSearchInput) isToolInput()        {}
func (*AskUserQuestionInput) isToolInput()  {}
func (*TaskCreateInput) isToolInput()       {}
func (*TaskGetInput) isToolInput()          {}
func (*TaskUpdateInput) isToolInput()       {}
func (*ListMCPResourcesInput) isToolInput() {}
func (*ReadMCPResourceInput) isToolInput()  {}
func (*CronCreateInput) isToolInput()       {}
func (*CronDeleteInput) isToolInput()       {}
func (*EnterWorktreeInput) isToolInput()    {}
func (*ExitWorktreeInput) isToolInput()     {}
func (*UnknownToolInput) isToolInput()      {}

// AnswerQuestions answers an AskUserQuestion permission request: it allows
// the tool with the request's input plus answers, which map a question's
// text to the chosen option's label (for a MultiSelect question, the
// labels joined by ", "; free text is accepted too). The model then reads
// the answers as the tool's result.
//
//	if req.ToolName == "AskUserQuestion" {
//		return claude.AnswerQuestions(req, map[string]string{"Which database?": "Postgres"})
//	}
//
// The CLI offers the model AskUserQuestion only when the host answers
// permission requests (Options.CanUseTool is set). Questions left out
// stay unanswered. It fails when req is not an
// AskUserQuestion request, when answers is empty (deny the request to
// skip the questions) or names a question the request doesn't ask.
func AnswerQuestions(req *ToolPermissionRequest, answers map[string]string) (*PermissionAllow, error) {
	if req == nil || req.ToolName != "AskUserQuestion" {
		name := "nil"
		if req != nil {
			name = req.ToolName
		}
		return nil, fmt.Errorf("claude: AnswerQuestions: request is for %s, not AskUserQuestion", name)
	}
	if len(answers) == 0 {
		return nil, errors.New("claude: AnswerQuestions: no answers (deny the request to skip the questions)")
	}
	in, err := DecodeInput[AskUserQuestionInput](req.Input)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	for q := range answers {
		if !slices.ContainsFunc(in.Questions, func(x Question) bool { return x.Question == q }) {
			return nil, fmt.Errorf("claude: AnswerQuestions: the request has no question %q", q)
		}
	}
	// Add answers to the input as the CLI sent it, so that nothing the
	// types above don't know is lost.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(req.Input, &members); err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	members["answers"] = a
	updated, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("claude: AnswerQuestions: %w", err)
	}
	return &PermissionAllow{UpdatedInput: updated}, nil
}
