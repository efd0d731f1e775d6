package claude

import "encoding/json"

// Inputs of the remaining built-in tools the TypeScript SDK's
// sdk-tools.d.ts (0.3.330) declares. Most are tools of claude.ai-connected
// or cloud sessions (Artifact, Projects, ClaudeDesign, RemoteTrigger,
// PushNotification, …) that CLI 2.1.330 does not offer an offline SDK
// session; they are typed so that a permission callback or hook sees them
// when a session does have them. The names are those the CLI calls the
// tools by (its system/init tool list).

func init() {
	for name, f := range map[string]func() ToolInput{
		"Artifact":                 func() ToolInput { return new(ArtifactInput) },
		"ClaudeDesign":             func() ToolInput { return new(ClaudeDesignInput) },
		"OfferChromeSetup":         func() ToolInput { return new(OfferChromeSetupInput) },
		"Projects":                 func() ToolInput { return new(ProjectsInput) },
		"ProposeGoal":              func() ToolInput { return new(ProposeGoalInput) },
		"propose_skills":           func() ToolInput { return new(ProposeSkillsInput) },
		"PushNotification":         func() ToolInput { return new(PushNotificationInput) },
		"ReadMcpResourceDirTool":   func() ToolInput { return new(ReadMCPResourceDirInput) },
		"ReadNotifications":        func() ToolInput { return new(ReadNotificationsInput) },
		"RefreshMcpTools":          func() ToolInput { return new(RefreshMCPToolsInput) },
		"RemoteTrigger":            func() ToolInput { return new(RemoteTriggerInput) },
		"SendFeedback":             func() ToolInput { return new(SendFeedbackInput) },
		"ShowOnboardingRolePicker": func() ToolInput { return new(ShowOnboardingRolePickerInput) },
	} {
		toolInputs[name] = f
	}
}

// ArtifactInput publishes an HTML page as a claude.ai artifact, or lists,
// reads, watches, pins artifacts or manages their assets (Action).
type ArtifactInput struct {
	// Action is "publish" (the default when empty), "list", "read",
	// "list_types", "watch", "unwatch", "status", "upload_asset",
	// "list_assets", "read_asset", "delete_asset", "pin" or "unpin".
	Action   string `json:"action,omitempty"`
	FilePath string `json:"file_path,omitempty"`
	// FilePaths uploads several assets at once (1–25), in place of
	// FilePath.
	FilePaths []string `json:"file_paths,omitempty"`
	Icon      string   `json:"icon,omitempty"`
	Favicon   string   `json:"favicon,omitempty"` // deprecated: Icon
	// Limit, PageToken and Scope ("mine", "shared", "all") page a list.
	Limit       int    `json:"limit,omitempty"`
	PageToken   string `json:"page_token,omitempty"`
	Scope       string `json:"scope,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Label       string `json:"label,omitempty"`
	// URL is the artifact to update, read, watch, pin, …
	URL    string `json:"url,omitempty"`
	Prompt string `json:"prompt,omitempty"` // read: what to extract
	// Force overwrites a newer version; only on the user's word.
	Force   bool   `json:"force,omitempty"`
	Pin     bool   `json:"pin,omitempty"`
	OutDir  string `json:"out_dir,omitempty"`
	AssetID string `json:"asset_id,omitempty"`
	After   string `json:"after,omitempty"`
	// Capabilities are the page's runtime capabilities, {name: config}.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	// Contract is the artifact's runtime version ("latest" or a version).
	Contract string `json:"contract,omitempty"`
}

// ClaudeDesignInput runs a Claude Design operation; "list" discovers
// the operations and their argument schemas.
type ClaudeDesignInput struct {
	Operation string `json:"operation"`
	// Arguments is the operation's input, a JSON object.
	Arguments json.RawMessage `json:"arguments"`
}

// OfferChromeSetupInput offers to connect the user's own Chrome.
type OfferChromeSetupInput struct {
	// Reason says what the task needs the user's browser for.
	Reason string `json:"reason,omitempty"`
}

// ProjectsInput reads or writes a claude.ai project's knowledge base.
type ProjectsInput struct {
	// Method is "project_info", "project_read", "project_search",
	// "project_write", "project_delete", "project_memory_list" or
	// "project_memory_read".
	Method string `json:"method"`
	Path   string `json:"path,omitempty"`
	// Content (inline text) or LocalPath (a file to upload) for
	// project_write.
	Content       string `json:"content,omitempty"`
	LocalPath     string `json:"local_path,omitempty"`
	PresentToUser bool   `json:"present_to_user,omitempty"`
	// Query and N (hits, default 5) for project_search.
	Query string `json:"query,omitempty"`
	N     int    `json:"n,omitempty"`
}

// ProposeGoalInput proposes a completion condition for the session
// (/goal).
type ProposeGoalInput struct {
	Condition string `json:"condition"`
	// AskUser asks for approval first; nil means true.
	AskUser *bool `json:"ask_user,omitempty"`
}

// ProposeSkillsInput proposes new skills or improvements to skills
// (the propose_skills tool).
type ProposeSkillsInput struct {
	Proposals []SkillProposal `json:"proposals"` // 1–3
}

// SkillProposal is one proposal of a ProposeSkillsInput.
type SkillProposal struct {
	Name string `json:"name"`
	// Kind is "new" or "improvement"; Target names the skill an
	// improvement changes.
	Kind        string      `json:"kind"`
	Target      string      `json:"target,omitempty"`
	Description string      `json:"description"`
	Evidence    []string    `json:"evidence,omitempty"`
	Edits       []SkillEdit `json:"edits,omitempty"`
	// SkillMD is a whole SKILL.md, for a new skill or a rewrite.
	SkillMD string `json:"skillMd,omitempty"`
}

// SkillEdit replaces text in a skill's SKILL.md.
type SkillEdit struct {
	OldString string `json:"old_string"`
	NewString string `json:"new_string"`
}

// PushNotificationInput sends the user a push notification.
type PushNotificationInput struct {
	Message string `json:"message"`
	Status  string `json:"status,omitempty"` // "proactive"
}

// ReadMCPResourceDirInput lists a directory resource of an MCP server.
type ReadMCPResourceDirInput struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

// ReadNotificationsInput reads the notifications queued for the session
// (no fields).
type ReadNotificationsInput struct{}

// RefreshMCPToolsInput re-lists the tools of one connected MCP server, or
// of all of them when Server is empty.
type RefreshMCPToolsInput struct {
	Server string `json:"server,omitempty"`
}

// RemoteTriggerInput manages remote triggers (scheduled cloud agents).
type RemoteTriggerInput struct {
	// Action is "list", "get", "create", "update", "run",
	// "create_webhook_trigger", "list_runs" or "get_run_log".
	Action    string `json:"action"`
	TriggerID string `json:"trigger_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Cursor    string `json:"cursor,omitempty"`
	// Body is the trigger, a JSON object, for create and update.
	Body json.RawMessage `json:"body,omitempty"`
}

// SendFeedbackInput files feedback about Claude Code.
type SendFeedbackInput struct {
	// Type is "bug", "idea" or "missing_capability".
	Type    string `json:"type"`
	Title   string `json:"title"`
	Details string `json:"details"`
	Area    string `json:"area,omitempty"`
	// FailureMode names a model-behaviour failure ("instruction_following",
	// "overeager", …, "other").
	FailureMode string `json:"failure_mode,omitempty"`
	// TaskCategory is "code_edit", "debug", "explain", "plan", "shell",
	// "search", "review" or "other".
	TaskCategory string `json:"task_category,omitempty"`
}

// ShowOnboardingRolePickerInput shows the onboarding role picker (no
// fields).
type ShowOnboardingRolePickerInput struct{}

func (*ArtifactInput) ToolName() string                 { return "Artifact" }
func (*ClaudeDesignInput) ToolName() string             { return "ClaudeDesign" }
func (*OfferChromeSetupInput) ToolName() string         { return "OfferChromeSetup" }
func (*ProjectsInput) ToolName() string                 { return "Projects" }
func (*ProposeGoalInput) ToolName() string              { return "ProposeGoal" }
func (*ProposeSkillsInput) ToolName() string            { return "propose_skills" }
func (*PushNotificationInput) ToolName() string         { return "PushNotification" }
func (*ReadMCPResourceDirInput) ToolName() string       { return "ReadMcpResourceDirTool" }
func (*ReadNotificationsInput) ToolName() string        { return "ReadNotifications" }
func (*RefreshMCPToolsInput) ToolName() string          { return "RefreshMcpTools" }
func (*RemoteTriggerInput) ToolName() string            { return "RemoteTrigger" }
func (*SendFeedbackInput) ToolName() string             { return "SendFeedback" }
func (*ShowOnboardingRolePickerInput) ToolName() string { return "ShowOnboardingRolePicker" }

func (*ArtifactInput) isToolInput()                 {}
func (*ClaudeDesignInput) isToolInput()             {}
func (*OfferChromeSetupInput) isToolInput()         {}
func (*ProjectsInput) isToolInput()                 {}
func (*ProposeGoalInput) isToolInput()              {}
func (*ProposeSkillsInput) isToolInput()            {}
func (*PushNotificationInput) isToolInput()         {}
func (*ReadMCPResourceDirInput) isToolInput()       {}
func (*ReadNotificationsInput) isToolInput()        {}
func (*RefreshMCPToolsInput) isToolInput()          {}
func (*RemoteTriggerInput) isToolInput()            {}
func (*SendFeedbackInput) isToolInput()             {}
func (*ShowOnboardingRolePickerInput) isToolInput() {}
