package claudetest

import (
	"encoding/json"
	"errors"

	"github.com/tetherhq/tether/claude"
)

// ErrSessionEnded is returned by AnswerIdle (and so by ReadUser) once it
// has answered the host's end_session request. A real CLI exits with
// status 0 then; a script should return nil.
var ErrSessionEnded = errors.New("claudetest: the host ended the session")

// idleControlAnswer returns what an idle CLI 2.1.197 answers to the
// host's informational and housekeeping requests, trimmed of what varies
// with the install (skills, plugins, the long command list). ok is false
// for subtypes it does not know.
func idleControlAnswer(l *Line) (payload any, ok bool) {
	switch l.Subtype {
	case "get_context_usage":
		return Msg{
			"categories": []any{
				Msg{"name": "System prompt", "tokens": 1619, "color": "promptBorder"},
				Msg{"name": "System tools", "tokens": 14355, "color": "inactive"},
				Msg{"name": "Free space", "tokens": 184026, "color": "promptBorder"},
			},
			"totalTokens": 15974, "maxTokens": 200000, "rawMaxTokens": 200000, "autocompactSource": "auto",
			"percentage": 8, "gridRows": []any{}, "model": "claude-opus-4-8", "memoryFiles": []any{},
			"mcpTools": []any{}, "agents": []any{}, "isAutoCompactEnabled": true, "apiUsage": nil,
		}, true
	case "get_usage":
		return Msg{
			"session": Msg{"total_cost_usd": 0, "total_api_duration_ms": 0, "total_duration_ms": 0,
				"total_lines_added": 0, "total_lines_removed": 0, "model_usage": Msg{}},
			"subscription_type": nil, "rate_limits_available": false, "rate_limits": nil, "behaviors": nil,
		}, true
	case "get_session_cost":
		return Msg{"text": "Total cost:            $0.0000\nTotal duration (API):  0s\nTotal duration (wall): 0s\nTotal code changes:    0 lines added, 0 lines removed\nUsage:                 0 input, 0 output, 0 cache read, 0 cache write"}, true
	case "get_settings":
		return Msg{"effective": Msg{}, "sources": []any{}, "applied": Msg{"model": "claude-opus-4-8", "effort": "high", "ultracode": false}}, true
	case "get_binary_version":
		return Msg{"version": claude.MinCLIVersion, "buildTime": "2026-06-29T19:08:42Z"}, true
	case "reload_skills":
		return Msg{"skills": []any{}}, true
	case "reload_plugins":
		init := InitializeResponse()
		return Msg{"commands": init["commands"], "agents": init["agents"], "plugins": []any{}, "mcpServers": []any{}, "error_count": 0}, true
	case "rename_session", "apply_flag_settings":
		return nil, true
	case "rewind_files":
		return Msg{"canRewind": false, "error": "File rewinding is not enabled."}, true
	case "cancel_async_message":
		return Msg{"cancelled": false}, true
	case "stop_task":
		return Msg{}, true
	case "background_tasks":
		var r struct {
			ToolUseID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(l.Request, &r)
		if r.ToolUseID != "" {
			return Msg{"backgrounded": false}, true
		}
		return Msg{}, true
	}
	return nil, false
}
