package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// This file holds the typed host→CLI control requests beyond the basic
// four (Interrupt, SetModel, SetPermissionMode, SetMaxThinkingTokens,
// in session.go).
//
// Requests whose answer carries data use the "spec method" shape,
// (ctx, *XParams) (*XResult, error), with nil params meaning defaults: a
// newer CLI can grow either side without breaking a signature. Every
// result keeps the CLI's whole answer in Raw, fields Tether does not
// model included. Requests the CLI answers with no payload return just an
// error.
//
// A result that does not decode into its Go type (a field that changed
// shape in a newer CLI) is not an error: the method logs a warning and
// returns the result with what decoded and Raw, because a user asking for
// their context usage should not lose the answer to a cosmetic change.

// EnvEnableFileCheckpointing is the environment variable that turns on
// file checkpointing for a stream-json session, which RewindFiles needs:
// Options.EnableFileCheckpointing sets it. Without it the CLI
// answers every rewind with CanRewind false ("File rewinding is not
// enabled.").
const EnvEnableFileCheckpointing = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"

// requestInto sends a control request and decodes the CLI's answer into
// v, keeping the answer as it came in *raw (a typed result's Raw field).
func (s *Session) requestInto(ctx context.Context, subtype string, params, v any, raw *json.RawMessage) error {
	b, err := s.request(ctx, subtype, params)
	if err != nil {
		return err
	}
	s.decodeResult(subtype, b, v)
	*raw = b
	return nil
}

// decodeResult decodes a control response payload into v, keeping going
// (with a warning) when it does not fit.
func (s *Session) decodeResult(subtype string, raw json.RawMessage, v any) {
	if len(raw) == 0 {
		return
	}
	if err := unmarshal(raw, v); err != nil {
		s.log.Warn("claude: control response not understood; see the result's Raw", "subtype", subtype, "err", err)
	}
}

// ContextUsageDetail is how much work ContextUsage asks the CLI to do.
type ContextUsageDetail string

// Context usage detail levels.
const (
	// ContextUsageDetailFull counts every category with the Messages
	// API's token counting endpoint (the CLI's default; about a second).
	ContextUsageDetailFull ContextUsageDetail = "full"
	// ContextUsageDetailSummary answers from the last response's usage and
	// local estimates, with no token counting calls. CLI 2.1.197 ignores
	// it and counts in full.
	ContextUsageDetailSummary ContextUsageDetail = "summary"
)

// ContextUsageParams are the parameters of Session.ContextUsage.
type ContextUsageParams struct {
	// Detail is ContextUsageDetailFull or ContextUsageDetailSummary; ""
	// means the CLI's default (full).
	Detail ContextUsageDetail `json:"detail,omitempty"`
}

// ContextUsageResult is the context window's use, by category, as the
// CLI's /context command shows it.
type ContextUsageResult struct {
	Categories   []ContextCategory `json:"categories"`
	TotalTokens  int64             `json:"totalTokens"`
	MaxTokens    int64             `json:"maxTokens"`
	RawMaxTokens int64             `json:"rawMaxTokens"`
	// Percentage is TotalTokens as a share of MaxTokens, 0–100.
	Percentage           float64 `json:"percentage"`
	Model                string  `json:"model"`
	AutoCompactThreshold int64   `json:"autoCompactThreshold,omitempty"`
	IsAutoCompactEnabled bool    `json:"isAutoCompactEnabled"`

	MemoryFiles []ContextMemoryFile `json:"memoryFiles"`
	MCPTools    []ContextMCPTool    `json:"mcpTools"`
	Agents      []ContextAgent      `json:"agents"`
	// APIUsage is the last API response's usage; nil before the first.
	APIUsage *Usage `json:"apiUsage"`

	// The finer breakdown newer CLIs add: each in-context MCP server's
	// instructions, the deferred built-in tools, the built-in tools and
	// system prompt sections by name, and the slash commands' and skills'
	// listings.
	MCPInstructions      []ContextNamedTokens `json:"mcpInstructions,omitempty"`
	DeferredBuiltinTools []ContextMCPTool     `json:"deferredBuiltinTools,omitempty"`
	SystemTools          []ContextNamedTokens `json:"systemTools,omitempty"`
	SystemPromptSections []ContextNamedTokens `json:"systemPromptSections,omitempty"`
	SlashCommands        *ContextCommands     `json:"slashCommands,omitempty"`
	// Skills is {totalSkills, includedSkills, tokens, skillFrontmatter},
	// kept as sent.
	Skills json.RawMessage `json:"skills,omitempty"`
	// MessageBreakdown splits the messages' tokens by kind (tool calls,
	// tool results, attachments, …), kept as sent.
	MessageBreakdown json.RawMessage `json:"messageBreakdown,omitempty"`
	// GridRows is the square grid the terminal draws, kept as sent.
	GridRows json.RawMessage `json:"gridRows,omitempty"`

	// Raw is the CLI's whole answer.
	Raw json.RawMessage `json:"-"`
}

// ContextNamedTokens is a named part of the context and its size. For
// MCP instructions the name is the server's (ServerName).
type ContextNamedTokens struct {
	Name       string `json:"name,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	Tokens     int64  `json:"tokens"`
}

// ContextCommands is ContextUsageResult.SlashCommands: how many slash
// commands there are, how many the model is told about, and their cost.
type ContextCommands struct {
	TotalCommands    int   `json:"totalCommands"`
	IncludedCommands int   `json:"includedCommands"`
	Tokens           int64 `json:"tokens"`
}

// ContextUsageReport is the structured /context report a synthetic
// AssistantMessage carries (AssistantMessage.ContextUsage): the same data
// as ContextUsageResult, in the snake_case form of the message stream.
type ContextUsageReport struct {
	Model        string  `json:"model"`
	TotalTokens  int64   `json:"total_tokens"`
	RawMaxTokens int64   `json:"raw_max_tokens"`
	Percentage   float64 `json:"percentage"`
	// OverLimit is set when the context is over a limit: TokensOver by
	// how much, Kind hard_limit or compaction_window.
	OverLimit *struct {
		TokensOver int64  `json:"tokens_over"`
		Kind       string `json:"kind"`
	} `json:"over_limit,omitempty"`
	Categories []ContextCategory `json:"categories"`
	MCPTools   []struct {
		Name       string `json:"name"`
		ServerName string `json:"server_name"`
		Tokens     int64  `json:"tokens"`
	} `json:"mcp_tools"`
	MemoryFiles []ContextMemoryFile `json:"memory_files"`
	Agents      []struct {
		AgentType string `json:"agent_type"`
		Source    string `json:"source"`
		Tokens    int64  `json:"tokens"`
	} `json:"agents"`
	Skills []struct {
		Name       string `json:"name"`
		Source     string `json:"source"`
		PluginName string `json:"plugin_name,omitempty"`
		Tokens     int64  `json:"tokens"`
	} `json:"skills,omitempty"`
}

// ContextCategory is one row of the context breakdown: the system prompt,
// tools, messages, free space...
type ContextCategory struct {
	// ID names the row stably ("system_prompt", "messages", "free_space",
	// …); CLI 2.1.197 sends none, so match on Name there.
	ID     string `json:"id,omitempty"`
	Name   string `json:"name"`
	Tokens int64  `json:"tokens"`
	Color  string `json:"color,omitempty"`
	// Kind is "used", "free", "buffer" or "deferred" (newer CLIs only).
	Kind       string `json:"kind,omitempty"`
	IsDeferred bool   `json:"isDeferred,omitempty"`
}

// ContextMemoryFile is a memory file (CLAUDE.md) in the context.
type ContextMemoryFile struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Tokens int64  `json:"tokens"`
}

// ContextMCPTool is an MCP tool's definition in the context.
type ContextMCPTool struct {
	Name       string `json:"name"`
	ServerName string `json:"serverName"`
	Tokens     int64  `json:"tokens"`
	IsLoaded   bool   `json:"isLoaded,omitempty"`
}

// ContextAgent is a custom agent's definition in the context.
type ContextAgent struct {
	AgentType string `json:"agentType"`
	Source    string `json:"source"`
	Tokens    int64  `json:"tokens"`
}

// ContextUsage reports how full the context window is, by category. With
// the default detail the CLI counts tokens through the Messages API, which
// takes about a second.
func (s *Session) ContextUsage(ctx context.Context, params *ContextUsageParams) (*ContextUsageResult, error) {
	if params == nil {
		params = &ContextUsageParams{}
	}
	r := &ContextUsageResult{}
	if err := s.requestInto(ctx, "get_context_usage", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// UsageParams are the parameters of Session.Usage.
type UsageParams struct {
	// SkipBehaviors skips the scan of local transcripts that fills
	// UsageResult.Behaviors (newer CLIs; 2.1.197 ignores it).
	SkipBehaviors bool `json:"skip_behaviors,omitempty"`
}

// UsageResult is the data behind the CLI's /usage command: this
// session's cost and usage, and, for subscription accounts, the plan's
// rate limits. The CLI marks the shape experimental.
type UsageResult struct {
	Session SessionUsage `json:"session"`
	// SubscriptionType is "pro", "max", "team", "enterprise", or "" for an
	// API key or a cloud provider.
	SubscriptionType string `json:"subscription_type"`
	// RateLimitsAvailable is false when plan limits do not apply (API
	// keys, cloud providers); RateLimits is then null.
	RateLimitsAvailable bool `json:"rate_limits_available"`
	// RateLimits are the plan's utilisation windows, as the CLI sent them
	// (five_hour, seven_day, …).
	RateLimits json.RawMessage `json:"rate_limits"`
	// Behaviors is what contributes to the plan's usage, from a scan of
	// local transcripts (subscription accounts only), as the CLI sent it.
	Behaviors json.RawMessage `json:"behaviors"`

	Raw json.RawMessage `json:"-"`
}

// SessionUsage is what the session has used and spent so far.
type SessionUsage struct {
	TotalCostUSD       float64               `json:"total_cost_usd"`
	TotalAPIDurationMS int64                 `json:"total_api_duration_ms"`
	TotalDurationMS    int64                 `json:"total_duration_ms"`
	TotalLinesAdded    int64                 `json:"total_lines_added"`
	TotalLinesRemoved  int64                 `json:"total_lines_removed"`
	ModelUsage         map[string]ModelUsage `json:"model_usage"`
}

// Usage reports the session's cost and usage totals (and plan rate
// limits for subscription accounts).
func (s *Session) Usage(ctx context.Context, params *UsageParams) (*UsageResult, error) {
	if params == nil {
		params = &UsageParams{}
	}
	r := &UsageResult{}
	if err := s.requestInto(ctx, "get_usage", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// SessionCostParams are the parameters of Session.SessionCost (none yet).
type SessionCostParams struct{}

// SessionCostResult is the session's cost summary as text.
type SessionCostResult struct {
	// Text is what /cost prints: total cost, durations, code changes and
	// usage by model, one item a line.
	Text string          `json:"text"`
	Raw  json.RawMessage `json:"-"`
}

// SessionCost returns the session's cost summary as the CLI formats it
// for people. Use Usage for the numbers.
func (s *Session) SessionCost(ctx context.Context, params *SessionCostParams) (*SessionCostResult, error) {
	if params == nil {
		params = &SessionCostParams{}
	}
	r := &SessionCostResult{}
	if err := s.requestInto(ctx, "get_session_cost", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// SettingsParams are the parameters of Session.Settings (none yet).
type SettingsParams struct{}

// SettingsResult is the session's settings: merged, by source, and the
// values in force.
type SettingsResult struct {
	// Effective is the merged settings object, as JSON.
	Effective json.RawMessage `json:"effective"`
	// Sources are the settings of each source that has any, in the CLI's
	// order of precedence ("userSettings", "projectSettings",
	// "localSettings", "flagSettings", "policySettings"…).
	Sources []SettingsSource `json:"sources"`
	// Applied are the values in force after every source and runtime
	// change (SetModel, ApplyFlagSettings).
	Applied AppliedSettings `json:"applied"`

	Raw json.RawMessage `json:"-"`
}

// SettingsSource is one source's settings.
type SettingsSource struct {
	Source   string          `json:"source"`
	Settings json.RawMessage `json:"settings"`
}

// AppliedSettings are settings values in force.
type AppliedSettings struct {
	Model string `json:"model"`
	// Effort is the reasoning effort level ("low" … "max"); "" when none
	// is set.
	Effort string `json:"effort"`
}

// Settings returns the session's settings: the merged result, each
// source's own, and the values in force.
func (s *Session) Settings(ctx context.Context, params *SettingsParams) (*SettingsResult, error) {
	if params == nil {
		params = &SettingsParams{}
	}
	r := &SettingsResult{}
	if err := s.requestInto(ctx, "get_settings", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// BinaryVersionParams are the parameters of Session.BinaryVersion (none
// yet).
type BinaryVersionParams struct{}

// BinaryVersionResult is the running CLI's version.
type BinaryVersionResult struct {
	Version   string          `json:"version"`   // e.g. "2.1.197"
	BuildTime string          `json:"buildTime"` // RFC 3339
	Raw       json.RawMessage `json:"-"`
}

// BinaryVersion returns the version of the CLI this session runs, which
// for a custom Transport (a remote runner) may differ from any local one.
func (s *Session) BinaryVersion(ctx context.Context, params *BinaryVersionParams) (*BinaryVersionResult, error) {
	if params == nil {
		params = &BinaryVersionParams{}
	}
	r := &BinaryVersionResult{}
	if err := s.requestInto(ctx, "get_binary_version", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// ReloadSkillsParams are the parameters of Session.ReloadSkills (none
// yet).
type ReloadSkillsParams struct{}

// ReloadSkillsResult lists the skills after a reload.
type ReloadSkillsResult struct {
	Skills []SlashCommand  `json:"skills"`
	Raw    json.RawMessage `json:"-"`
}

// ReloadSkills re-reads skills from disk, so that a skill written while
// the session runs can be used, and returns the refreshed list.
func (s *Session) ReloadSkills(ctx context.Context, params *ReloadSkillsParams) (*ReloadSkillsResult, error) {
	if params == nil {
		params = &ReloadSkillsParams{}
	}
	r := &ReloadSkillsResult{}
	if err := s.requestInto(ctx, "reload_skills", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// ReloadPluginsParams are the parameters of Session.ReloadPlugins.
type ReloadPluginsParams struct {
	// HoldOnCacheImpact keeps the current plugins when reloading would
	// change the tool list the conversation's prompt cache depends on; the
	// result then has Held set. Newer CLIs only (2.1.197 ignores it and
	// reloads).
	HoldOnCacheImpact bool `json:"hold_on_cache_impact,omitempty"`
	// RefuseIfBusy makes a reload requested while a turn runs fail
	// instead of changing things under it. Newer CLIs only.
	RefuseIfBusy bool `json:"refuse_if_busy,omitempty"`
	// AddPlugins are plugin directories to load as well, each as one more
	// Options.PluginDirs entry would (absolute paths); loaded plugins
	// stay. Newer CLIs only.
	AddPlugins []PluginConfig `json:"add_plugins,omitempty"`
}

// PluginConfig is a local plugin directory, as ReloadPluginsParams.AddPlugins
// sends it.
type PluginConfig struct {
	// Type is "local", the only kind; "" is sent as "local".
	Type string `json:"type"`
	Path string `json:"path"`
	// SkipMCPDiscovery loads the plugin without its MCP servers, for a
	// host that connects those itself.
	SkipMCPDiscovery bool `json:"skipMcpDiscovery,omitempty"`
}

// ReloadPluginsResult is the session's commands, agents, plugins and MCP
// servers after a plugin reload.
type ReloadPluginsResult struct {
	Commands   []SlashCommand    `json:"commands"`
	Agents     []AgentInfo       `json:"agents"`
	Plugins    []PluginInfo      `json:"plugins"`
	MCPServers []MCPServerStatus `json:"mcpServers"`
	// ErrorCount is how many plugins or components failed to load.
	ErrorCount int `json:"error_count"`
	// Held is set when HoldOnCacheImpact kept the old plugins.
	Held bool `json:"held,omitempty"`
	// CacheImpact says what the reload changes (or, Held, would have
	// changed) that the prompt cache depends on.
	CacheImpact *PluginCacheImpact `json:"cache_impact,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// ReloadPlugins re-reads plugins from disk and returns what the session
// now offers. The CLI also writes a *CommandsChangedMessage with the new
// command list.
func (s *Session) ReloadPlugins(ctx context.Context, params *ReloadPluginsParams) (*ReloadPluginsResult, error) {
	if params == nil {
		params = &ReloadPluginsParams{}
	}
	if len(params.AddPlugins) > 0 {
		p := *params
		p.AddPlugins = append([]PluginConfig(nil), params.AddPlugins...)
		for i := range p.AddPlugins {
			if p.AddPlugins[i].Type == "" {
				p.AddPlugins[i].Type = "local"
			}
		}
		params = &p
	}
	r := &ReloadPluginsResult{}
	if err := s.requestInto(ctx, "reload_plugins", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// PluginCacheImpact is ReloadPluginsResult.CacheImpact.
type PluginCacheImpact struct {
	MCPServersAdded   []string `json:"mcp_servers_added"`
	MCPServersRemoved []string `json:"mcp_servers_removed"`
	// LSPToolChange is adds, may-add, removes, may-remove or "" (none).
	LSPToolChange string `json:"lsp_tool_change"`
}

// RenameSession sets the session's title, which session lists show
// (SessionInfo.Title). Newer CLIs confirm with a
// *SessionTitleChangedMessage.
func (s *Session) RenameSession(ctx context.Context, title string) error {
	return s.RenameSessionWith(ctx, &RenameSessionParams{Title: title})
}

// RenameSessionParams are the parameters of Session.RenameSessionWith.
type RenameSessionParams struct {
	Title string `json:"title"`
	// Source says who chose the title: RenameSourceHost for the user in
	// the host application (the CLI counts it as the user's rename), or
	// RenameSourceRemote; "" is the CLI's default (remote).
	Source string `json:"source,omitempty"`
	// SessionID, when set, makes the CLI refuse the rename if it has
	// moved on to another session (/clear, a resume) since.
	SessionID string `json:"session_id,omitempty"`
}

// Rename sources.
const (
	RenameSourceHost   = "host"
	RenameSourceRemote = "remote"
)

// RenameSessionWith is RenameSession with the request's other fields.
func (s *Session) RenameSessionWith(ctx context.Context, params *RenameSessionParams) error {
	if params == nil {
		params = &RenameSessionParams{}
	}
	_, err := s.request(ctx, "rename_session", params)
	return err
}

// ApplyFlagSettings merges settings into the session's flag-settings
// layer (the one --settings fills), which takes precedence over the
// settings files; settings is a JSON object in the settings file format,
// e.g. {"model":"claude-sonnet-4-5","permissions":{"allow":["Bash(ls *)"]}}.
// The change applies from the next API call; Settings shows the result.
func (s *Session) ApplyFlagSettings(ctx context.Context, settings json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(settings, &obj); err != nil || obj == nil {
		return fmt.Errorf("claude: apply_flag_settings: settings must be a JSON object")
	}
	_, err := s.request(ctx, "apply_flag_settings", struct {
		Settings json.RawMessage `json:"settings"`
	}{settings})
	return err
}

// RewindFilesParams are the parameters of Session.RewindFiles.
type RewindFilesParams struct {
	// UserMessageID is the UUID of the user message whose state to go back
	// to: files are restored to what they were just before that message's
	// turn changed them. Set UserMessage.UUID when sending to know it.
	UserMessageID string `json:"user_message_id"`
	// DryRun reports what would change without touching any file.
	DryRun bool `json:"dry_run,omitempty"`
}

// RewindFilesResult is the outcome of RewindFiles.
type RewindFilesResult struct {
	// CanRewind says whether the files can be (or, without DryRun, were)
	// restored. When it is false, Error says why: checkpointing is off, no
	// checkpoint exists for the message, …
	CanRewind bool   `json:"canRewind"`
	Error     string `json:"error,omitempty"`
	// FilesChanged, Insertions and Deletions describe the change; the CLI
	// reports them for a dry run only.
	FilesChanged []string `json:"filesChanged,omitempty"`
	Insertions   int      `json:"insertions,omitempty"`
	Deletions    int      `json:"deletions,omitempty"`
	// SkippedLinks counts files a real rewind left alone because a link
	// was found where the file was (newer CLIs).
	SkippedLinks int `json:"skippedLinks,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// RewindFiles restores the files the session's tools changed to their
// state at a user message, or with DryRun reports what that would change.
// It needs file checkpointing, which stream-json sessions have only when
// the CLI's environment sets EnvEnableFileCheckpointing
// (Options.EnableFileCheckpointing does).
//
// The CLI reports a rewind it cannot do (checkpointing off, unknown
// message) as a result with CanRewind false, not as an error: a dry run
// asking "can I?" gets an answer either way.
func (s *Session) RewindFiles(ctx context.Context, params *RewindFilesParams) (*RewindFilesResult, error) {
	if params == nil || params.UserMessageID == "" {
		return nil, errors.New("claude: rewind_files: no user message id")
	}
	r := &RewindFilesResult{}
	if err := s.requestInto(ctx, "rewind_files", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// CancelAsyncMessageParams are the parameters of
// Session.CancelAsyncMessage.
type CancelAsyncMessageParams struct {
	// MessageUUID is the UUID the user message was sent with.
	MessageUUID string `json:"message_uuid"`
}

// CancelAsyncMessageResult is the outcome of CancelAsyncMessage.
type CancelAsyncMessageResult struct {
	// Cancelled is true when the message was still queued and is now
	// dropped; false when it was unknown or already taken into a turn.
	Cancelled bool `json:"cancelled"`
	// MessageUUID echoes the cancelled message's UUID (newer CLIs).
	MessageUUID string          `json:"message_uuid,omitempty"`
	Raw         json.RawMessage `json:"-"`
}

// CancelAsyncMessage withdraws a user message sent while a turn was
// running, before the CLI takes it into the next turn: a cancelled
// message never reaches the model. Only messages sent with a UUID can be
// named. Newer CLIs also report the withdrawal as a
// *CommandLifecycleMessage in state "cancelled".
func (s *Session) CancelAsyncMessage(ctx context.Context, params *CancelAsyncMessageParams) (*CancelAsyncMessageResult, error) {
	if params == nil || params.MessageUUID == "" {
		return nil, errors.New("claude: cancel_async_message: no message uuid")
	}
	r := &CancelAsyncMessageResult{}
	if err := s.requestInto(ctx, "cancel_async_message", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// StopTask stops a running background task: a backgrounded Bash command
// or a subagent, named by the TaskID of its *TaskStartedMessage. The task
// ends with a *TaskNotificationMessage of status "stopped". The CLI
// accepts unknown ids silently.
func (s *Session) StopTask(ctx context.Context, taskID string) error {
	_, err := s.request(ctx, "stop_task", struct {
		TaskID string `json:"task_id"`
	}{taskID})
	return err
}

// BackgroundTasksParams are the parameters of Session.BackgroundTasks.
type BackgroundTasksParams struct {
	// ToolUseID picks the one task started by that tool call; "" means
	// every foreground task (what Ctrl+B does in the terminal).
	ToolUseID string `json:"tool_use_id,omitempty"`
}

// BackgroundTasksResult is the outcome of BackgroundTasks.
type BackgroundTasksResult struct {
	// Backgrounded reports, for a request with ToolUseID, whether that
	// task was moved to the background. The CLI says nothing (false) for a
	// request without one.
	Backgrounded bool            `json:"backgrounded"`
	Raw          json.RawMessage `json:"-"`
}

// BackgroundTasks moves running foreground tasks (Bash commands,
// subagents) to the background: their tool calls return at once with a
// "running in the background" result, the turn goes on, and each task
// reports its end with a *TaskNotificationMessage.
//
// A Bash command becomes a task the CLI can background only once it has
// run for a few seconds, when the CLI writes its *TaskStartedMessage;
// before that Backgrounded is false.
func (s *Session) BackgroundTasks(ctx context.Context, params *BackgroundTasksParams) (*BackgroundTasksResult, error) {
	if params == nil {
		params = &BackgroundTasksParams{}
	}
	r := &BackgroundTasksResult{}
	if err := s.requestInto(ctx, "background_tasks", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// EndSession asks the CLI to end the session. It answers, then exits on
// its own with status 0: Receive ends without an error once the messages
// written before are delivered, and Wait returns nil. reason ("" for
// none) is for the CLI's logs. Close the session afterwards as usual.
func (s *Session) EndSession(ctx context.Context, reason string) error {
	_, err := s.request(ctx, "end_session", struct {
		Reason string `json:"reason,omitempty"`
	}{reason})
	return err
}
