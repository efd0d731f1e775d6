package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// Message is one line of the CLI's stdout, decoded. It is one of:
//
//   - *AssistantMessage: one content block of the model's answer
//   - *UserMessage: tool results, replays of what the host sent, synthetic
//     prompts (interrupt markers, Stop-hook feedback, subagent prompts)
//   - *ResultMessage: the end of a turn
//   - *StreamEvent: a raw API streaming event (Options.IncludePartialMessages)
//   - a system message, one type per subtype: *InitMessage, *StatusMessage,
//     *APIRetryMessage, *ThinkingTokensMessage, *TaskStartedMessage,
//     *TaskProgressMessage, *TaskUpdatedMessage, *TaskNotificationMessage,
//     *NotificationMessage, *CommandsChangedMessage,
//     *SessionStateChangedMessage, *CompactBoundaryMessage,
//     *HookStartedMessage, *HookProgressMessage, *HookResponseMessage,
//     *LocalCommandMessage, *TurnDurationMessage, *InformationalMessage,
//     *PermissionDeniedMessage, *SessionTitleChangedMessage,
//     *BackgroundTasksChangedMessage, *FilesPersistedMessage,
//     *ElicitationCompleteMessage, *PluginInstallMessage,
//     *ModelRefusalFallbackMessage, *ModelRefusalNoFallbackMessage,
//     *ControlRequestProgressMessage, *WorkerShuttingDownMessage,
//     *MemoryRecallMessage, *MirrorErrorMessage, *SessionWritesLostMessage,
//     *APIErrorMessage, *StopHookSummaryMessage,
//     *MicrocompactBoundaryMessage, *PeerMessageHoldMessage, and
//     *UnknownSystemMessage for the rest
//   - *RateLimitEvent, *AuthStatusMessage, *ToolProgressMessage,
//     *ToolUseSummaryMessage, *KeepAliveMessage, *PromptSuggestionMessage,
//     *CommandLifecycleMessage, *StreamlinedTextMessage,
//     *StreamlinedToolUseSummaryMessage, *ConversationResetMessage,
//     *TranscriptMirrorMessage, *ActiveGoalMessage
//   - *UnknownMessage: a type this version of Tether does not know.
//
// The CLI grows new types and subtypes between versions; they arrive as
// *UnknownMessage or *UnknownSystemMessage, never as an error, so a newer CLI
// cannot break a program. Every message keeps the line it was decoded from
// (RawJSON), fields Tether does not model included.
type Message interface {
	// RawJSON returns the line the message was decoded from. Treat it as
	// read-only; for a message built in Go it is nil.
	RawJSON() json.RawMessage
	isMessage()
}

// Meta holds what almost every message carries.
type Meta struct {
	UUID      string `json:"uuid,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Raw is the whole stdout line; nil for a message built in Go.
	Raw json.RawMessage `json:"-"`
}

// RawJSON returns the line the message was decoded from.
func (m *Meta) RawJSON() json.RawMessage { return m.Raw }

func (m *Meta) setRaw(b []byte) { m.Raw = b }

type rawSetter interface{ setRaw([]byte) }

// UnknownMessage is a stdout line whose type this version of Tether does
// not know. Nothing is lost: Raw has the whole line.
type UnknownMessage struct {
	Meta
	Type string `json:"type"`
}

// KeepAliveMessage is the CLI's periodic no-op.
type KeepAliveMessage struct{ Meta }

// RateLimitEvent reports the account's rate-limit state (subscription
// accounts).
type RateLimitEvent struct {
	Meta
	Info RateLimitInfo `json:"rate_limit_info"`
}

// RateLimitInfo is the state of one rate limit.
type RateLimitInfo struct {
	Status         string  `json:"status"` // allowed, allowed_warning, rejected
	ResetsAt       int64   `json:"resetsAt,omitempty"`
	RateLimitType  string  `json:"rateLimitType,omitempty"` // five_hour, seven_day, …
	Utilization    float64 `json:"utilization,omitempty"`
	IsUsingOverage bool    `json:"isUsingOverage,omitempty"`
	OverageStatus  string  `json:"overageStatus,omitempty"`
	// SurpassedThreshold is the utilisation threshold the warning is for.
	SurpassedThreshold float64 `json:"surpassedThreshold,omitempty"`
	// LimitScope is service, channel or group_pool.
	LimitScope            string `json:"limitScope,omitempty"`
	OverageEnabled        bool   `json:"overageEnabled,omitempty"`
	OverageInUse          bool   `json:"overageInUse,omitempty"`
	OverageResetsAt       int64  `json:"overageResetsAt,omitempty"`
	OverageDisabledReason string `json:"overageDisabledReason,omitempty"`
	// CanUserPurchaseCredits and HasChargeableSavedPaymentMethod are
	// what a UI needs to offer buying more.
	CanUserPurchaseCredits          bool `json:"canUserPurchaseCredits,omitempty"`
	HasChargeableSavedPaymentMethod bool `json:"hasChargeableSavedPaymentMethod,omitempty"`
}

// AuthStatusMessage reports progress of an authentication the CLI runs.
type AuthStatusMessage struct {
	Meta
	IsAuthenticating bool     `json:"isAuthenticating"`
	Output           []string `json:"output"`
	Error            string   `json:"error,omitempty"`
}

// ToolProgressMessage says a tool is still running.
type ToolProgressMessage struct {
	Meta
	ToolUseID          string  `json:"tool_use_id"`
	ToolName           string  `json:"tool_name"`
	ParentToolUseID    string  `json:"parent_tool_use_id"`
	ElapsedTimeSeconds float64 `json:"elapsed_time_seconds"`
	TaskID             string  `json:"task_id,omitempty"`
	// Heartbeat marks a progress message that only says the tool is
	// alive, with nothing new.
	Heartbeat    bool   `json:"heartbeat,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	// SubagentRetry is set while a subagent's API call is being retried.
	SubagentRetry *SubagentRetry `json:"subagent_retry,omitempty"`
	// Description describes the tool call in progress, when the CLI
	// gives one (SDK 0.3.335 declares it, without saying more).
	Description string `json:"description,omitempty"`
}

// SubagentRetry is ToolProgressMessage.SubagentRetry: a subagent's API
// call failed and will be retried, as APIRetryMessage says for the main
// loop.
type SubagentRetry struct {
	AgentID      string  `json:"agent_id"`
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMS float64 `json:"retry_delay_ms"`
	// ErrorStatus is the HTTP status, 0 when there was none.
	ErrorStatus   int    `json:"error_status"`
	ErrorCategory string `json:"error_category"`
}

// ToolUseSummaryMessage summarises a run of tool calls
// (CLAUDE_CODE_EMIT_TOOL_USE_SUMMARIES).
type ToolUseSummaryMessage struct {
	Meta
	Summary             string   `json:"summary"`
	PrecedingToolUseIDs []string `json:"preceding_tool_use_ids"`
}

// PromptSuggestionMessage is a suggested next prompt.
type PromptSuggestionMessage struct {
	Meta
	Suggestion string `json:"suggestion"`
}

// CommandLifecycleMessage tracks a host user message that carried a UUID
// through the CLI's queue (CLI 2.1.330 and later): queued, started,
// completed, cancelled.
type CommandLifecycleMessage struct {
	Meta
	CommandUUID string `json:"command_uuid"`
	State       string `json:"state"`
}

// StreamlinedTextMessage is the condensed text of an assistant message
// (streamlined output mode).
type StreamlinedTextMessage struct {
	Meta
	Text string `json:"text"`
}

// StreamlinedToolUseSummaryMessage is the condensed summary of tool calls
// (streamlined output mode).
type StreamlinedToolUseSummaryMessage struct {
	Meta
	ToolSummary string `json:"tool_summary"`
}

func (*UnknownMessage) isMessage()                   {}
func (*KeepAliveMessage) isMessage()                 {}
func (*RateLimitEvent) isMessage()                   {}
func (*AuthStatusMessage) isMessage()                {}
func (*ToolProgressMessage) isMessage()              {}
func (*ToolUseSummaryMessage) isMessage()            {}
func (*PromptSuggestionMessage) isMessage()          {}
func (*CommandLifecycleMessage) isMessage()          {}
func (*StreamlinedTextMessage) isMessage()           {}
func (*StreamlinedToolUseSummaryMessage) isMessage() {}

// errNotObject is why a line that is valid JSON but no object is refused.
var errNotObject = errors.New("not a JSON object")

// DecodeMessage decodes one stdout line of the CLI. The message keeps line
// as its RawJSON, and its strings may share line's memory, so line must not
// be modified afterwards. It fails only
// for a line that is not a JSON object; unknown types and subtypes decode
// to *UnknownMessage and *UnknownSystemMessage, and a known type whose
// fields have unexpected JSON types decodes as unknown too, so that a newer
// CLI never stops a stream.
func DecodeMessage(line []byte) (Message, error) { return decodeMessage(line, true) }

// decodeMessage is DecodeMessage; planned false leaves the decode plans
// out (plan.go), so that tests can check they change nothing.
func decodeMessage(line []byte, planned bool) (Message, error) {
	typ, ok := peekType(line)
	return decodeTyped(line, typ, ok, planned)
}

// decodeTyped is decodeMessage after peekType(line) (the read loop's,
// which a queued line carries).
func decodeTyped(line []byte, typ string, ok, planned bool) (Message, error) {
	if !ok {
		var h struct {
			Type *string `json:"type"`
		}
		if err := unmarshal(line, &h); err != nil {
			return nil, err
		}
		if h.Type == nil {
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) == 0 || trimmed[0] != '{' {
				return nil, errNotObject
			}
		} else {
			typ = *h.Type
		}
	}
	var m Message
	switch typ {
	case "stream_event":
		e, err := decodeStreamEvent(line, planned)
		if err != nil {
			if !isTypeError(err) {
				return nil, err
			}
			return unknown(line, typ)
		}
		e.Raw = line
		return e, nil
	case "assistant":
		m = new(AssistantMessage)
	case "user":
		if planned {
			var w wireUser // on the stack: only the message escapes
			if decodeWith(wireUserPlan(), line, unsafe.Pointer(&w)) {
				u := new(UserMessage)
				u.fromWire(&w)
				u.Raw = line
				return u, nil
			}
		}
		m = new(UserMessage)
	case "result":
		m = new(ResultMessage)
	case "system":
		return decodeSystem(line)
	case "keep_alive":
		m = new(KeepAliveMessage)
	case "rate_limit_event":
		m = new(RateLimitEvent)
	case "auth_status":
		m = new(AuthStatusMessage)
	case "tool_progress":
		m = new(ToolProgressMessage)
	case "tool_use_summary":
		m = new(ToolUseSummaryMessage)
	case "prompt_suggestion":
		m = new(PromptSuggestionMessage)
	case "command_lifecycle":
		m = new(CommandLifecycleMessage)
	case "streamlined_text":
		m = new(StreamlinedTextMessage)
	case "streamlined_tool_use_summary":
		m = new(StreamlinedToolUseSummaryMessage)
	case "conversation_reset":
		m = new(ConversationResetMessage)
	case "transcript_mirror":
		m = new(TranscriptMirrorMessage)
	case "active_goal":
		m = new(ActiveGoalMessage)
	default:
		return unknown(line, typ)
	}
	if planned && decodePlannedMessage(line, m) {
		m.(rawSetter).setRaw(line)
		return m, nil
	}
	reflect.ValueOf(m).Elem().SetZero()
	if err := unmarshal(line, m); err != nil {
		if !isTypeError(err) {
			return nil, err
		}
		return unknown(line, typ)
	}
	m.(rawSetter).setRaw(line)
	return m, nil
}

// The plans of the types decoded most, looked up once.
var (
	wireUserPlan         = sync.OnceValue(func() *plan { return planFor(reflect.TypeFor[wireUser]()) })
	assistantMessagePlan = sync.OnceValue(func() *plan { return planFor(reflect.TypeFor[AssistantMessage]()) })
)

// decodePlannedMessage is decodePlanned for a new message, with the
// assistant message's plan at hand.
func decodePlannedMessage(line []byte, m Message) bool {
	if a, ok := m.(*AssistantMessage); ok {
		return decodeWith(assistantMessagePlan(), line, unsafe.Pointer(a))
	}
	return decodePlanned(line, m)
}

// peekType returns the type of a line as the CLI writes it, type first;
// ok is false for anything else. It allocates only for a rare type (it
// runs on every stdout line, in the read loop, and on content blocks).
func peekType(line []byte) (string, bool) {
	const prefix = `{"type":"`
	if len(line) < len(prefix) || string(line[:len(prefix)]) != prefix {
		return "", false
	}
	rest := line[len(prefix):]
	// Types are short: a loop beats IndexByte's calls.
	end := -1
	for j, c := range rest {
		if c == '"' {
			end = j
			break
		}
		if c == '\\' {
			return "", false
		}
	}
	if end < 0 {
		return "", false
	}
	switch t := rest[:end]; string(t) {
	case "stream_event":
		return "stream_event", true
	case "assistant":
		return "assistant", true
	case "user":
		return "user", true
	case "result":
		return "result", true
	case "system":
		return "system", true
	case "text": // content blocks (decodeBlock)
		return "text", true
	case "tool_use":
		return "tool_use", true
	case "tool_result":
		return "tool_result", true
	default:
		return string(t), true
	}
}

// unknown keeps a line Tether cannot type, with its envelope fields.
func unknown(line []byte, typ string) (Message, error) {
	u := &UnknownMessage{Type: typ}
	var meta struct {
		UUID      any `json:"uuid"`
		SessionID any `json:"session_id"`
	}
	if err := unmarshal(line, &meta); err != nil {
		return nil, err
	}
	u.UUID, _ = meta.UUID.(string)
	u.SessionID, _ = meta.SessionID.(string)
	u.Raw = line
	return u, nil
}

// rawString returns a JSON string's value, or the raw JSON text when the
// value is some other kind (a field that grew from a string into an
// object keeps its information).
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func jsonError(what string, err error) error {
	return fmt.Errorf("decoding %s: %w", what, err)
}
