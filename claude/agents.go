package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// AgentDefinition defines a subagent: a helper the model starts with the
// Agent tool (subagent_type set to the agent's name in Options.Agents) to
// work on a task in its own context, with its own system prompt, tools
// and model, and report back.
//
// The zero value of every optional field means what the CLI does without
// it: inherit from the session.
type AgentDefinition struct {
	// Description says when to use the agent; the model reads it to
	// choose one. Required.
	Description string `json:"description"`
	// Prompt is the agent's system prompt. Required.
	Prompt string `json:"prompt"`
	// Tools are the tools the agent may use. nil inherits the session's
	// tools; an empty non-nil slice gives it none.
	Tools []string `json:"tools,omitzero"`
	// DisallowedTools are taken away from the agent's tools.
	DisallowedTools []string `json:"disallowedTools,omitzero"`
	// Model is a model alias ("sonnet", "opus", "haiku"), a full model id,
	// or "inherit" (the session's model). Empty uses the CLI's default
	// subagent model, or the session's.
	Model string `json:"model,omitempty"`
	// Skills are skills to load into the agent's context from the start.
	Skills []string `json:"skills,omitempty"`
	// MaxTurns caps the agent's API round trips (0 = no cap).
	MaxTurns int `json:"maxTurns,omitempty"`
	// Effort is the agent's effort level ("" = the session's).
	Effort Effort `json:"effort,omitempty"`
	// PermissionMode is the agent's permission mode ("" = the session's).
	PermissionMode PermissionMode `json:"permissionMode,omitempty"`
	// Background runs the agent as a background task whenever it is
	// started: the Agent tool returns at once and the model is told when
	// the agent is done.
	Background bool `json:"background,omitempty"`
	// MCPServers are MCP servers for this agent: by name (one the session
	// already has) or as a configuration of its own. An in-process server
	// (MCPSDKServer) belongs in Options.MCPServers, not here: the CLI
	// ignores it in an agent.
	MCPServers []AgentMCPServer `json:"mcpServers,omitempty"`
	// InitialPrompt is sent as the first user turn when this agent is the
	// session's own (Options.Agent); slash commands in it run.
	InitialPrompt string `json:"initialPrompt,omitempty"`
	// AutoCompactWindow is the token count at which the agent, as a
	// subagent, compacts its own conversation (0 = what it inherits; it can
	// only lower that). The CLI's minimum is 100,000: below it the CLI
	// (2.1.331) silently drops the whole agent.
	AutoCompactWindow int `json:"autoCompactWindow,omitempty"`
	// OmitClaudeMd runs the agent, as a subagent, without the user,
	// project and local CLAUDE.md files (managed ones are kept).
	OmitClaudeMd bool `json:"omitClaudeMd,omitempty"`
	// Memory is where the agent's memory files load from: "user",
	// "project" or "local" ("" = none).
	Memory string `json:"memory,omitempty"`
	// Observer names the agent type (or up to four, comma-separated)
	// started as a read-only background observer whenever this agent runs;
	// ObserverMessage is appended to each digest it is sent. The CLI
	// (2.1.330 and newer) starts observers only with its switch
	// CLAUDE_CODE_EXPERIMENTAL_OBSERVER_AGENTS set (Options.Env).
	Observer        string `json:"observer,omitempty"`
	ObserverMessage string `json:"observerMessage,omitempty"`
	// CriticalSystemReminderExperimental is added to the agent's system
	// prompt. Experimental in the CLI: the pinned CLIs accept it from
	// initialize but were not seen to use it for an agent defined there.
	CriticalSystemReminderExperimental string `json:"criticalSystemReminder_EXPERIMENTAL,omitempty"`
}

// AgentMCPServer is one entry of AgentDefinition.MCPServers: Name alone
// refers to a server the session has; Servers defines servers of the
// agent's own, by name.
type AgentMCPServer struct {
	Name    string
	Servers map[string]MCPServerConfig
}

// MarshalJSON writes the name, or the servers' configurations.
func (a AgentMCPServer) MarshalJSON() ([]byte, error) {
	if a.Servers == nil {
		return json.Marshal(a.Name)
	}
	wire := make(map[string]any, len(a.Servers))
	for name, c := range a.Servers {
		if c == nil {
			return nil, fmt.Errorf("claude: AgentMCPServer: server %q has no configuration", name)
		}
		wire[name] = c.wire(name)
	}
	return json.Marshal(wire)
}

// Effort is how much effort the model puts into a response: the API's
// effort parameter. Higher levels think longer and use more tokens.
type Effort string

// Effort levels. The CLI lowers a level the model doesn't support to one
// it does.
const (
	EffortLow    Effort = "low"
	EffortMedium Effort = "medium"
	EffortHigh   Effort = "high"
	EffortXHigh  Effort = "xhigh"
	EffortMax    Effort = "max"
)

// Beta is an Anthropic API beta the CLI sends in its anthropic-beta
// header.
type Beta string

// BetaContext1M enables the 1M-token context window on models that offer
// it. It is the only beta the CLI (2.1.197, 2.1.330) lets a user add.
const BetaContext1M Beta = "context-1m-2025-08-07"

// validatePrompts reports programmer errors in the options of this file.
func (o *Options) validatePrompts() error {
	for name, a := range o.Agents {
		if name == "" {
			return fmt.Errorf("claude: Options.Agents has an agent with no name")
		}
		if a.Description == "" || a.Prompt == "" {
			return fmt.Errorf("claude: Options.Agents[%q] needs a Description and a Prompt", name)
		}
		if a.MaxTurns < 0 {
			return fmt.Errorf("claude: Options.Agents[%q].MaxTurns is negative (%d)", name, a.MaxTurns)
		}
	}
	if len(o.JSONSchema) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(o.JSONSchema, &obj); err != nil || obj == nil {
			return fmt.Errorf("claude: Options.JSONSchema must be a JSON object, got %.40s", bytes.TrimSpace(o.JSONSchema))
		}
	}
	return nil
}

// promptsInitialize fills the initialize request's prompt, agent and
// schema keys.
//
// The CLI takes systemPrompt as an array of strings, joined with blank
// lines; the flags --system-prompt and --append-system-prompt do the same,
// but the request has no size limit and keeps the prompt out of the
// process list. The request wins over the flags when both are given.
func (o *Options) promptsInitialize(r *initializeRequest) error {
	if o.SystemPrompt != "" {
		b, err := json.Marshal([]string{o.SystemPrompt})
		if err != nil {
			return fmt.Errorf("claude: encoding Options.SystemPrompt: %w", err)
		}
		r.SystemPrompt = b
	}
	r.AppendSystemPrompt = o.AppendSystemPrompt
	r.ExcludeDynamicSections = o.ExcludeDynamicSections
	r.SystemPromptSnapshot = o.SystemPromptSnapshot
	if len(o.Agents) > 0 {
		b, err := json.Marshal(o.Agents)
		if err != nil {
			return fmt.Errorf("claude: encoding Options.Agents: %w", err)
		}
		r.Agents = b
	}
	r.JSONSchema = o.JSONSchema
	o.parityInitialize(r)
	return nil
}
