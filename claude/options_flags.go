package claude

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// How the last group of Options (thinking, task budget, strict MCP
// configuration, hook events, file checkpointing, prompt suggestions,
// tool aliases, skills, …) reaches the CLI: argv flags as the TypeScript
// SDK passes them, and initialize keys.

// ThinkingType is how the model thinks.
type ThinkingType string

// Thinking types.
const (
	// ThinkingAdaptive lets the model decide when and how much to think
	// (the default of the models that support it).
	ThinkingAdaptive ThinkingType = "adaptive"
	// ThinkingEnabled thinks with a fixed token budget (BudgetTokens; 0
	// means adaptive, as the TypeScript SDK does).
	ThinkingEnabled ThinkingType = "enabled"
	// ThinkingDisabled turns thinking off.
	ThinkingDisabled ThinkingType = "disabled"
)

// ThinkingDisplay is how thinking is returned: the API's
// thinking.display.
type ThinkingDisplay string

// Thinking displays.
const (
	// ThinkingDisplaySummarized returns a summary of the thinking.
	ThinkingDisplaySummarized ThinkingDisplay = "summarized"
	// ThinkingDisplayOmitted returns thinking blocks with no text (the
	// signature only), which saves the time to stream it.
	ThinkingDisplayOmitted ThinkingDisplay = "omitted"
	// ThinkingDisplayHighlights returns highlights of the thinking.
	ThinkingDisplayHighlights ThinkingDisplay = "highlights"
)

// ThinkingConfig is Options.Thinking.
type ThinkingConfig struct {
	Type ThinkingType
	// BudgetTokens is the thinking budget, for ThinkingEnabled.
	BudgetTokens int
	// Display is how thinking is returned; "" means the model's default.
	// Not for ThinkingDisabled.
	Display ThinkingDisplay
}

// initializeKeys are the keys Tether itself sets in the initialize
// request, which Options.InitializeExtra may not set.
var initializeKeys = []string{
	"subtype", "hooks", "sdkMcpServers", "jsonSchema", "systemPrompt", "appendSystemPrompt", "agents", "title",
	"excludeDynamicSections", "systemPromptSnapshot", "promptSuggestions", "agentProgressSummaries", "forwardSubagentText",
	"planModeInstructions", "toolAliases", "supportedDialogKinds", "skills", "perTaskStopAffordance",
	"settings", "managedSettings", "plugins", "mcpServers", "sdkMcpServerConfigs",
}

func (o *Options) validateParity() error {
	if ext := strings.ToLower(filepath.Ext(o.CLIPath)); ext == ".bat" || ext == ".cmd" {
		// cmd.exe re-parses the arguments of a batch file, and no quoting
		// of a system prompt or a JSON setting is safe there.
		return &BatchFileError{Path: o.CLIPath}
	}
	if t := o.Thinking; t != nil {
		switch t.Type {
		case ThinkingAdaptive, ThinkingEnabled, ThinkingDisabled:
		default:
			return fmt.Errorf("claude: Options.Thinking.Type %q is not adaptive, enabled or disabled", t.Type)
		}
		if o.MaxThinkingTokens != 0 {
			return fmt.Errorf("claude: Options.Thinking and Options.MaxThinkingTokens are exclusive")
		}
		if t.BudgetTokens < 0 || t.BudgetTokens > 0 && t.Type != ThinkingEnabled {
			return fmt.Errorf("claude: Options.Thinking.BudgetTokens (%d) needs Type enabled and must not be negative", t.BudgetTokens)
		}
		if t.Display != "" && t.Type == ThinkingDisabled {
			return fmt.Errorf("claude: Options.Thinking.Display with thinking disabled")
		}
	}
	if len(o.SupportedDialogKinds) > 0 && o.OnUserDialog == nil {
		// The CLI would park dialogs nobody answers.
		return fmt.Errorf("claude: Options.SupportedDialogKinds needs Options.OnUserDialog")
	}
	if err := o.validateSandbox(); err != nil {
		return err
	}
	if o.TaskBudget < 0 {
		return fmt.Errorf("claude: Options.TaskBudget is negative (%d)", o.TaskBudget)
	}
	if o.ResumeSessionAt != "" && o.Resume == "" {
		return fmt.Errorf("claude: Options.ResumeSessionAt needs Options.Resume")
	}
	for _, t := range o.Tools {
		if t == "" || strings.Contains(t, ",") {
			return fmt.Errorf("claude: Options.Tools has an invalid name %q", t)
		}
	}
	for k, v := range o.ToolAliases {
		if k == "" || v == "" {
			return fmt.Errorf("claude: Options.ToolAliases has an empty name (%q: %q)", k, v)
		}
	}
	for k, v := range o.InitializeExtra {
		if slices.Contains(initializeKeys, k) {
			return fmt.Errorf("claude: Options.InitializeExtra sets %q, which Tether sets from Options", k)
		}
		if !json.Valid(v) {
			return fmt.Errorf("claude: Options.InitializeExtra[%q] is not JSON", k)
		}
	}
	return nil
}

// parityArgs are the flags for the parity options, as the TypeScript SDK
// passes them.
func (o *Options) parityArgs() []string {
	var a []string
	if o.Tools != nil {
		a = append(a, "--tools="+strings.Join(o.Tools, ","))
	}
	if o.Agent != "" {
		a = append(a, "--agent="+o.Agent)
	}
	if t := o.Thinking; t != nil {
		switch t.Type {
		case ThinkingEnabled:
			if t.BudgetTokens > 0 {
				a = append(a, "--max-thinking-tokens="+strconv.Itoa(t.BudgetTokens))
			} else {
				a = append(a, "--thinking=adaptive")
			}
		case ThinkingAdaptive:
			a = append(a, "--thinking=adaptive")
		case ThinkingDisabled:
			a = append(a, "--thinking=disabled")
		}
		if t.Display != "" && t.Type != ThinkingDisabled {
			a = append(a, "--thinking-display="+string(t.Display))
		}
	}
	if o.TaskBudget > 0 {
		a = append(a, "--task-budget="+strconv.Itoa(o.TaskBudget))
	}
	if o.StrictMCPConfig {
		a = append(a, "--strict-mcp-config")
	}
	if o.IncludeHookEvents {
		a = append(a, "--include-hook-events")
	}
	if o.AllowDangerouslySkipPermissions && o.PermissionMode != PermissionModeBypassPermissions {
		// With that mode, args has added the flag already.
		a = append(a, "--allow-dangerously-skip-permissions")
	}
	if o.ResumeSessionAt != "" {
		a = append(a, "--resume-session-at="+o.ResumeSessionAt)
	}
	return a
}

// parityInitialize fills the initialize keys of the parity options.
func (o *Options) parityInitialize(r *initializeRequest) {
	r.Title = o.Title
	r.PromptSuggestions = o.PromptSuggestions
	r.AgentProgressSummaries = o.AgentProgressSummaries
	r.ForwardSubagentText = o.ForwardSubagentText
	r.PlanModeInstructions = o.PlanModeInstructions
	r.ToolAliases = o.ToolAliases
	r.SupportedDialogKinds = o.SupportedDialogKinds
	if o.Skills != nil {
		r.Skills = &o.Skills
	}
	r.PerTaskStopAffordance = o.PerTaskStopAffordance
	r.extra = o.InitializeExtra
}

// MarshalJSON encodes the request with Options.InitializeExtra merged in.
func (r *initializeRequest) MarshalJSON() ([]byte, error) {
	type plain initializeRequest
	b, err := json.Marshal((*plain)(r))
	if err != nil || len(r.extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range r.extra {
		if _, set := m[k]; !set {
			m[k] = v
		}
	}
	return json.Marshal(m)
}
