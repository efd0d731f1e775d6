package claude

import (
	"encoding/json"
	"errors"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// AssistantMessage is part of the model's answer. The CLI writes one
// AssistantMessage per content block, all with the same Message.ID, so a
// reply with thinking, text and a tool call arrives as three messages.
type AssistantMessage struct {
	Meta
	Message APIMessage `json:"message"`
	// ParentToolUseID is set on a subagent's messages: the id of the Agent
	// tool call that started it.
	ParentToolUseID string `json:"parent_tool_use_id"`
	// RequestID is the Messages API's request id (not a control request
	// id); empty for synthetic messages.
	RequestID string `json:"request_id,omitempty"`
	// Error is set on the synthetic message the CLI writes when the API
	// call failed: server_error, authentication_failed, rate_limit,
	// overloaded, invalid_request, max_output_tokens, unknown, …
	Error string `json:"error,omitempty"`

	SubagentType    string        `json:"subagent_type,omitempty"`
	TaskDescription string        `json:"task_description,omitempty"`
	AgentID         string        `json:"agent_id,omitempty"`
	ToolUseMeta     []ToolUseMeta `json:"tool_use_meta,omitempty"`

	// Supersedes lists earlier messages (by UUID) this one replaces, after
	// a model refusal fallback or a tool call that could not be parsed:
	// remove them from a display when this one arrives (newer CLIs).
	Supersedes []string `json:"supersedes,omitempty"`
	// ResumeReason says why this turn continues one a restart
	// interrupted (newer CLIs; empty otherwise).
	ResumeReason string `json:"resume_reason,omitempty"`
	// UserMessageUUID is the UUID of the host message this turn answers,
	// on the turn's first top-level assistant message; UserMessageUUIDs
	// lists every host message the turn has taken in so far (newer CLIs).
	UserMessageUUID  string   `json:"user_message_uuid,omitempty"`
	UserMessageUUIDs []string `json:"user_message_uuids,omitempty"`
	// ResumedFromIncompleteThinking marks a turn that continued a
	// truncated one inside its last thinking block.
	ResumedFromIncompleteThinking bool `json:"resumed_from_incomplete_thinking,omitempty"`
	// Aborted is set when an interrupt cut the message short: it may end
	// mid-word and has no stop reason.
	Aborted bool `json:"aborted,omitempty"`
	// Timestamp is when the block finished, on the CLI's clock (display
	// only).
	Timestamp string `json:"timestamp,omitempty"`
	// ContextUsage is the structured /context report, on the synthetic
	// message that carries its table (newer CLIs).
	ContextUsage *ContextUsageReport `json:"context_usage,omitempty"`
	// UsageReport is the structured /usage report, on the synthetic
	// message that carries its text (newer CLIs, claude.ai sessions).
	UsageReport *UsageResult `json:"usage_report,omitempty"`
}

// ToolUseMeta names an MCP tool call for display.
type ToolUseMeta struct {
	ID                string `json:"id"`
	DisplayName       string `json:"display_name"`
	ServerDisplayName string `json:"server_display_name"`
}

// APIMessage is the Messages API message inside an assistant line.
type APIMessage struct {
	ID           string         `json:"id"`
	Model        string         `json:"model"`
	Role         string         `json:"role"`
	Content      []ContentBlock `json:"content"`
	StopReason   string         `json:"stop_reason,omitempty"`
	StopSequence string         `json:"stop_sequence,omitempty"`
	Usage        *Usage         `json:"usage,omitempty"`
}

// UnmarshalJSON decodes the API message, its content blocks typed.
func (m *APIMessage) UnmarshalJSON(b []byte) error { return unmarshal(b, m) }

// UnmarshalJSONFrom is the one-pass form of UnmarshalJSON that
// go-json-experiment/json uses.
func (m *APIMessage) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w struct {
		ID           string    `json:"id"`
		Model        string    `json:"model"`
		Role         string    `json:"role"`
		Content      blockList `json:"content"`
		StopReason   string    `json:"stop_reason"`
		StopSequence string    `json:"stop_sequence"`
		Usage        *Usage    `json:"usage"`
	}
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*m = APIMessage{ID: w.ID, Model: w.Model, Role: w.Role, Content: w.Content,
		StopReason: w.StopReason, StopSequence: w.StopSequence, Usage: w.Usage}
	return nil
}

// Usage is token usage as the Messages API reports it.
type Usage struct {
	InputTokens              int64  `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
	ServerToolUse            *struct {
		WebSearchRequests int64 `json:"web_search_requests"`
		WebFetchRequests  int64 `json:"web_fetch_requests"`
	} `json:"server_tool_use,omitempty"`
}

// Text returns the message's text blocks, concatenated.
func (m *AssistantMessage) Text() string {
	if len(m.Message.Content) == 1 { // as the CLI writes them: no copy
		if t, ok := m.Message.Content[0].(*TextBlock); ok {
			return t.Text
		}
	}
	var b strings.Builder
	for _, c := range m.Message.Content {
		if t, ok := c.(*TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolUses returns the message's tool calls.
func (m *AssistantMessage) ToolUses() []*ToolUseBlock {
	var out []*ToolUseBlock
	for _, c := range m.Message.Content {
		if t, ok := c.(*ToolUseBlock); ok {
			out = append(out, t)
		}
	}
	return out
}

// Synthetic reports a message the CLI made up rather than received from
// the API: an API error's text, or a local command's output.
func (m *AssistantMessage) Synthetic() bool { return m.Message.Model == "<synthetic>" }

// UserMessage is a user turn: what a host sends (build one with
// NewUserMessage), and what the CLI writes back — tool results, replays of
// host messages (IsReplay), and messages the CLI makes up (IsSynthetic:
// interrupt markers, Stop-hook feedback; subagent prompts carry
// ParentToolUseID).
type UserMessage struct {
	Meta
	// Content is the message's content. A plain string content decodes to
	// one *TextBlock.
	Content         []ContentBlock
	ParentToolUseID string
	IsReplay        bool
	IsSynthetic     bool
	Timestamp       string
	// ToolUseResult is the tool's structured result, next to the
	// tool_result block the model sees: for Bash {stdout, stderr,
	// interrupted, …}, for Write {type, filePath, content, …}, for MCP
	// tools the content array, and for errors the string "Error: …". See
	// DecodeToolUseResult.
	ToolUseResult   json.RawMessage
	SubagentType    string
	TaskDescription string
	AgentID         string
	// Priority is how a queued host message is scheduled ("now", "next",
	// "later"); empty means the CLI's default.
	Priority string
	// Origin says where the message came from when not from this host: a
	// channel server or another session (newer CLIs). nil means the host.
	Origin *MessageOrigin
	// ResumeReason says why this turn continues one a restart interrupted
	// (newer CLIs).
	ResumeReason string
	// ShouldQuery false appends the message to the transcript without
	// starting a turn: it joins the next message that does. nil is the
	// CLI's default (a turn).
	ShouldQuery *bool
	// ClientComposed says the host composed the text, not the user: the
	// CLI sends it as written, with no @path expansion, no slash command
	// and none of the context it attaches to a typed prompt.
	ClientComposed bool
	// PastedContent is what the user pasted rather than typed: each entry
	// a JSON string or an array of content blocks, appended after the
	// typed text (text only).
	PastedContent []json.RawMessage
	// InlinePastes are pastes still inside Content where the user put
	// them, one entry per paste, so the CLI can mark them as pasted.
	InlinePastes []string
	// FileAttachments are a replayed message's attachments, as the CLI
	// wrote them.
	FileAttachments []json.RawMessage
}

// NewUserMessage returns a user message with one text block, ready to
// Send. Append image and document blocks to Content as needed; set UUID to
// recognise the CLI's replay of it.
func NewUserMessage(text string, blocks ...ContentBlock) *UserMessage {
	content := make([]ContentBlock, 0, 1+len(blocks))
	if text != "" {
		content = append(content, &TextBlock{Text: text})
	}
	return &UserMessage{Content: append(content, blocks...)}
}

type wireUser struct {
	Type    string `json:"type"`
	Message struct {
		Role    string    `json:"role"`
		Content blockList `json:"content"`
	} `json:"message"`
	ParentToolUseID *string           `json:"parent_tool_use_id"`
	SessionID       string            `json:"session_id"`
	UUID            string            `json:"uuid,omitempty"`
	IsReplay        bool              `json:"isReplay,omitempty"`
	IsSynthetic     bool              `json:"isSynthetic,omitempty"`
	Timestamp       string            `json:"timestamp,omitempty"`
	ToolUseResult   json.RawMessage   `json:"tool_use_result,omitempty"`
	SubagentType    string            `json:"subagent_type,omitempty"`
	TaskDescription string            `json:"task_description,omitempty"`
	AgentID         string            `json:"agent_id,omitempty"`
	Priority        string            `json:"priority,omitempty"`
	Origin          *MessageOrigin    `json:"origin,omitempty"`
	ResumeReason    string            `json:"resume_reason,omitempty"`
	ShouldQuery     *bool             `json:"shouldQuery,omitempty"`
	ClientComposed  bool              `json:"client_composed,omitempty"`
	PastedContent   []json.RawMessage `json:"pasted_content,omitempty"`
	InlinePastes    []string          `json:"inline_pastes,omitempty"`
	FileAttachments []json.RawMessage `json:"file_attachments,omitempty"`
}

// MarshalJSON encodes the message as a line of the CLI's stdin.
func (m *UserMessage) MarshalJSON() ([]byte, error) {
	w := wireUser{
		Type: "user", SessionID: m.SessionID, UUID: m.UUID, IsReplay: m.IsReplay, IsSynthetic: m.IsSynthetic,
		Timestamp: m.Timestamp, ToolUseResult: m.ToolUseResult, SubagentType: m.SubagentType,
		TaskDescription: m.TaskDescription, AgentID: m.AgentID, Priority: m.Priority,
		Origin: m.Origin, ResumeReason: m.ResumeReason, ShouldQuery: m.ShouldQuery,
		ClientComposed: m.ClientComposed, PastedContent: m.PastedContent, InlinePastes: m.InlinePastes,
		FileAttachments: m.FileAttachments,
	}
	w.Message.Role = "user"
	w.Message.Content = m.Content
	if w.Message.Content == nil {
		w.Message.Content = blockList{}
	}
	if m.ParentToolUseID != "" {
		w.ParentToolUseID = &m.ParentToolUseID
	}
	return json.Marshal(&w)
}

// UnmarshalJSON decodes a user line.
func (m *UserMessage) UnmarshalJSON(b []byte) error { return unmarshal(b, m) }

// UnmarshalJSONFrom is the one-pass form of UnmarshalJSON that
// go-json-experiment/json uses.
func (m *UserMessage) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	var w wireUser
	if err := jsonv2.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	m.fromWire(&w)
	return nil
}

// fromWire sets m from its wire form.
func (m *UserMessage) fromWire(w *wireUser) {
	*m = UserMessage{
		Meta:    Meta{UUID: w.UUID, SessionID: w.SessionID},
		Content: w.Message.Content, IsReplay: w.IsReplay, IsSynthetic: w.IsSynthetic, Timestamp: w.Timestamp,
		ToolUseResult: w.ToolUseResult, SubagentType: w.SubagentType, TaskDescription: w.TaskDescription,
		AgentID: w.AgentID, Priority: w.Priority, Origin: w.Origin, ResumeReason: w.ResumeReason,
		ShouldQuery: w.ShouldQuery, ClientComposed: w.ClientComposed, PastedContent: w.PastedContent,
		InlinePastes: w.InlinePastes, FileAttachments: w.FileAttachments,
	}
	if w.ParentToolUseID != nil {
		m.ParentToolUseID = *w.ParentToolUseID
	}
}

// Text returns the message's text blocks, concatenated.
func (m *UserMessage) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if t, ok := c.(*TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolResults returns the message's tool_result blocks.
func (m *UserMessage) ToolResults() []*ToolResultBlock {
	var out []*ToolResultBlock
	for _, c := range m.Content {
		if t, ok := c.(*ToolResultBlock); ok {
			out = append(out, t)
		}
	}
	return out
}

// ErrNoToolUseResult is returned by DecodeToolUseResult for a message that
// carries no structured tool result.
var ErrNoToolUseResult = errors.New("claude: message has no tool_use_result")

// DecodeToolUseResult decodes m's structured tool result into a value of
// type T, e.g. BashResult for a Bash call. When the tool failed, the CLI
// sends the string "Error: …" instead: the error returned then is a
// *ToolUseError with that text. A number with a fraction where T holds
// an integer (a timestamp the CLI computed) is rounded, not refused.
func DecodeToolUseResult[T any](m *UserMessage) (T, error) {
	var v T
	raw := m.ToolUseResult
	if len(raw) == 0 || string(raw) == "null" {
		return v, ErrNoToolUseResult
	}
	if raw[0] == '"' {
		var s string
		if err := unmarshal(raw, &s); err != nil {
			return v, err
		}
		return v, &ToolUseError{Message: s}
	}
	if err := unmarshal(raw, &v); err != nil {
		return v, jsonError("tool_use_result", err)
	}
	return v, nil
}

// ToolUseError is a tool's failure as the CLI reports it in
// tool_use_result ("Error: …").
type ToolUseError struct {
	Message string
}

func (e *ToolUseError) Error() string { return "claude: tool failed: " + e.Message }

// BashResult is the structured result of the Bash tool.
type BashResult struct {
	Stdout           string `json:"stdout"`
	Stderr           string `json:"stderr"`
	Interrupted      bool   `json:"interrupted"`
	IsImage          bool   `json:"isImage"`
	NoOutputExpected bool   `json:"noOutputExpected"`
	// PersistedOutputPath is set when the output was too large to hand
	// to the model: the CLI saved all of it to this file, gave the model
	// a preview, and cut Stdout short. PersistedOutputSize is its size
	// in bytes.
	PersistedOutputPath string `json:"persistedOutputPath,omitempty"`
	PersistedOutputSize int64  `json:"persistedOutputSize,omitempty"`
	// RawOutputPath is the file holding a large MCP tool's raw output.
	RawOutputPath string `json:"rawOutputPath,omitempty"`
	// BackgroundTaskID is set when the command runs in the background:
	// because the user backgrounded it (BackgroundedByUser), or because it
	// hit its timeout (TimedOutAfterMS, the timeout).
	BackgroundTaskID   string `json:"backgroundTaskId,omitempty"`
	BackgroundedByUser bool   `json:"backgroundedByUser,omitempty"`
	TimedOutAfterMS    int64  `json:"timedOutAfterMs,omitempty"`
	// BackgroundCwdHint notes that a backgrounded cd did not change the
	// session's directory.
	BackgroundCwdHint string `json:"backgroundCwdHint,omitempty"`
	// BackgroundEndsWithFinalResponse: the backgrounded command ends with
	// its caller's final response, so no completion notice follows.
	BackgroundEndsWithFinalResponse bool `json:"backgroundEndsWithFinalResponse,omitempty"`
	// BackgroundWakesOwner: the subagent that owns the command waits for
	// it and is woken by its end.
	BackgroundWakesOwner bool `json:"backgroundWakesOwner,omitempty"`
	// DangerouslyDisableSandbox says the command ran outside the sandbox.
	DangerouslyDisableSandbox bool `json:"dangerouslyDisableSandbox,omitempty"`
	// ReturnCodeInterpretation explains a non-error exit code with a
	// meaning of its own (grep's 1: no match).
	ReturnCodeInterpretation string `json:"returnCodeInterpretation,omitempty"`
	// StructuredContent are structured content blocks of the output.
	StructuredContent []json.RawMessage `json:"structuredContent,omitempty"`
	// StaleReadFileStateHint and GHRateLimitHint are notes the CLI added
	// for the model: files read earlier that the command changed, and a
	// GitHub rate limit a gh command hit.
	StaleReadFileStateHint string `json:"staleReadFileStateHint,omitempty"`
	GHRateLimitHint        string `json:"ghRateLimitHint,omitempty"`
	// GitOperation is the git or gh operation the command performed, as
	// the CLI recognised it.
	GitOperation *GitOperation `json:"gitOperation,omitempty"`
}

// GitOperation is BashResult.GitOperation: at most one of each kind.
type GitOperation struct {
	Commit *struct {
		SHA    string `json:"sha"`
		Kind   string `json:"kind"` // committed, amended, cherry-picked
		Branch string `json:"branch,omitempty"`
	} `json:"commit,omitempty"`
	Push *struct {
		Branch string `json:"branch"`
	} `json:"push,omitempty"`
	Branch *struct {
		Ref    string `json:"ref"`
		Action string `json:"action"` // merged, rebased
	} `json:"branch,omitempty"`
	PR *struct {
		Number int    `json:"number"`
		URL    string `json:"url,omitempty"`
		Action string `json:"action"` // created, edited, merged, commented, closed, …
	} `json:"pr,omitempty"`
}

// WriteResult is the structured result of the Write tool.
type WriteResult struct {
	Type            string          `json:"type"` // "create" or "update"
	FilePath        string          `json:"filePath"`
	Content         string          `json:"content"`
	StructuredPatch json.RawMessage `json:"structuredPatch"`
	OriginalFile    *string         `json:"originalFile"`
	// GitDiff is the write as a git diff, when the file is in a
	// repository and the CLI computed one.
	GitDiff *GitDiff `json:"gitDiff,omitempty"`
	// UserModified says the user changed the content before it was
	// written; Staged that the file was staged rather than written.
	UserModified bool `json:"userModified,omitempty"`
	Staged       bool `json:"staged,omitempty"`
}

// AgentResult is the structured result of the Agent (subagent) tool.
type AgentResult struct {
	Status            string          `json:"status"`
	Prompt            string          `json:"prompt"`
	AgentID           string          `json:"agentId"`
	AgentType         string          `json:"agentType"`
	Content           json.RawMessage `json:"content"`
	ResolvedModel     string          `json:"resolvedModel"`
	TotalDurationMS   int64           `json:"totalDurationMs"`
	TotalTokens       int64           `json:"totalTokens"`
	TotalToolUseCount int64           `json:"totalToolUseCount"`
	Usage             *Usage          `json:"usage"`
	// IsAsync is set when the agent runs in the background (CLI 2.1.330
	// and later, Status "async_launched"): its answer comes in a later
	// turn, announced by a *TaskNotificationMessage.
	IsAsync          bool   `json:"isAsync,omitempty"`
	Description      string `json:"description,omitempty"`
	OutputFile       string `json:"outputFile,omitempty"`
	CanContinueAgent bool   `json:"canContinueAgent,omitempty"`
	// CanReadOutputFile says the caller may read OutputFile.
	CanReadOutputFile bool `json:"canReadOutputFile,omitempty"`
	// ModelsUsed and ToolsUsed name what the agent ran on and called;
	// ToolStats counts its calls by kind.
	ModelsUsed []string        `json:"modelsUsed,omitempty"`
	ToolsUsed  []string        `json:"toolsUsed,omitempty"`
	ToolStats  *AgentToolStats `json:"toolStats,omitempty"`
	// WorktreePath and WorktreeBranch are the agent's worktree, when it
	// ran isolated in one.
	WorktreePath   string `json:"worktreePath,omitempty"`
	WorktreeBranch string `json:"worktreeBranch,omitempty"`
	// TaskID is the background task running the agent; SessionURL the
	// remote session, for an agent run remotely.
	TaskID     string `json:"taskId,omitempty"`
	SessionURL string `json:"sessionUrl,omitempty"`
}

// AgentToolStats is AgentResult.ToolStats.
type AgentToolStats struct {
	ReadCount      int `json:"readCount"`
	SearchCount    int `json:"searchCount"`
	BashCount      int `json:"bashCount"`
	EditFileCount  int `json:"editFileCount"`
	LinesAdded     int `json:"linesAdded"`
	LinesRemoved   int `json:"linesRemoved"`
	OtherToolCount int `json:"otherToolCount"`
	FrameCount     int `json:"frameCount,omitempty"`
}

// AskUserQuestionResult is the structured result of AskUserQuestion: the
// questions and the answers the host gave, by question text.
type AskUserQuestionResult struct {
	Questions json.RawMessage   `json:"questions"`
	Answers   map[string]string `json:"answers"`
	// Response is text the user typed instead of picking an option.
	Response string `json:"response,omitempty"`
	// Annotations are per-question notes, by question text.
	Annotations map[string]QuestionAnnotation `json:"annotations,omitempty"`
	// AFKTimeoutMS is set when the dialog resolved itself after this long
	// idle (the user away).
	AFKTimeoutMS int64 `json:"afkTimeoutMs,omitempty"`
}

func (*AssistantMessage) isMessage() {}
func (*UserMessage) isMessage()      {}
