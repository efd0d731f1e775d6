package claude

import (
	"encoding/json"
	"errors"
)

// Structured results (UserMessage.ToolUseResult) of the tools that steer
// a session (plan mode, worktrees, tasks) and of the rest of the
// built-in tools, for DecodeToolUseResult, from the TypeScript SDK's
// sdk-tools.d.ts (0.3.330). Those the real-CLI tests produce offline
// (plan mode, worktrees, tasks, MCP resources) are checked against what
// CLI 2.1.197 and 2.1.330 send; the others (tools of claude.ai-connected
// and cloud sessions, WebFetch and WebSearch, which need the network)
// follow the declarations.

// EnterPlanModeResult is the structured result of the EnterPlanMode tool.
type EnterPlanModeResult struct {
	Message string `json:"message"`
}

// ExitPlanModeResult is the structured result of the ExitPlanMode tool.
type ExitPlanModeResult struct {
	// Plan is the plan shown to the user; nil when there was none.
	Plan    *string `json:"plan"`
	IsAgent bool    `json:"isAgent"`
	// FilePath is where the plan was saved.
	FilePath    string `json:"filePath,omitempty"`
	HasTaskTool bool   `json:"hasTaskTool,omitempty"`
	// PlanWasEdited is set when the user edited the plan.
	PlanWasEdited bool `json:"planWasEdited,omitempty"`
	// AwaitingLeaderApproval and RequestID: a teammate's plan sent to
	// the team leader for approval.
	AwaitingLeaderApproval bool   `json:"awaitingLeaderApproval,omitempty"`
	RequestID              string `json:"requestId,omitempty"`
}

// EnterWorktreeResult is the structured result of the EnterWorktree tool.
type EnterWorktreeResult struct {
	WorktreePath   string `json:"worktreePath"`
	WorktreeBranch string `json:"worktreeBranch,omitempty"`
	Message        string `json:"message"`
}

// ExitWorktreeResult is the structured result of the ExitWorktree tool.
type ExitWorktreeResult struct {
	// Action is "keep" or "remove".
	Action           string `json:"action"`
	OriginalCwd      string `json:"originalCwd"`
	WorktreePath     string `json:"worktreePath"`
	WorktreeBranch   string `json:"worktreeBranch,omitempty"`
	TmuxSessionName  string `json:"tmuxSessionName,omitempty"`
	DiscardedFiles   int    `json:"discardedFiles,omitempty"`
	DiscardedCommits int    `json:"discardedCommits,omitempty"`
	Message          string `json:"message"`
}

// TaskCreateResult is the structured result of the TaskCreate tool.
type TaskCreateResult struct {
	Task TaskRef `json:"task"`
}

// TaskRef is a task as TaskCreate reports it.
type TaskRef struct {
	ID          string `json:"id"`
	Subject     string `json:"subject"`
	Description string `json:"description,omitempty"`
}

// TaskGetResult is the structured result of the TaskGet tool; Task is
// nil for an unknown id.
type TaskGetResult struct {
	Task *TaskDetail `json:"task"`
}

// TaskDetail is a task as TaskGet reports it.
type TaskDetail struct {
	ID          string `json:"id"`
	Subject     string `json:"subject"`
	Description string `json:"description"`
	// Status is "pending", "in_progress" or "completed".
	Status    string   `json:"status"`
	Blocks    []string `json:"blocks"`
	BlockedBy []string `json:"blockedBy"`
}

// TaskListResult is the structured result of the TaskList tool.
type TaskListResult struct {
	Tasks []TaskSummary `json:"tasks"`
}

// TaskSummary is a task in a TaskListResult.
type TaskSummary struct {
	ID        string   `json:"id"`
	Subject   string   `json:"subject"`
	Status    string   `json:"status"`
	Owner     string   `json:"owner,omitempty"`
	BlockedBy []string `json:"blockedBy"`
}

// TaskUpdateResult is the structured result of the TaskUpdate tool.
type TaskUpdateResult struct {
	Success       bool              `json:"success"`
	TaskID        string            `json:"taskId"`
	UpdatedFields []string          `json:"updatedFields"`
	Error         string            `json:"error,omitempty"`
	StatusChange  *TaskStatusChange `json:"statusChange,omitempty"`
}

// TaskStatusChange is a task's status before and after a TaskUpdate.
type TaskStatusChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ListMCPResourcesResult is the structured result of the
// ListMcpResourcesTool tool: every resource of the servers asked.
type ListMCPResourcesResult []MCPResourceListing

// MCPResourceListing is one resource in a ListMCPResourcesResult.
type MCPResourceListing struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	MIMEType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
	// Server is the MCP server that has the resource.
	Server string `json:"server"`
}

// ReadMCPResourceToolResult is the structured result of the
// ReadMcpResourceTool tool. (ReadMCPResourceResult is the answer to the
// mcp_read_resource control request.)
type ReadMCPResourceToolResult struct {
	Contents []MCPResourceToolContents `json:"contents"`
	// Error says why the server could not read the resource.
	Error string `json:"error,omitempty"`
}

// MCPResourceToolContents is one item of a resource the model read:
// Text, or binary data the CLI saved to BlobSavedTo.
type MCPResourceToolContents struct {
	URI         string `json:"uri"`
	MIMEType    string `json:"mimeType,omitempty"`
	Text        string `json:"text,omitempty"`
	BlobSavedTo string `json:"blobSavedTo,omitempty"`
}

// ReadMCPResourceDirResult is the structured result of the
// ReadMcpResourceDirTool tool.
type ReadMCPResourceDirResult struct {
	// Resources are the directory's direct children; subdirectories have
	// MIMEType "inode/directory".
	Resources []MCPResourceDirEntry `json:"resources"`
	Error     string                `json:"error,omitempty"`
}

// MCPResourceDirEntry is one child in a ReadMCPResourceDirResult.
type MCPResourceDirEntry struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType,omitempty"`
}

// RefreshMCPToolsResult is the structured result of the RefreshMcpTools
// tool, one entry per server.
type RefreshMCPToolsResult []MCPToolsRefresh

// MCPToolsRefresh is one server's refresh.
type MCPToolsRefresh struct {
	Server string `json:"server"`
	// Status is "refreshed", "error" (the previous tools were kept) or
	// "not_connected".
	Status    string   `json:"status"`
	ToolCount int      `json:"toolCount,omitempty"`
	Added     []string `json:"added,omitempty"`
	Removed   []string `json:"removed,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// ScheduleWakeupResult is the structured result of the ScheduleWakeup
// tool.
type ScheduleWakeupResult struct {
	// ScheduledFor is the wake-up, in Unix milliseconds.
	ScheduledFor        int64 `json:"scheduledFor"`
	ClampedDelaySeconds int   `json:"clampedDelaySeconds"`
	WasClamped          bool  `json:"wasClamped"`
	Stopped             bool  `json:"stopped,omitempty"`
	CancelledWakeups    int   `json:"cancelledWakeups,omitempty"`
}

// WorkflowResult is the structured result of the Workflow tool: the
// background task running it.
type WorkflowResult struct {
	// Status is "async_launched" or "remote_launched".
	Status string `json:"status"`
	TaskID string `json:"taskId"`
	// TaskType is "local_workflow" or "remote_agent".
	TaskType      string `json:"taskType,omitempty"`
	WorkflowName  string `json:"workflowName,omitempty"`
	RunID         string `json:"runId,omitempty"`
	Summary       string `json:"summary,omitempty"`
	TranscriptDir string `json:"transcriptDir,omitempty"`
	ScriptPath    string `json:"scriptPath,omitempty"`
	SessionURL    string `json:"sessionUrl,omitempty"`
	Warning       string `json:"warning,omitempty"`
	Error         string `json:"error,omitempty"`
}

// WebFetchResult is the structured result of the WebFetch tool.
type WebFetchResult struct {
	Bytes    int    `json:"bytes"`
	Code     int    `json:"code"`
	CodeText string `json:"codeText"`
	// Result is what the prompt made of the page.
	Result     string  `json:"result"`
	DurationMS float64 `json:"durationMs"`
	URL        string  `json:"url"`
	// ArtifactRead is set when the page was a claude.ai artifact.
	ArtifactRead *ArtifactReadRef `json:"artifactRead,omitempty"`
}

// ArtifactReadRef names the artifact a read returned.
type ArtifactReadRef struct {
	Slug   string `json:"slug"`
	Ver    string `json:"ver,omitempty"`
	Seeded *bool  `json:"seeded,omitempty"`
}

// WebSearchResult is the structured result of the WebSearch tool.
type WebSearchResult struct {
	Query string `json:"query"`
	// Results holds the searches' hits and the model's commentary, in
	// order.
	Results         []WebSearchResultItem `json:"results"`
	DurationSeconds float64               `json:"durationSeconds"`
	SearchCount     int                   `json:"searchCount,omitempty"`
}

// WebSearchResultItem is the hits of one search (ToolUseID and Hits
// set) or a piece of commentary (Text set).
type WebSearchResultItem struct {
	ToolUseID string
	Hits      []WebSearchHit
	Text      string
}

// WebSearchHit is one hit of a search.
type WebSearchHit struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	// Snippet is the page text: PostToolUse hooks get it, the
	// tool_use_result does not.
	Snippet string `json:"snippet,omitempty"`
}

// UnmarshalJSON decodes either form of a result item.
func (it *WebSearchResultItem) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*it = WebSearchResultItem{}
		return json.Unmarshal(b, &it.Text)
	}
	var w struct {
		ToolUseID string         `json:"tool_use_id"`
		Content   []WebSearchHit `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*it = WebSearchResultItem{ToolUseID: w.ToolUseID, Hits: w.Content}
	return nil
}

// MarshalJSON encodes the item in the form it came in.
func (it WebSearchResultItem) MarshalJSON() ([]byte, error) {
	if it.ToolUseID == "" && it.Hits == nil {
		return json.Marshal(it.Text)
	}
	return json.Marshal(struct {
		ToolUseID string         `json:"tool_use_id"`
		Content   []WebSearchHit `json:"content"`
	}{it.ToolUseID, it.Hits})
}

// SendFeedbackResult is the structured result of the SendFeedback tool.
type SendFeedbackResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// RemoteTriggerResult is the structured result of the RemoteTrigger tool:
// the HTTP status and body of the trigger API's answer.
type RemoteTriggerResult struct {
	Status  int    `json:"status"`
	JSON    string `json:"json"`
	Summary string `json:"summary,omitempty"`
}

// ShowOnboardingRolePickerResult is the structured result of the
// ShowOnboardingRolePicker tool.
type ShowOnboardingRolePickerResult struct {
	Role      string `json:"role,omitempty"`
	Dismissed bool   `json:"dismissed,omitempty"`
}

// OfferChromeSetupResult is the structured result of the
// OfferChromeSetup tool.
type OfferChromeSetupResult struct {
	// Outcome is "connected", "not_now" or "no_attempt_yet".
	Outcome string `json:"outcome"`
}

// ReadNotificationsResult is the structured result of the
// ReadNotifications tool.
type ReadNotificationsResult struct {
	Notifications []QueuedNotification `json:"notifications"`
	// Remaining counts the notifications still queued.
	Remaining int    `json:"remaining"`
	ReadAt    string `json:"read_at,omitempty"`
}

// QueuedNotification is one notification ReadNotifications returned.
type QueuedNotification struct {
	NotificationID string `json:"notification_id"`
	Origin         string `json:"origin"`
	QueuedAt       string `json:"queued_at"`
	Content        string `json:"content"`
	ArrivedAt      string `json:"arrived_at,omitempty"`
}

// ProposeSkillsResult is the structured result of the propose_skills
// tool.
type ProposeSkillsResult struct {
	ProposalCount int `json:"proposalCount"`
}

// ProposeGoalResult is the structured result of the ProposeGoal tool.
type ProposeGoalResult struct {
	Condition string `json:"condition"`
	AskUser   bool   `json:"askUser"`
}

// PushNotificationResult is the structured result of the
// PushNotification tool.
type PushNotificationResult struct {
	Message   string `json:"message"`
	PushSent  bool   `json:"pushSent,omitempty"`
	LocalSent bool   `json:"localSent,omitempty"`
	// DisabledReason is "config_off", "user_present" or "no_transport"
	// when nothing was sent.
	DisabledReason string `json:"disabledReason,omitempty"`
	SentAt         string `json:"sentAt,omitempty"`
}

// ClaudeDesignResult is the structured result of the ClaudeDesign tool.
type ClaudeDesignResult struct {
	Operation string `json:"operation"`
	// Content is the operation's output, JSON objects.
	Content []json.RawMessage `json:"content"`
	IsError bool              `json:"isError,omitempty"`
}

// ProjectsResult is the structured result of the Projects tool. Method
// says which of the fields are set; Raw holds the whole result.
type ProjectsResult struct {
	// Method is the ProjectsInput.Method that ran.
	Method string `json:"method"`
	Notice string `json:"notice,omitempty"`
	// project_info.
	Name         string          `json:"name,omitempty"`
	Description  string          `json:"description,omitempty"`
	Instructions string          `json:"instructions,omitempty"`
	Docs         []ProjectDoc    `json:"-"`
	Knowledge    json.RawMessage `json:"knowledge,omitempty"`
	// project_info and project_memory_list.
	Files []ProjectFile `json:"files,omitempty"`
	// project_write: PresentToUser marks the deliverable the user must
	// see; LocalPath is the local file that was uploaded.
	PresentToUser bool   `json:"present_to_user,omitempty"`
	LocalPath     string `json:"local_path,omitempty"`
	// project_info: the project's sync sources, each {type, config}.
	SyncSources []json.RawMessage `json:"sync_sources,omitempty"`
	// project_read, project_write, project_delete, project_memory_read.
	Path      string `json:"path,omitempty"`
	Content   string `json:"content,omitempty"`
	FileKind  string `json:"file_kind,omitempty"`
	LocalFile string `json:"local_file,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	// project_search: Hits, and SearchDocs (document names).
	RAG        bool            `json:"rag,omitempty"`
	Hits       json.RawMessage `json:"hits,omitempty"`
	SearchDocs []string        `json:"-"`
	// project_write.
	DocUUID  string `json:"doc_uuid,omitempty"`
	Replaced bool   `json:"replaced,omitempty"`
	// project_delete.
	Deleted bool `json:"deleted,omitempty"`
	// project_memory_list and project_memory_read.
	SizeBytes int64  `json:"size_bytes,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ProjectDoc is a document of a project (project_info).
type ProjectDoc struct {
	Path      string `json:"path"`
	CreatedAt string `json:"created_at,omitempty"`
}

// ProjectFile is a project file (project_info) or memory file
// (project_memory_list).
type ProjectFile struct {
	Path      string `json:"path"`
	FileKind  string `json:"file_kind,omitempty"`
	CreatedAt string `json:"created_at,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
}

// UnmarshalJSON decodes the result; "docs" is documents for project_info
// and names for project_search.
func (r *ProjectsResult) UnmarshalJSON(b []byte) error {
	type plain ProjectsResult
	var p struct {
		plain
		Docs json.RawMessage `json:"docs"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ProjectsResult(p.plain)
	if len(p.Docs) > 0 && string(p.Docs) != "null" {
		var err error
		if r.Method == "project_search" {
			err = json.Unmarshal(p.Docs, &r.SearchDocs)
		} else {
			err = json.Unmarshal(p.Docs, &r.Docs)
		}
		if err != nil {
			return errors.New("claude: Projects result: docs: " + err.Error())
		}
	}
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ArtifactResult is the structured result of the Artifact tool, whose
// shape depends on the action: a publish (URL, Path, …), a list
// (Artifacts), a read (Read), a pin (Pin); the watch and asset actions'
// members are kept raw. Raw holds the whole result.
type ArtifactResult struct {
	// publish.
	URL              string          `json:"url,omitempty"`
	Path             string          `json:"path,omitempty"`
	ArtifactID       string          `json:"artifact_id,omitempty"`
	Title            string          `json:"title,omitempty"`
	Version          string          `json:"version,omitempty"`
	Contract         string          `json:"contract,omitempty"`
	Warnings         []string        `json:"warnings,omitempty"`
	Updated          bool            `json:"updated,omitempty"`
	Owned            bool            `json:"owned,omitempty"`
	Pinned           bool            `json:"pinned,omitempty"`
	Unchanged        bool            `json:"unchanged,omitempty"`
	Icon             string          `json:"icon,omitempty"`
	Audience         string          `json:"audience,omitempty"`
	PublishesLeft    *int            `json:"publishesRemaining,omitempty"`
	PublishesResetAt int64           `json:"publishesResetAt,omitempty"`
	Stored           json.RawMessage `json:"stored,omitempty"`
	Capabilities     json.RawMessage `json:"capabilities,omitempty"`
	LiveSubscription string          `json:"liveSubscription,omitempty"`
	FolderAudience   string          `json:"folder_audience,omitempty"`
	Seq              int             `json:"seq,omitempty"`
	FaviconSent      bool            `json:"faviconSent,omitempty"`
	IconDropped      bool            `json:"iconDropped,omitempty"`

	// list.
	Artifacts     []ArtifactListing `json:"artifacts,omitempty"`
	Truncated     bool              `json:"truncated,omitempty"`
	Total         int               `json:"total,omitempty"`
	NextPageToken string            `json:"next_page_token,omitempty"`
	// TotalAtLeast: Total is a lower bound. ExternalListed: the list
	// includes artifacts shared from outside.
	TotalAtLeast   bool `json:"total_at_least,omitempty"`
	ExternalListed bool `json:"external_listed,omitempty"`
	// FilterURL is the URL a watch was filtered to.
	FilterURL   string `json:"filter_url,omitempty"`
	PinsEnabled bool   `json:"pins_enabled,omitempty"`
	Scope       string `json:"scope,omitempty"`

	// read.
	Read         *ArtifactRead    `json:"read,omitempty"`
	ArtifactRead *ArtifactReadRef `json:"artifactRead,omitempty"`

	// pin and unpin.
	Pin *ArtifactPin `json:"pin,omitempty"`

	// watch, unwatch, status, and the asset actions, as sent.
	Watch        json.RawMessage `json:"watch,omitempty"`
	Unwatch      json.RawMessage `json:"unwatch,omitempty"`
	Watches      json.RawMessage `json:"watches,omitempty"`
	Arms         json.RawMessage `json:"arms,omitempty"`
	Written      json.RawMessage `json:"written,omitempty"`
	AssetUpload  json.RawMessage `json:"asset_upload,omitempty"`
	AssetUploads json.RawMessage `json:"asset_uploads,omitempty"`
	AssetList    json.RawMessage `json:"asset_list,omitempty"`
	AssetRead    json.RawMessage `json:"asset_read,omitempty"`
	AssetDelete  json.RawMessage `json:"asset_delete,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ArtifactListing is one artifact of a list.
type ArtifactListing struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Favicon   string `json:"favicon,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	// Rel is "mine" or "shared"; Role the user's role on a shared one.
	Rel      string `json:"rel,omitempty"`
	Role     string `json:"role,omitempty"`
	External bool   `json:"external,omitempty"`
	Pinned   bool   `json:"pinned,omitempty"`
}

// ArtifactRead is an artifact as read.
type ArtifactRead struct {
	URL        string  `json:"url"`
	Bytes      int     `json:"bytes"`
	Code       int     `json:"code"`
	CodeText   string  `json:"codeText"`
	Result     string  `json:"result"`
	DurationMS float64 `json:"durationMs"`
	Title      string  `json:"title,omitempty"`
}

// ArtifactPin is the outcome of a pin or unpin.
type ArtifactPin struct {
	Action string `json:"action"` // "pin" or "unpin"
	URL    string `json:"url"`
	Pinned bool   `json:"pinned"`
	Title  string `json:"title,omitempty"`
}

// UnmarshalJSON decodes the result, keeping it whole in Raw.
func (r *ArtifactResult) UnmarshalJSON(b []byte) error {
	type plain ArtifactResult
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = ArtifactResult(p)
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}
