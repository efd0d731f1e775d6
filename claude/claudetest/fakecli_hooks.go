package claudetest

import (
	"context"
	"encoding/json"
	"fmt"
)

// HookRegistration is one matcher of an initialize request's "hooks", as
// the host registered it.
type HookRegistration struct {
	Matcher         string   `json:"matcher"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	Timeout         float64  `json:"timeout"`   // seconds; 0 when not set
	OnFailure       string   `json:"onFailure"` // continue, block; "" when not set
}

// Hooks returns the hooks an initialize request (as HandleInitialize
// returns it) registers, by event name.
func Hooks(initialize json.RawMessage) (map[string][]HookRegistration, error) {
	var req struct {
		Hooks map[string][]HookRegistration `json:"hooks"`
	}
	if err := json.Unmarshal(initialize, &req); err != nil {
		return nil, fmt.Errorf("claudetest: decoding the initialize request's hooks: %w", err)
	}
	return req.Hooks, nil
}

// HookInput returns the input of a hook_callback for event as the real CLI
// builds it: the fields every event carries (this fake's session id, a
// transcript path, cwd, permission mode, hook_event_name) plus fields,
// the event's own ("tool_name", "tool_input", "prompt" …).
func (c *CLI) HookInput(event string, fields Msg) Msg {
	in := Msg{
		"session_id":      c.sessionID,
		"transcript_path": "/fake/.claude/projects/-fake/" + c.sessionID + ".jsonl",
		"cwd":             "/fake",
		"permission_mode": "default",
		"hook_event_name": event,
	}
	for k, v := range fields {
		in[k] = v
	}
	return in
}

// HookCallback calls a hook the host registered, as the CLI does when its
// event fires, and returns the host's answer: the hook's output. A host
// error answer is returned as a *claude.ControlError. toolUseID is the
// request's tool_use_id (the tool call's id for tool events).
func (c *CLI) HookCallback(ctx context.Context, callbackID, toolUseID string, input any) (json.RawMessage, error) {
	return c.Request(ctx, "hook_callback", map[string]any{
		"callback_id": callbackID, "input": input, "tool_use_id": toolUseID,
	})
}
