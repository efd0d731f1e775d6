package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync/atomic"
)

// The builders below return the lines a real CLI 2.1.197 writes, trimmed
// to the fields that matter, with this fake's session id. Each returns a
// map so a test can add or change fields before writing it.

var uuidSeq atomic.Uint64

func fakeUUID() string {
	return fmt.Sprintf("00000000-0000-4000-9000-%012d", uuidSeq.Add(1))
}

// Msg is a JSON object under construction.
type Msg map[string]any

// With returns m with key set to v, for chaining.
func (m Msg) With(key string, v any) Msg { m[key] = v; return m }

// MarshalJSON writes "type" first, as the CLI does (Tether routes lines
// by that prefix without parsing them), then the other keys sorted.
func (m Msg) MarshalJSON() ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "type" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := m["type"]; ok {
		keys = append([]string{"type"}, keys...)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// InitializeResponse is the canned answer HandleInitialize gives.
func InitializeResponse() Msg {
	return Msg{
		"commands":                []any{map[string]any{"name": "cost", "description": "Show the total cost", "argumentHint": ""}},
		"agents":                  []any{map[string]any{"name": "general-purpose", "description": "General-purpose agent"}},
		"output_style":            "default",
		"available_output_styles": []string{"default"},
		"models":                  []any{map[string]any{"value": "default", "resolvedModel": "claude-opus-4-8", "displayName": "Default"}},
		"account":                 map[string]any{"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"},
		"pid":                     4242,
	}
}

// HandleInitialize reads the host's initialize request and answers it
// with InitializeResponse. It returns the request body.
func (c *CLI) HandleInitialize(ctx context.Context) (json.RawMessage, error) {
	l, err := c.Expect(ctx, "control_request", "initialize")
	if err != nil {
		return nil, err
	}
	resp := InitializeResponse()
	// Confirm what a CLI started to read them from initialize applies.
	var req map[string]json.RawMessage
	_ = json.Unmarshal(l.Request, &req)
	for key, applied := range map[string]string{"settings": "settings_applied", "managedSettings": "managed_settings_applied", "plugins": "plugins_applied"} {
		if _, ok := req[key]; ok {
			resp[applied] = true
		}
	}
	return l.Request, c.Respond(l.RequestID, resp)
}

// ReadUser reads until the host sends a user message and returns it,
// answering control requests on the way the way an idle CLI does
// (interrupt, set_model, set_permission_mode, set_max_thinking_tokens
// succeed; initialize is answered again; anything else is "Unsupported").
// It returns io.EOF when the host closes stdin, and ErrSessionEnded once
// it answered end_session.
func (c *CLI) ReadUser(ctx context.Context) (*Line, error) {
	for {
		l, err := c.Read(ctx)
		if err != nil {
			return nil, err
		}
		switch l.Type {
		case "user":
			return l, nil
		case "control_request":
			if err := c.AnswerIdle(l); err != nil {
				return nil, err
			}
		}
	}
}

// AnswerIdle answers a host control request the way an idle 2.1.197 CLI
// does (the informational ones with trimmed real answers, see
// fakecli_control.go). After answering end_session it returns
// ErrSessionEnded: the script should then return nil, as the CLI exits 0.
func (c *CLI) AnswerIdle(l *Line) error {
	switch l.Subtype {
	case "initialize":
		return c.Respond(l.RequestID, InitializeResponse())
	case "interrupt", "set_model", "set_max_thinking_tokens",
		"mcp_toggle", "mcp_message": // mcp_message: a server's own message, handed to the CLI's MCP client
		return c.Respond(l.RequestID, nil)
	case "end_session":
		if err := c.Respond(l.RequestID, nil); err != nil {
			return err
		}
		return ErrSessionEnded
	case "set_permission_mode":
		var r struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(l.Request, &r)
		return c.Respond(l.RequestID, map[string]string{"mode": r.Mode})
	default:
		if p, ok := idleControlAnswer(l); ok {
			return c.Respond(l.RequestID, p)
		}
		return c.RespondError(l.RequestID, "Unsupported control request subtype: "+l.Subtype)
	}
}

// SystemInit is the system/init line that starts every turn.
func (c *CLI) SystemInit() Msg {
	return Msg{
		"type": "system", "subtype": "init", "cwd": "/fake", "session_id": c.sessionID,
		"tools": []string{"Bash", "Read", "Write"}, "mcp_servers": []any{},
		"model": "claude-opus-4-8", "permissionMode": "default", "slash_commands": []string{"cost"},
		"apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.197", "output_style": "default",
		"agents": []string{}, "skills": []string{}, "plugins": []any{}, "uuid": fakeUUID(),
	}
}

// apiMessage is the Anthropic message wrapper of an assistant line.
func apiMessage(id string, block any) Msg {
	return Msg{
		"id": id, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
		"content": []any{block}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
}

// assistant is an assistant line of one block. Each is a message of its
// own with an id of its own (msg_fake_1, msg_fake_2, … per CLI), as the
// API's message ids are unique: a front end that keys what it shows by
// message id sees every turn's answer, not the first one replaced.
func (c *CLI) assistant(block any) Msg {
	id := "msg_fake_" + strconv.FormatInt(c.messages.Add(1), 10)
	return Msg{
		"type": "assistant", "message": apiMessage(id, block),
		"parent_tool_use_id": nil, "session_id": c.sessionID, "uuid": fakeUUID(), "request_id": "req_fake_1",
	}
}

// AssistantText is an assistant line with one text block.
func (c *CLI) AssistantText(text string) Msg {
	return c.assistant(map[string]any{"type": "text", "text": text})
}

// AssistantToolUse is an assistant line with one tool_use block.
func (c *CLI) AssistantToolUse(id, name string, input any) Msg {
	return c.assistant(map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
}

// ToolResult is the user line carrying a tool's result.
func (c *CLI) ToolResult(toolUseID, content string, isError bool) Msg {
	return Msg{
		"type": "user",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"tool_use_id": toolUseID, "type": "tool_result", "content": content, "is_error": isError}}},
		"parent_tool_use_id": nil, "session_id": c.sessionID, "uuid": fakeUUID(),
		"timestamp": "2026-11-22T00:00:00.000Z", "tool_use_result": content,
	}
}

// WriteTool runs the Write tool as the CLI does: it writes the call
// (id), writes content into the file at path, and then the result, which
// carries the file as it was before (originalFile) as the CLI's does. A
// file that cannot be written is the error returned; nothing else is
// written then.
func (c *CLI) WriteTool(id, path, content string) error {
	old, err := os.ReadFile(path)
	kind := "update"
	if errors.Is(err, fs.ErrNotExist) {
		kind = "create"
	}
	if err := c.Write(c.AssistantToolUse(id, "Write", map[string]string{"file_path": path, "content": content})); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return err
	}
	r := c.ToolResult(id, "written", false)
	res := map[string]any{"type": kind, "filePath": path, "content": content, "structuredPatch": []any{}, "originalFile": nil}
	if kind == "update" {
		res["originalFile"] = string(old)
	}
	r["tool_use_result"] = res
	return c.Write(r)
}

// TextDelta is a stream_event line with a text_delta.
func (c *CLI) TextDelta(index int, text string) Msg {
	return Msg{
		"type": "stream_event", "session_id": c.sessionID, "parent_tool_use_id": nil, "uuid": fakeUUID(),
		"event": map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "text_delta", "text": text}},
	}
}

// TaskStarted is the system line the CLI writes as a background task
// starts: an agent the model started in the background (taskType
// "local_agent", toolUseID its Agent call) or a command it backgrounded
// ("local_bash").
func (c *CLI) TaskStarted(taskID, toolUseID, description, taskType string) Msg {
	return Msg{
		"type": "system", "subtype": "task_started", "task_id": taskID, "tool_use_id": toolUseID,
		"description": description, "task_type": taskType, "session_id": c.sessionID, "uuid": fakeUUID(),
	}
}

// StartBackgroundAgent writes the lines the CLI writes as the model
// starts an agent in the background: its Agent call (toolUseID, with
// run_in_background), the task_started line of task taskID (local_agent)
// and the call's result, which returns at once. The task then runs until
// a TaskNotification ends it.
func (c *CLI) StartBackgroundAgent(taskID, toolUseID, description string) error {
	return c.Write(
		c.AssistantToolUse(toolUseID, "Agent", map[string]any{"description": description, "run_in_background": true}),
		c.TaskStarted(taskID, toolUseID, description, "local_agent"),
		c.ToolResult(toolUseID, "Async agent launched", false))
}

// WatcherStarted is the task_started line of a watcher: a task the CLI
// marks ambient (a live-update monitor), which is no work and may run as
// long as the CLI does (host.WorkingTasks leaves it out). toolUseID is ""
// for one the CLI started on its own.
func (c *CLI) WatcherStarted(taskID, toolUseID, description string) Msg {
	return c.TaskStarted(taskID, toolUseID, description, "monitor").With("ambient", true)
}

// SessionState is the system line the CLI writes as its session's state
// changes ("running", "idle", "requires_action"), when its environment
// has CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1 (claude.Query sets it).
func (c *CLI) SessionState(state string) Msg {
	return Msg{"type": "system", "subtype": "session_state_changed", "state": state, "session_id": c.sessionID, "uuid": fakeUUID()}
}

// TaskNotification is the system line the CLI writes as a background
// task ends: status "completed", "failed" or "stopped".
func (c *CLI) TaskNotification(taskID, status string) Msg {
	return Msg{
		"type": "system", "subtype": "task_notification", "task_id": taskID, "status": status,
		"output_file": "", "summary": "", "session_id": c.sessionID, "uuid": fakeUUID(),
	}
}

func (c *CLI) result(subtype string, isError bool) Msg {
	return Msg{
		"type": "result", "subtype": subtype, "is_error": isError, "duration_ms": 12, "duration_api_ms": 10,
		"num_turns": 1, "session_id": c.sessionID, "total_cost_usd": 0.0001,
		"usage":              map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
		"modelUsage":         map[string]any{"claude-opus-4-8": map[string]any{"inputTokens": 10, "outputTokens": 5, "costUSD": 0.0001}},
		"permission_denials": []any{}, "uuid": fakeUUID(),
	}
}

// ResultSuccess is a successful result line.
func (c *CLI) ResultSuccess(text string) Msg {
	return c.result("success", false).With("result", text).With("stop_reason", "end_turn").
		With("terminal_reason", "completed").With("api_error_status", nil)
}

// ResultInterrupted is the result of an interrupted turn.
func (c *CLI) ResultInterrupted() Msg {
	return c.result("error_during_execution", true).With("terminal_reason", "aborted_streaming").
		With("errors", []string{"[ede_diagnostic] interrupted"}).With("stop_reason", nil)
}

// ResultAPIError is the result of a turn whose API call failed: subtype
// success but is_error true, as the real CLI reports it.
func (c *CLI) ResultAPIError(status int, text string) Msg {
	return c.result("success", true).With("result", text).With("api_error_status", status).
		With("stop_reason", "stop_sequence").With("terminal_reason", "completed")
}

// CanUseTool asks the host for permission, as the CLI does with
// --permission-prompt-tool stdio, and returns its answer.
func (c *CLI) CanUseTool(ctx context.Context, toolUseID, tool string, input any) (json.RawMessage, error) {
	return c.Request(ctx, "can_use_tool", map[string]any{
		"tool_name": tool, "display_name": tool, "input": input, "tool_use_id": toolUseID,
	})
}

// Turn plays one simple turn: it waits for a user message, then writes
// system/init, an assistant text and a successful result. It returns the
// user line.
func (c *CLI) Turn(ctx context.Context, reply string) (*Line, error) {
	u, err := c.ReadUser(ctx)
	if err != nil {
		return nil, err
	}
	return u, c.Write(c.SystemInit(), c.AssistantText(reply), c.ResultSuccess(reply))
}

// Echo is a Script that answers initialize and then every user message
// with a turn whose text is "echo: " and the message's first text, until
// stdin closes.
func Echo(ctx context.Context, c *CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return ignoreEOF(err)
		}
		text := "echo: " + UserText(u.Raw)
		if err := c.Write(c.SystemInit(), c.AssistantText(text), c.ResultSuccess(text)); err != nil {
			return err
		}
	}
}

// UserText returns the first text of a user line the host wrote.
func UserText(raw json.RawMessage) string {
	var u struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(u.Message.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type, Text string
	}
	_ = json.Unmarshal(u.Message.Content, &blocks)
	for _, b := range blocks {
		if b.Type == "text" {
			return b.Text
		}
	}
	return ""
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, ErrSessionEnded) {
		return nil
	}
	return err
}
