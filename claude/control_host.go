package claude

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Control requests an editor or UI host makes of the CLI: @-mention file
// suggestions, a background task's output, calls to the CLI's MCP tools,
// the repository root, the files already read, the prompt's colour and
// whether anyone watches; the "spec method" shape of control.go. What
// each CLI does with them, as the real-CLI tests find it:
//
//   - file_suggestions, mcp_call, register_repo_root, seed_read_state:
//     2.1.197 and 2.1.330.
//   - get_task_output, set_has_subscribers: 2.1.330; 2.1.197 answers with a
//     *ControlError matching ErrUnsupportedRequest.
//   - set_color: both CLIs answer ErrUnsupportedRequest in a stream-json
//     session (2.1.330 serves it only to a Remote Control bridge that
//     registered a colour callback); the method is there for the CLIs
//     and transports that do.

// FileSuggestionsParams are the parameters of Session.FileSuggestions.
type FileSuggestionsParams struct {
	// Query is the partial path after an "@", as a user types it.
	Query string `json:"query"`
}

// FileSuggestionsResult is the CLI's @-mention completion for a query:
// the same fuzzy-matched paths its terminal UI shows.
type FileSuggestionsResult struct {
	Suggestions []FileSuggestion `json:"suggestions"`
	// Cwd is the directory the paths are relative to (2.1.330; "" from
	// 2.1.197, where they are relative to the session's directory).
	Cwd string          `json:"cwd,omitempty"`
	Raw json.RawMessage `json:"-"`
}

// FileSuggestion is one completion.
type FileSuggestion struct {
	// Path is the path as shown, relative to Cwd; a directory ends in
	// "/".
	Path string `json:"path"`
}

// FileSuggestions asks the CLI for @-mention completions of a partial
// path. The CLI builds its file index in the background on the first
// request, so an early answer may be empty: ask again.
func (s *Session) FileSuggestions(ctx context.Context, params *FileSuggestionsParams) (*FileSuggestionsResult, error) {
	if params == nil {
		params = &FileSuggestionsParams{}
	}
	r := &FileSuggestionsResult{}
	if err := s.requestInto(ctx, "file_suggestions", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// TaskOutputParams are the parameters of Session.TaskOutput.
type TaskOutputParams struct {
	// TaskID is a background shell or Monitor task of the session,
	// running or ended: the TaskID of its TaskStartedMessage.
	TaskID string `json:"task_id"`
}

// TaskOutputResult is the end of a background task's output.
type TaskOutputResult struct {
	// Output is at most the last 8 KiB the command wrote, decoded as
	// UTF-8, escape sequences included: render it as plain text.
	Output string `json:"output"`
	// TotalBytes is the size of the whole output.
	TotalBytes int64 `json:"total_bytes"`
	// Truncated is set when Output is only the end of a longer output.
	Truncated bool            `json:"truncated"`
	Raw       json.RawMessage `json:"-"`
}

// TaskOutput reads the end of a background shell or Monitor task's
// output without a model turn (2.1.330; 2.1.197 answers
// ErrUnsupportedRequest). A host polls it while the task runs. An id that
// is no task of the session, nor shaped like one, is a *ControlError; an
// ended task whose output file is gone reads as empty.
func (s *Session) TaskOutput(ctx context.Context, params *TaskOutputParams) (*TaskOutputResult, error) {
	if params == nil || params.TaskID == "" {
		return nil, errors.New("claude: get_task_output: no task id")
	}
	r := &TaskOutputResult{}
	if err := s.requestInto(ctx, "get_task_output", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// MCPCallParams are the parameters of Session.CallMCPTool.
type MCPCallParams struct {
	// Tool is the fully qualified tool name, mcp__<server>__<tool>
	// (server names normalised: characters other than [a-zA-Z0-9_-]
	// become "_").
	Tool string `json:"tool"`
	// Arguments are the tool's arguments, a JSON object; nil sends none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// TimeoutMS bounds the tool's run (the CLI clamps it to 1 s–10 min).
	// 2.1.330 routes a call that sets it through its staging engine and
	// adds a "staging" member to the answer (see MCPCallResult.Raw).
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// CheckPermissions decides the call as if the model made it:
	// permission rules, mode, hooks, and a CanUseTool request when one
	// must ask. A refused call never reaches the server. Only CLIs that
	// list "mcp_call_check_permissions_v1" in their capabilities honour
	// it; an older CLI runs the tool unchecked.
	CheckPermissions bool `json:"check_permissions,omitempty"`
	// ResultNotForModel returns the server's own content blocks, not the
	// ones a model turn would see (CLIs listing
	// "mcp_call_result_not_for_model_v1"; others ignore it).
	ResultNotForModel bool `json:"result_not_for_model,omitempty"`
	// SoftErrorResult asks for the tool's own error result: a tool that
	// failed (CallToolResult.isError) then answers with IsError set and
	// its content, not a *ControlError carrying its text. Only CLIs that
	// list "mcp_call_soft_error_result_v1" in their capabilities honour it
	// (2.1.331 and later); others ignore it, so check IsError and the
	// error alike.
	SoftErrorResult bool `json:"soft_error_result,omitempty"`
}

// MCPCallResult is an MCP tool's result, as the CLI got it.
type MCPCallResult struct {
	// Content is the tool's content blocks, or the string a legacy
	// server returned.
	Content json.RawMessage `json:"content"`
	// StructuredContent is the tool's structured output, if it has one.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
	// IsError is the tool's own failure, reported as a result with
	// MCPCallParams.SoftErrorResult.
	IsError bool            `json:"isError,omitempty"`
	Raw     json.RawMessage `json:"-"`
}

// MCPContentBlock is one content block of an MCPCallResult.
type MCPContentBlock struct {
	// Type is "text", "image", "audio", "resource", "resource_link", …
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"` // base64, for images and audio
	MIMEType string `json:"mimeType,omitempty"`
}

// MCPResourceLink is an MCP resource link, as a task's notification
// carries them (TaskNotificationMessage.ResourceLinks).
type MCPResourceLink struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        int64           `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// Blocks decodes Content as content blocks; a string Content is one text
// block.
func (r *MCPCallResult) Blocks() ([]MCPContentBlock, error) {
	if len(r.Content) == 0 || string(r.Content) == "null" {
		return nil, nil
	}
	if r.Content[0] == '"' {
		var s string
		if err := unmarshal(r.Content, &s); err != nil {
			return nil, jsonError("mcp_call content", err)
		}
		return []MCPContentBlock{{Type: "text", Text: s}}, nil
	}
	var bs []MCPContentBlock
	if err := unmarshal(r.Content, &bs); err != nil {
		return nil, jsonError("mcp_call content", err)
	}
	return bs, nil
}

// CallMCPTool calls a tool of an external MCP server the CLI is
// connected to, without a model turn. The CLI refuses in-process
// servers (MCPSDKServer: call them directly) and a server that is not
// connected, with a *ControlError; without CheckPermissions nothing asks
// for permission, since the control channel is trusted.
func (s *Session) CallMCPTool(ctx context.Context, params *MCPCallParams) (*MCPCallResult, error) {
	if params == nil || params.Tool == "" {
		return nil, errors.New("claude: mcp_call: no tool")
	}
	if len(params.Arguments) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(params.Arguments, &obj); err != nil || obj == nil {
			return nil, errors.New("claude: mcp_call: arguments must be a JSON object")
		}
	}
	r := &MCPCallResult{}
	if err := s.requestInto(ctx, "mcp_call", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// RegisterRepoRootParams are the parameters of Session.RegisterRepoRoot.
type RegisterRepoRootParams struct {
	// Directory must be a strict subdirectory of the session's working
	// directory or of one of Options.AddDirs.
	Directory string `json:"directory"`
	// ReloadClaudeMD, ReloadPlugins and ReloadSkills re-read what the
	// new root brings.
	ReloadClaudeMD bool `json:"reload_claude_md,omitempty"`
	ReloadPlugins  bool `json:"reload_plugins,omitempty"`
	ReloadSkills   bool `json:"reload_skills,omitempty"`
}

// RegisterRepoRootResult is the directory as the CLI registered it.
type RegisterRepoRootResult struct {
	// Directory is the absolute, resolved path.
	Directory string          `json:"directory"`
	Raw       json.RawMessage `json:"-"`
}

// RegisterRepoRoot adds a working directory to the session, as /add-dir
// does. 2.1.330 refuses a directory that is already registered with a
// *ControlError; 2.1.197 accepts it again.
func (s *Session) RegisterRepoRoot(ctx context.Context, params *RegisterRepoRootParams) (*RegisterRepoRootResult, error) {
	if params == nil || params.Directory == "" {
		return nil, errors.New("claude: register_repo_root: no directory")
	}
	r := &RegisterRepoRootResult{}
	if err := s.requestInto(ctx, "register_repo_root", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// SeedReadStateParams are the parameters of Session.SeedReadState.
type SeedReadStateParams struct {
	// Path is the file the host saw read.
	Path string
	// ModTime is the file's modification time when it was read; the CLI
	// ignores the seed when the file changed since (a later mtime).
	ModTime time.Time
}

// MarshalJSON sends ModTime as the CLI wants it, in Unix milliseconds.
func (p SeedReadStateParams) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Path  string `json:"path"`
		MTime int64  `json:"mtime"`
	}{p.Path, p.ModTime.UnixMilli()})
}

// SeedReadState tells the CLI a file was read at ModTime, so that an
// Edit or Write of it passes the CLI's "read it first" check although
// the Read is no longer in the conversation (after compaction, or in a
// conversation the host rebuilt). The answer is empty whether or not the
// CLI took the seed: it drops one for a file it may not read, that
// changed since ModTime, or that is too large.
func (s *Session) SeedReadState(ctx context.Context, params *SeedReadStateParams) error {
	if params == nil || params.Path == "" {
		return errors.New("claude: seed_read_state: no path")
	}
	_, err := s.request(ctx, "seed_read_state", params)
	return err
}

// SetColor sets the session's accent colour: an agent colour name
// ("red", "blue", …) or "default" to reset. Both pinned CLIs answer
// ErrUnsupportedRequest in a stream-json session; 2.1.330 serves it only
// where a UI registered a colour callback (Remote Control).
func (s *Session) SetColor(ctx context.Context, color string) error {
	if color == "" {
		return errors.New("claude: set_color: no colour")
	}
	_, err := s.request(ctx, "set_color", struct {
		Color string `json:"color"`
	}{color})
	return err
}

// SetHasSubscribersParams are the parameters of Session.SetHasSubscribers.
type SetHasSubscribersParams struct {
	// HasSubscribers: false means nobody watches the output now, true
	// that somebody does, nil that the host does not know (counted as
	// true).
	HasSubscribers *bool `json:"has_subscribers"`
}

// SetHasSubscribers tells the CLI whether anybody watches the output the
// host passes on (2.1.330; 2.1.197 answers ErrUnsupportedRequest). It
// matters only to a CLI started with CLAUDE_CODE_STREAM_EVENT_HOLD_MS
// and CLAUDE_CODE_STREAM_EVENT_NO_SUBSCRIBER_HOLD_MS, which then holds
// stream deltas longer while nobody watches; no line is ever dropped.
// Send it when the answer changes, and again to a new process.
func (s *Session) SetHasSubscribers(ctx context.Context, params *SetHasSubscribersParams) error {
	if params == nil {
		params = &SetHasSubscribersParams{}
	}
	_, err := s.request(ctx, "set_has_subscribers", params)
	return err
}
