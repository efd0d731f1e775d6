package claude_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// TestInitializeCarriesPromptsAndAgents checks the exact keys and shapes
// the CLI's initialize schema wants (camelCase; systemPrompt a string
// array), which the real-CLI scenarios in realcli_agents_test.go prove it
// acts on.
func TestInitializeCarriesPromptsAndAgents(t *testing.T) {
	l, init := launched(t, &claude.Options{
		SystemPrompt:           "You are terse.",
		AppendSystemPrompt:     "Answer in French.",
		ExcludeDynamicSections: true,
		JSONSchema:             json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}}`),
		Agents: map[string]claude.AgentDefinition{
			"reviewer": {
				Description: "Reviews Go code", Prompt: "You review Go code.",
				Tools: []string{"Read", "Grep"}, DisallowedTools: []string{"Bash"}, Model: "haiku",
				Skills: []string{"go-style"}, MaxTurns: 3, Effort: claude.EffortHigh,
				PermissionMode: claude.PermissionModePlan, Background: true,
			},
			"toolless": {Description: "Thinks", Prompt: "Think.", Tools: []string{}},
			"inherits": {Description: "Inherits", Prompt: "Do."},
			"full": {
				Description: "Every field", Prompt: "All.",
				MCPServers: []claude.AgentMCPServer{
					{Name: "shared"},
					{Servers: map[string]claude.MCPServerConfig{"own": &claude.MCPStdioServer{Command: "own-server"}}},
				},
				InitialPrompt: "/review", AutoCompactWindow: 50000, OmitClaudeMd: true, Memory: "project",
				Observer: "watcher", ObserverMessage: "be brief", CriticalSystemReminderExperimental: "stay on task",
			},
		},
	})
	want := map[string]any{
		"subtype":                "initialize",
		"systemPrompt":           []any{"You are terse."},
		"appendSystemPrompt":     "Answer in French.",
		"excludeDynamicSections": true,
		"jsonSchema":             map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
		"agents": map[string]any{
			"reviewer": map[string]any{
				"description": "Reviews Go code", "prompt": "You review Go code.",
				"tools": []any{"Read", "Grep"}, "disallowedTools": []any{"Bash"}, "model": "haiku",
				"skills": []any{"go-style"}, "maxTurns": float64(3), "effort": "high",
				"permissionMode": "plan", "background": true,
			},
			// An empty tool list is kept (no tools); a nil one is left
			// out (all the session's tools).
			"toolless": map[string]any{"description": "Thinks", "prompt": "Think.", "tools": []any{}},
			"inherits": map[string]any{"description": "Inherits", "prompt": "Do."},
			"full": map[string]any{
				"description": "Every field", "prompt": "All.",
				"mcpServers":    []any{"shared", map[string]any{"own": map[string]any{"type": "stdio", "command": "own-server"}}},
				"initialPrompt": "/review", "autoCompactWindow": float64(50000), "omitClaudeMd": true, "memory": "project",
				"observer": "watcher", "observerMessage": "be brief", "criticalSystemReminder_EXPERIMENTAL": "stay on task",
			},
		},
	}
	if diff := cmp.Diff(want, init); diff != "" {
		t.Errorf("initialize request (-want +got):\n%s", diff)
	}
	for _, a := range l.Args {
		if strings.HasPrefix(a, "--system-prompt") || strings.HasPrefix(a, "--append-system-prompt") || strings.HasPrefix(a, "--json-schema") {
			t.Errorf("argv has %q: prompts and the schema go in the initialize request", a)
		}
	}
}

func TestInitializeWithoutPromptsHasNoPromptKeys(t *testing.T) {
	_, init := launched(t, &claude.Options{})
	for _, k := range []string{"systemPrompt", "appendSystemPrompt", "excludeDynamicSections", "jsonSchema", "agents"} {
		if _, ok := init[k]; ok {
			t.Errorf("initialize has %q without the option: %v", k, init)
		}
	}
}

func TestPromptOptionsValidation(t *testing.T) {
	for name, o := range map[string]*claude.Options{
		"agent without name":        {Agents: map[string]claude.AgentDefinition{"": {Description: "d", Prompt: "p"}}},
		"agent without description": {Agents: map[string]claude.AgentDefinition{"a": {Prompt: "p"}}},
		"agent without prompt":      {Agents: map[string]claude.AgentDefinition{"a": {Description: "d"}}},
		"agent negative turns":      {Agents: map[string]claude.AgentDefinition{"a": {Description: "d", Prompt: "p", MaxTurns: -1}}},
		"schema not JSON":           {JSONSchema: json.RawMessage(`{`)},
		"schema an array":           {JSONSchema: json.RawMessage(`[{"type":"object"}]`)},
		"schema null":               {JSONSchema: json.RawMessage(`null`)},
	} {
		o.Transport = &claudetest.FakeCLI{Script: claudetest.Echo}
		if s, err := claude.Connect(context.Background(), o); err == nil {
			s.Close()
			t.Errorf("%s: Connect accepted invalid options", name)
		} else if !strings.HasPrefix(err.Error(), "claude: Options.") {
			t.Errorf("%s: error %q does not name the option", name, err)
		}
	}
}
