package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Control requests that read or change the running CLI's configuration
// (settings, hooks, permission rules, environment variables, output
// styles, MCP permission overrides, re-initialisation), read files and
// MCP resources through it, and interrupt a turn with a receipt, in the
// "spec method" shape of control.go. Several are newer than CLI 2.1.197,
// which answers them with a *ControlError ("Unsupported control request
// subtype" or similar); the doc comment of each says so.

// InterruptParams are the parameters of Session.InterruptTurn.
type InterruptParams struct {
	// CancelQueued also cancels the user messages sent with a UUID that
	// are still queued for a later turn (newer CLIs): they never reach the
	// model, and the result lists them in Cancelled.
	CancelQueued bool `json:"cancel_queued,omitempty"`
}

// InterruptResult is the CLI's receipt for an interrupt.
type InterruptResult struct {
	// StillQueued are the UUIDs of user messages that survive the
	// interrupt and will run in a later turn (newer CLIs; nil from
	// 2.1.197, which sends no receipt).
	StillQueued []string `json:"still_queued"`
	// Cancelled are the UUIDs of queued messages the interrupt cancelled,
	// with CancelQueued.
	Cancelled []string        `json:"cancelled,omitempty"`
	Raw       json.RawMessage `json:"-"`
}

// InterruptTurn is Interrupt with its receipt: it stops the running turn
// and reports which queued user messages survive it (and, with
// CancelQueued, which were cancelled).
func (s *Session) InterruptTurn(ctx context.Context, params *InterruptParams) (*InterruptResult, error) {
	if params == nil {
		params = &InterruptParams{}
	}
	r := &InterruptResult{}
	if err := s.requestInto(ctx, "interrupt", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// ReadFileEncoding is how ReadFile returns a file's bytes.
type ReadFileEncoding string

// Read file encodings.
const (
	ReadFileUTF8   ReadFileEncoding = "utf-8"
	ReadFileBase64 ReadFileEncoding = "base64"
)

// ReadFileParams are the parameters of Session.ReadFile.
type ReadFileParams struct {
	// Path is the file, relative to the session's working directory or
	// absolute.
	Path string `json:"path"`
	// MaxBytes caps what is read; 0 means the CLI's default (1 MiB).
	MaxBytes int `json:"max_bytes,omitempty"`
	// Encoding is ReadFileUTF8 (the default; lossy for binary files) or
	// ReadFileBase64.
	Encoding ReadFileEncoding `json:"encoding,omitempty"`
}

// ReadFileResult is a file as the CLI read it.
type ReadFileResult struct {
	Contents string `json:"contents"`
	AbsPath  string `json:"absPath"`
	// Truncated is set when the file is longer than MaxBytes.
	Truncated bool `json:"truncated,omitempty"`
	// Encoding is "base64" when Contents is base64; "" means UTF-8,
	// including from a CLI that ignored a request for base64.
	Encoding ReadFileEncoding `json:"encoding,omitempty"`
	// Lossy is set when the bytes were not valid UTF-8 and Contents has
	// replacement characters.
	Lossy bool            `json:"lossy,omitempty"`
	Raw   json.RawMessage `json:"-"`
}

// ReadFile reads a file through the CLI, under the same read permission
// rules as its Read tool: useful when the CLI runs elsewhere (a
// container, a remote Transport). A file the rules deny or that does
// not exist is a *ControlError.
func (s *Session) ReadFile(ctx context.Context, params *ReadFileParams) (*ReadFileResult, error) {
	if params == nil || params.Path == "" {
		return nil, errors.New("claude: read_file: no path")
	}
	raw, err := s.request(ctx, "read_file", params)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, &ControlError{Subtype: "read_file", Message: "the CLI returned no file"}
	}
	r := &ReadFileResult{}
	s.decodeResult("read_file", raw, r)
	r.Raw = raw
	return r, nil
}

// ReadMCPResourceParams are the parameters of Session.ReadMCPResource.
type ReadMCPResourceParams struct {
	// ServerName is the MCP server, as MCPStatus names it.
	ServerName string `json:"serverName"`
	// URI is the resource; the CLI reads only ui:// resources (MCP Apps)
	// this way and refuses others.
	URI string `json:"uri"`
}

// ReadMCPResourceResult is a resource's contents.
type ReadMCPResourceResult struct {
	Contents []MCPResourceContents `json:"contents"`
	Raw      json.RawMessage       `json:"-"`
}

// MCPResourceContents is one item of a resource: Text, or Blob (base64)
// for binary data.
type MCPResourceContents struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     string          `json:"text,omitempty"`
	Blob     string          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// ReadMCPResource reads a ui:// resource of a connected MCP server
// through the CLI (newer CLIs; 2.1.197 does not know the request).
func (s *Session) ReadMCPResource(ctx context.Context, params *ReadMCPResourceParams) (*ReadMCPResourceResult, error) {
	if params == nil || params.ServerName == "" || params.URI == "" {
		return nil, errors.New("claude: mcp_read_resource: no server name or uri")
	}
	r := &ReadMCPResourceResult{}
	if err := s.requestInto(ctx, "mcp_read_resource", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// SettingsFile names a settings file UpdateSettings writes.
type SettingsFile string

// Settings files UpdateSettings can write.
const (
	// SettingsFileLocal is the project's local settings file
	// (.claude/settings.local.json), where /config writes. CLI 2.1.330
	// accepts only outputStyle there.
	SettingsFileLocal SettingsFile = "localSettings"
	// SettingsFileUser is the user's settings file; CLI 2.1.330 accepts
	// only effortLevel there.
	SettingsFileUser SettingsFile = "userSettings"
)

// UpdateSettingsParams are the parameters of Session.UpdateSettings.
type UpdateSettingsParams struct {
	Source SettingsFile `json:"source"`
	// Settings is a JSON object in the settings file format, merged into
	// the file.
	Settings json.RawMessage `json:"settings"`
}

// UpdateSettings writes settings into a settings file, as the CLI's
// /config does (newer CLIs; 2.1.197 refuses the request). Unlike
// ApplyFlagSettings the change is persisted. The CLI takes only a few
// keys, each with a string value, and refuses the rest with a
// *ControlError naming them.
func (s *Session) UpdateSettings(ctx context.Context, params *UpdateSettingsParams) error {
	if params == nil || params.Source == "" {
		return errors.New("claude: update_settings: no source")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params.Settings, &obj); err != nil || obj == nil {
		return fmt.Errorf("claude: update_settings: settings must be a JSON object")
	}
	_, err := s.request(ctx, "update_settings", params)
	return err
}

// ReloadOutputStylesParams are the parameters of
// Session.ReloadOutputStyles (none yet).
type ReloadOutputStylesParams struct{}

// ReloadOutputStylesResult lists the output styles after a reload.
type ReloadOutputStylesResult struct {
	AvailableOutputStyles []string        `json:"available_output_styles"`
	Raw                   json.RawMessage `json:"-"`
}

// ReloadOutputStyles re-reads output styles from disk (newer CLIs).
func (s *Session) ReloadOutputStyles(ctx context.Context, params *ReloadOutputStylesParams) (*ReloadOutputStylesResult, error) {
	if params == nil {
		params = &ReloadOutputStylesParams{}
	}
	r := &ReloadOutputStylesResult{}
	if err := s.requestInto(ctx, "reload_output_styles", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// HooksListingParams are the parameters of Session.HooksListing (none
// yet).
type HooksListingParams struct{}

// HooksListingResult is what the CLI's /hooks menu shows: the hooks
// configured in settings, plugins and this session, by event.
type HooksListingResult struct {
	// Events are the events with at least one hook.
	Events []HookListingEvent `json:"events"`
	// Hooks has one row per hook.
	Hooks []HookListing `json:"hooks"`
	// EventCatalog is every event the CLI knows, in lifecycle order.
	EventCatalog []HookListingEvent `json:"eventCatalog"`
	// Policy is what managed settings impose, as the CLI sent it.
	Policy json.RawMessage `json:"policy,omitempty"`
	Raw    json.RawMessage `json:"-"`
}

// HookListingEvent is a hook event in a HooksListingResult.
type HookListingEvent struct {
	Name            string `json:"name"`
	Summary         string `json:"summary"`
	SupportsMatcher bool   `json:"supportsMatcher"`
	HookCount       int    `json:"hookCount,omitempty"`
}

// HookListing is one configured hook.
type HookListing struct {
	Event   string `json:"event"`
	Matcher string `json:"matcher"`
	// Source is the raw source name (userSettings, sessionHook,
	// pluginHook, …); SourceLabel describes it for people.
	Source      string `json:"source"`
	SourceLabel string `json:"sourceLabel"`
	PluginName  string `json:"pluginName,omitempty"`
	// Type is command, prompt, agent, http, mcp_tool, callback, …
	Type        string  `json:"type"`
	DisplayText string  `json:"displayText"`
	CommandText string  `json:"commandText"`
	Timeout     float64 `json:"timeout,omitempty"`
	Disabled    bool    `json:"disabled,omitempty"`
}

// HooksListing lists the hooks that apply to the session (newer CLIs).
func (s *Session) HooksListing(ctx context.Context, params *HooksListingParams) (*HooksListingResult, error) {
	if params == nil {
		params = &HooksListingParams{}
	}
	r := &HooksListingResult{}
	if err := s.requestInto(ctx, "get_hooks_listing", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// PermissionRulesParams are the parameters of Session.PermissionRules
// (none yet).
type PermissionRulesParams struct{}

// PermissionRulesResult is the session's live permission rules.
type PermissionRulesResult struct {
	State PermissionRulesState `json:"state"`
	Raw   json.RawMessage      `json:"-"`
}

// PermissionRulesState is the rules in force and where they come from.
type PermissionRulesState struct {
	Rules                []PermissionRuleEntry `json:"rules"`
	WorkspaceDirectories []WorkspaceDirectory  `json:"workspaceDirectories"`
	OriginalCwd          string                `json:"originalCwd"`
	// ManagedOnly is set when managed settings allow only their own
	// rules.
	ManagedOnly bool `json:"managedOnly"`
	// Withheld is set when the list was cut.
	Withheld bool `json:"withheld,omitempty"`
	// Errors are the settings files the CLI could not parse or
	// validate: their rules are not in force and not in Rules.
	Errors []SettingsParseError `json:"errors,omitempty"`
}

// SettingsParseError is a settings file the CLI skipped because it could
// not parse or validate it.
type SettingsParseError struct {
	// File is the settings file, when the error belongs to one.
	File string `json:"file,omitempty"`
	// Path is the offending key within the file ("" for the whole
	// file; always "" in a withheld answer).
	Path    string `json:"path"`
	Message string `json:"message"`
}

// PermissionRuleDescription is the plain-language reading of a rule, as
// the CLI's terminal shows it under the rule: Prefix, then Emphasis (the
// part to highlight), then Suffix.
type PermissionRuleDescription struct {
	Prefix   string `json:"prefix"`
	Emphasis string `json:"emphasis,omitempty"`
	Suffix   string `json:"suffix,omitempty"`
}

// PermissionRuleEntry is one permission rule.
type PermissionRuleEntry struct {
	// Behavior is "allow", "deny" or "ask".
	Behavior PermissionBehavior `json:"behavior"`
	// Source is userSettings, projectSettings, localSettings,
	// flagSettings, policySettings, cliArg, session, …
	Source string `json:"source"`
	Rule   string `json:"rule"`
	// Editability is "persistent", "session" or "readonly".
	Editability string `json:"editability"`
	NotInEffect bool   `json:"notInEffect,omitempty"`
	// Description reads the rule in plain language; nil where the
	// CLI's terminal shows no subtitle either.
	Description *PermissionRuleDescription `json:"description,omitempty"`
}

// WorkspaceDirectory is a directory the session's tools may use.
type WorkspaceDirectory struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// PermissionRules lists the session's permission rules, by source (newer
// CLIs): what AllowedTools, DisallowedTools, settings files and answers
// given during the session added up to.
func (s *Session) PermissionRules(ctx context.Context, params *PermissionRulesParams) (*PermissionRulesResult, error) {
	if params == nil {
		params = &PermissionRulesParams{}
	}
	r := &PermissionRulesResult{}
	if err := s.requestInto(ctx, "list_permission_rules", params, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// MCPPermissionModeOverride is how the CLI asks about one MCP server's
// tool calls, whatever the session's permission mode.
type MCPPermissionModeOverride string

// MCP permission mode overrides.
const (
	// MCPPermissionModeClear removes the override.
	MCPPermissionModeClear MCPPermissionModeOverride = ""
	// MCPPermissionModeDefault asks for every action.
	MCPPermissionModeDefault MCPPermissionModeOverride = "default"
	// MCPPermissionModeAuto routes actions through the auto-mode
	// classifier.
	MCPPermissionModeAuto MCPPermissionModeOverride = "auto"
)

// SetMCPPermissionModeOverrideResult is the outcome of
// SetMCPPermissionModeOverride.
type SetMCPPermissionModeOverrideResult struct {
	// Warning is set when no known MCP server has the name: the override
	// is stored anyway and applies when one connects.
	Warning string          `json:"warning,omitempty"`
	Raw     json.RawMessage `json:"-"`
}

// SetMCPPermissionModeOverride sets (or with MCPPermissionModeClear
// clears) the permission mode for one MCP server's tools.
func (s *Session) SetMCPPermissionModeOverride(ctx context.Context, server string, mode MCPPermissionModeOverride) (*SetMCPPermissionModeOverrideResult, error) {
	if server == "" {
		return nil, errors.New("claude: set_mcp_permission_mode_override: no server name")
	}
	req := struct {
		ServerName string  `json:"serverName"`
		Mode       *string `json:"mode"` // null clears
	}{ServerName: server}
	if mode != MCPPermissionModeClear {
		m := string(mode)
		req.Mode = &m
	}
	r := &SetMCPPermissionModeOverrideResult{}
	if err := s.requestInto(ctx, "set_mcp_permission_mode_override", req, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// Reinitialize sends the initialize request again, built from the same
// options, and returns the CLI's fresh answer: the commands, agents,
// models and output styles as they are now. Initialize keeps returning
// the first answer. Hooks keep their callback ids, so a CLI that re-reads
// them and one that ignores them behave alike. The permission, dialog and
// elicitation requests the answer lists as pending (ones this session
// never received, say) are served through their callbacks before it
// returns; those already being served or answered are not served again.
func (s *Session) Reinitialize(ctx context.Context) (*InitializeResponse, error) {
	req, err := s.initializeRequest()
	if err != nil {
		return nil, err
	}
	r := &InitializeResponse{}
	if err := s.requestInto(ctx, "initialize", req, r, &r.Raw); err != nil {
		return nil, err
	}
	return r, nil
}

// EnvironmentUpdateResult is the CLI's answer to
// UpdateEnvironmentVariables.
type EnvironmentUpdateResult struct {
	// Applied are the variables the CLI set, as it reports them (2.1.330).
	// nil when the CLI does not say: 2.1.197 answers with no list.
	Applied []string `json:"applied"`
	// Refused are the requested variables missing from Applied; nil when
	// Applied is.
	Refused []string        `json:"-"`
	Raw     json.RawMessage `json:"-"`
}

// UpdateEnvironmentVariables sets environment variables in the running
// CLI, for the credentials a long session must renew without a restart.
// The CLI takes only the variables it allows and silently refuses the
// rest (the answer lists what it applied): CLAUDE_CODE_SESSION_ACCESS_TOKEN
// and CLAUDE_CODE_OAUTH_TOKEN on 2.1.197 and 2.1.330;
// CLAUDE_CODE_SESSIONS_OAUTH_TOKEN and CLAUDE_CODE_PROGRAM_USE_CASE_ID on
// 2.1.330 only where it is set up to take them (not in a local session).
// Use Options.Env for anything else, at start.
//
// It is not a control request but a message of its own on the CLI's
// stdin, answered with the control response of its request_id. A CLI
// that takes no environment updates at all (a remote worker) never
// answers: ctx bounds the wait.
func (s *Session) UpdateEnvironmentVariables(ctx context.Context, vars map[string]string) (*EnvironmentUpdateResult, error) {
	const subtype = "update_environment_variables"
	if len(vars) == 0 {
		return nil, errors.New("claude: update_environment_variables: no variables")
	}
	for k := range vars {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("claude: update_environment_variables: invalid name %q", k)
		}
	}
	vb, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("claude: %s: %w", subtype, err)
	}
	raw, err := s.requestLine(ctx, subtype, func(id string) []byte {
		idb, _ := json.Marshal(id)
		b := make([]byte, 0, len(vb)+len(idb)+80)
		b = append(b, `{"type":"update_environment_variables","variables":`...)
		b = append(b, vb...)
		b = append(b, `,"request_id":`...)
		b = append(b, idb...)
		return append(b, '}')
	})
	if err != nil {
		return nil, err
	}
	r := &EnvironmentUpdateResult{}
	if len(raw) > 0 && string(raw) != "null" {
		s.decodeResult(subtype, raw, r)
	}
	if r.Applied != nil {
		for k := range vars {
			if !slices.Contains(r.Applied, k) {
				r.Refused = append(r.Refused, k)
			}
		}
		slices.Sort(r.Refused)
	}
	r.Raw = raw
	return r, nil
}
