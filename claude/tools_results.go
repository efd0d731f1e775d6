package claude

import "encoding/json"

// Structured results (UserMessage.ToolUseResult) of more built-in tools,
// for DecodeToolUseResult, from the TypeScript SDK's sdk-tools.d.ts
// (0.3.330) and checked against what CLI 2.1.197 and 2.1.330 send.

// EditResult is the structured result of the Edit tool.
type EditResult struct {
	FilePath  string `json:"filePath"`
	OldString string `json:"oldString"`
	NewString string `json:"newString"`
	// OriginalFile is the file before the edit ("" for a new file).
	OriginalFile    string     `json:"originalFile"`
	StructuredPatch []DiffHunk `json:"structuredPatch"`
	UserModified    bool       `json:"userModified"`
	ReplaceAll      bool       `json:"replaceAll"`
	GitDiff         *GitDiff   `json:"gitDiff,omitempty"`
	Staged          bool       `json:"staged,omitempty"`
}

// DiffHunk is one hunk of a unified diff; Lines start with " ", "-" or
// "+".
type DiffHunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// GitDiff is a file change as git sees it.
type GitDiff struct {
	Filename   string `json:"filename"`
	Status     string `json:"status"` // "modified" or "added"
	Additions  int    `json:"additions"`
	Deletions  int    `json:"deletions"`
	Changes    int    `json:"changes"`
	Patch      string `json:"patch"`
	Repository string `json:"repository,omitempty"`
}

// ReadResult is the structured result of the Read tool. Type is "text"
// for a text file (File set); images, PDFs and notebooks have other
// types, whose data is in Raw.
type ReadResult struct {
	Type string          `json:"type"`
	File *ReadResultFile `json:"file"`
	// ArtifactRead names the artifact a "text" read came from (slug and
	// version), when it was one.
	ArtifactRead *struct {
		Slug string `json:"slug"`
		Ver  string `json:"ver"`
	} `json:"artifactRead,omitempty"`
	// FirstPage and Pages are a "parts" read's page images: the number of
	// the first page, and each page's image (or its error).
	FirstPage int        `json:"firstPage,omitempty"`
	Pages     []ReadPage `json:"pages,omitempty"`
	// Raw is the whole result, for the types other than "text".
	Raw json.RawMessage `json:"-"`
}

// ReadResultFile is the text a Read returned.
type ReadResultFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
	// TruncatedByTokenCap is set when a whole-file read was cut to its
	// first page.
	TruncatedByTokenCap bool `json:"truncatedByTokenCap,omitempty"`
}

// ReadPage is one page image of a "parts" ReadResult.
type ReadPage struct {
	Base64    string `json:"base64"`
	MediaType string `json:"mediaType"`
	Error     string `json:"error,omitempty"`
}

// UnmarshalJSON decodes the result, keeping it whole in Raw.
func (r *ReadResult) UnmarshalJSON(b []byte) error {
	type plain ReadResult
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		// Not text: the file member has another shape.
		var t struct {
			Type      string     `json:"type"`
			FirstPage int        `json:"firstPage"`
			Pages     []ReadPage `json:"pages"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		*r = ReadResult{Type: t.Type, FirstPage: t.FirstPage, Pages: t.Pages}
	} else {
		*r = ReadResult(p)
		if r.Type != "text" {
			r.File = nil
		}
	}
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// GlobResult is the structured result of the Glob tool.
type GlobResult struct {
	DurationMS float64  `json:"durationMs"`
	NumFiles   int      `json:"numFiles"`
	Filenames  []string `json:"filenames"`
	// Truncated is set when more files matched than were returned.
	Truncated       bool  `json:"truncated"`
	TotalMatches    int   `json:"totalMatches,omitempty"`
	CountIsComplete *bool `json:"countIsComplete,omitempty"`
	TimedOut        bool  `json:"timedOut,omitempty"`
}

// GrepResult is the structured result of the Grep tool.
type GrepResult struct {
	// Mode is "content", "files_with_matches" or "count".
	Mode          string   `json:"mode,omitempty"`
	NumFiles      int      `json:"numFiles"`
	Filenames     []string `json:"filenames"`
	Content       string   `json:"content,omitempty"`
	NumLines      int      `json:"numLines,omitempty"`
	NumMatches    int      `json:"numMatches,omitempty"`
	AppliedLimit  int      `json:"appliedLimit,omitempty"`
	AppliedOffset int      `json:"appliedOffset,omitempty"`
	TimedOut      bool     `json:"timedOut,omitempty"`
	// TotalFiles and TotalLines count all there was before a limit cut
	// the result.
	TotalFiles int `json:"totalFiles,omitempty"`
	TotalLines int `json:"totalLines,omitempty"`
}

// TodoWriteResult is the structured result of the TodoWrite tool.
type TodoWriteResult struct {
	OldTodos []Todo `json:"oldTodos"`
	NewTodos []Todo `json:"newTodos"`
}

// CronCreateResult is the structured result of the CronCreate tool.
type CronCreateResult struct {
	ID            string `json:"id"`
	HumanSchedule string `json:"humanSchedule"`
	Recurring     bool   `json:"recurring"`
	Durable       bool   `json:"durable,omitempty"`
	// NextFireAt is the next run, in Unix milliseconds.
	NextFireAt int64 `json:"nextFireAt,omitempty"`
	// MaxAgeMS is when a recurring job ends; 0 means never.
	MaxAgeMS int64 `json:"maxAgeMs,omitempty"`
	// OtherOneShots are the session's other pending one-shot jobs.
	OtherOneShots []CronOneShot `json:"otherOneShots,omitempty"`
}

// CronOneShot is a pending one-shot job in CronCreateResult.OtherOneShots.
type CronOneShot struct {
	ID            string `json:"id"`
	HumanSchedule string `json:"humanSchedule"`
	Prompt        string `json:"prompt"`
}

// CronDeleteResult is the structured result of the CronDelete tool.
type CronDeleteResult struct {
	ID              string `json:"id"`
	EndedLoopWakeup bool   `json:"endedLoopWakeup,omitempty"`
}

// CronListResult is the structured result of the CronList tool.
type CronListResult struct {
	Jobs []CronJob `json:"jobs"`
}

// CronJob is a scheduled prompt in a CronListResult.
type CronJob struct {
	ID            string `json:"id"`
	Cron          string `json:"cron"`
	HumanSchedule string `json:"humanSchedule"`
	Prompt        string `json:"prompt"`
	Recurring     bool   `json:"recurring,omitempty"`
	Durable       bool   `json:"durable,omitempty"`
	NextFireAt    int64  `json:"nextFireAt,omitempty"`
}

// ReportFindingsResult is the structured result of the ReportFindings
// tool: the findings, echoed.
type ReportFindingsResult struct {
	Count    int             `json:"count"`
	Level    Effort          `json:"level,omitempty"`
	Findings []ReviewFinding `json:"findings"`
}

// NotebookEditResult is the structured result of the NotebookEdit tool.
type NotebookEditResult struct {
	NewSource    string `json:"new_source"`
	OldSource    string `json:"old_source,omitempty"`
	CellID       string `json:"cell_id,omitempty"`
	CellType     string `json:"cell_type"`
	Language     string `json:"language"`
	EditMode     string `json:"edit_mode"`
	Error        string `json:"error,omitempty"`
	NotebookPath string `json:"notebook_path"`
	OriginalFile string `json:"original_file"`
	UpdatedFile  string `json:"updated_file"`
}

// MonitorResult is the structured result of the Monitor tool: the
// background task watching.
type MonitorResult struct {
	TaskID string `json:"taskId"`
	// TimeoutMS is the watch's deadline (0 when persistent).
	TimeoutMS  int64 `json:"timeoutMs"`
	Persistent bool  `json:"persistent,omitempty"`
	// KeptInSandboxByCheck: the command ran sandboxed only because its
	// permission check relied on the sandbox.
	KeptInSandboxByCheck bool `json:"keptInSandboxByCheck,omitempty"`
}

// TaskStopResult is the structured result of the TaskStop tool.
type TaskStopResult struct {
	Message  string `json:"message"`
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	Command  string `json:"command,omitempty"`
}
