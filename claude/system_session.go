package claude

import "encoding/json"

// Messages about the session's course (a conversation reset, the active
// goal, the transcript mirror, a model refusal's fallback, API errors,
// compaction, a remote worker's shutdown), which CLI 2.1.330 writes.
// Their shapes come from the TypeScript SDK's declarations (0.3.330) and,
// for those it does not declare (api_error, stop_hook_summary,
// microcompact_boundary, transcript_mirror), from the CLI itself. Most
// need conditions an offline test cannot produce (a model refusal, a full
// disk, a remote worker shutting down); the decoder's golden file
// (testdata/decode) holds a line of each.

// ConversationResetMessage (conversation_reset) says the conversation
// started over under a new id: /clear, leaving plan mode with a fresh
// context, a fresh session. Messages before it are no longer part of
// what the model sees.
type ConversationResetMessage struct {
	Meta
	NewConversationID string `json:"new_conversation_id"`
	// Trigger is "clear", "plan_mode_exit", "fresh_session" or
	// "onboarding".
	Trigger string `json:"trigger,omitempty"`
	// UserMessageUUID is the user message that caused the reset, if any.
	UserMessageUUID string `json:"user_message_uuid,omitempty"`
	Timestamp       string `json:"timestamp,omitempty"`
}

// ActiveGoalMessage (active_goal) reports the /goal the session works
// towards, each time its Stop hook judges it: Value is nil when the goal
// was met and cleared, else the goal with its iteration count and the
// hook's last reason. A goal indicator re-renders from it.
type ActiveGoalMessage struct {
	Meta
	Value *ActiveGoal `json:"value"`
}

// ActiveGoal is the goal of an ActiveGoalMessage.
type ActiveGoal struct {
	Condition  string `json:"condition"`
	Iterations int    `json:"iterations"`
	// SetAt is when the goal was set, in Unix milliseconds.
	SetAt         int64  `json:"set_at"`
	TokensAtStart int64  `json:"tokens_at_start"`
	LastReason    string `json:"last_reason,omitempty"`
}

// TranscriptMirrorMessage (transcript_mirror) carries entries the CLI
// appended to a session file, for a host that mirrors transcripts
// elsewhere. The CLI writes them only when started with --session-mirror.
// With Options.SessionStore set, the session feeds them to the store and
// they never reach Receive; a program that sets ExtraArgs to
// --session-mirror itself receives them here.
type TranscriptMirrorMessage struct {
	Meta
	FilePath string            `json:"filePath"`
	Entries  []json.RawMessage `json:"entries"`
}

// ModelRefusalFallbackMessage (system/model_refusal_fallback) says the
// model refused and the CLI switched models: Direction "retry" (the turn
// is retried on FallbackModel), "revert" or "sticky". The messages in
// RetractedMessageUUIDs are withdrawn; remove them from a display.
type ModelRefusalFallbackMessage struct {
	Meta
	Trigger                string   `json:"trigger"`
	Direction              string   `json:"direction"`
	Scope                  string   `json:"scope,omitempty"`
	OriginalModel          string   `json:"original_model"`
	FallbackModel          string   `json:"fallback_model"`
	RequestID              string   `json:"request_id"`
	APIRefusalCategory     string   `json:"api_refusal_category,omitempty"`
	APIRefusalExplanation  string   `json:"api_refusal_explanation,omitempty"`
	RetractedMessageUUIDs  []string `json:"retracted_message_uuids,omitempty"`
	RefusedUserMessageUUID string   `json:"refused_user_message_uuid,omitempty"`
	// Content is the notice to show the user.
	Content string `json:"content"`
}

// ModelRefusalNoFallbackMessage (system/model_refusal_no_fallback) says
// the model refused and no fallback model was available: the turn ends.
type ModelRefusalNoFallbackMessage struct {
	Meta
	OriginalModel          string `json:"original_model"`
	RequestID              string `json:"request_id"`
	APIRefusalCategory     string `json:"api_refusal_category,omitempty"`
	APIRefusalExplanation  string `json:"api_refusal_explanation,omitempty"`
	RefusedUserMessageUUID string `json:"refused_user_message_uuid,omitempty"`
	Content                string `json:"content"`
}

// ControlRequestProgressMessage (system/control_request_progress)
// reports progress on a long-running control request the host sent,
// named by RequestID: Status "started", or "api_retry" with the retry
// counters.
type ControlRequestProgressMessage struct {
	Meta
	RequestID    string  `json:"request_id"`
	Status       string  `json:"status"`
	Attempt      int     `json:"attempt,omitempty"`
	MaxRetries   int     `json:"max_retries,omitempty"`
	RetryDelayMS float64 `json:"retry_delay_ms,omitempty"`
	ErrorStatus  int     `json:"error_status,omitempty"`
}

// WorkerShuttingDownMessage (system/worker_shutting_down) says the CLI
// process is about to exit (a remote worker being replaced, a shutdown
// signal), with the reason.
type WorkerShuttingDownMessage struct {
	Meta
	Reason string `json:"reason"`
}

// MemoryRecallMessage (system/memory_recall) lists the memory files the
// CLI recalled into the conversation.
type MemoryRecallMessage struct {
	Meta
	// Mode is "select" or "synthesize".
	Mode     string           `json:"mode"`
	Memories []RecalledMemory `json:"memories"`
}

// RecalledMemory is one memory of a MemoryRecallMessage.
type RecalledMemory struct {
	Path string `json:"path"`
	// Scope is "personal", "team" or "organization".
	Scope   string `json:"scope"`
	Content string `json:"content,omitempty"`
}

// MirrorErrorMessage (system/mirror_error) says writing a transcript to
// a session mirror failed.
type MirrorErrorMessage struct {
	Meta
	Error string    `json:"error"`
	Key   MirrorKey `json:"key"`
}

// MirrorKey names a mirrored transcript.
type MirrorKey struct {
	ProjectKey string `json:"projectKey"`
	SessionID  string `json:"sessionId"`
	Subpath    string `json:"subpath,omitempty"`
}

// SessionWritesLostMessage (system/session_writes_lost) says the CLI
// could not write its session file or global config: the disk is full
// (ErrorCode "ENOSPC") or over quota ("EDQUOT"). Lost names what was not
// written ("transcript", "global_config"); a session whose transcript
// was lost cannot be resumed completely.
type SessionWritesLostMessage struct {
	Meta
	ErrorCode            string   `json:"error_code"`
	Lost                 []string `json:"lost"`
	TranscriptSessionIDs []string `json:"transcript_session_ids,omitempty"`
}

// APIErrorMessage (system/api_error) reports an API call that failed and
// is being retried, as the CLI records it for its own interface; stream
// consumers usually get *APIRetryMessage for the same event.
type APIErrorMessage struct {
	Meta
	Level string `json:"level"`
	// Error is the failure as the CLI describes it (an object).
	Error        json.RawMessage `json:"error,omitempty"`
	RetryInMS    float64         `json:"retryInMs"`
	RetryAttempt int             `json:"retryAttempt"`
	MaxRetries   int             `json:"maxRetries"`
	Source       string          `json:"source,omitempty"`
	Timestamp    string          `json:"timestamp,omitempty"`
}

// StopHookSummaryMessage (system/stop_hook_summary) sums up the Stop
// hooks that ran at the end of a turn: how many, their errors, and
// whether one prevented the model from stopping.
type StopHookSummaryMessage struct {
	Meta
	HookCount int `json:"hookCount"`
	// HookInfos and HookErrors are as the CLI sent them.
	HookInfos             json.RawMessage `json:"hookInfos,omitempty"`
	HookErrors            json.RawMessage `json:"hookErrors,omitempty"`
	PreventedContinuation bool            `json:"preventedContinuation"`
	StopReason            string          `json:"stopReason,omitempty"`
	HasOutput             bool            `json:"hasOutput"`
	Level                 string          `json:"level,omitempty"`
	ToolUseID             string          `json:"toolUseID,omitempty"`
	HookLabel             string          `json:"hookLabel,omitempty"`
	TotalDurationMS       float64         `json:"totalDurationMs,omitempty"`
	Timestamp             string          `json:"timestamp,omitempty"`
}

// MicrocompactBoundaryMessage (system/microcompact_boundary) marks where
// the CLI cleared old tool results from the context to save space,
// without a full compaction. Its details are in RawJSON.
type MicrocompactBoundaryMessage struct {
	Meta
	Timestamp string `json:"timestamp,omitempty"`
}

// MessageOrigin says where a user message (or the turn a result ends)
// came from, when not from the host's own prompt: Kind "human", "channel"
// (an MCP channel server, Server) or "peer" (another session, From).
type MessageOrigin struct {
	Kind   string `json:"kind"`
	Server string `json:"server,omitempty"`
	From   string `json:"from,omitempty"`
	// FromMode is the sending session's permission class, "bypass" or
	// "prompting", when its host declared it.
	FromMode     string `json:"fromMode,omitempty"`
	Name         string `json:"name,omitempty"`
	FromSession  string `json:"fromSession,omitempty"`
	SenderTaskID string `json:"senderTaskId,omitempty"`
	Body         string `json:"body,omitempty"`
	// VerifiedPeerPID is the sending peer's process id, when the CLI
	// verified it.
	VerifiedPeerPID int `json:"verifiedPeerPid,omitempty"`
	// Subkind, FireReason and RunID describe a "task-notification"
	// origin: what fired it (scheduled-trigger, peer-send-message,
	// projects-relay, session-inbox, external-event), why, and the
	// background task's run.
	Subkind    string `json:"subkind,omitempty"`
	FireReason string `json:"fireReason,omitempty"`
	RunID      string `json:"runId,omitempty"`
}

func (*ConversationResetMessage) isMessage()      {}
func (*TranscriptMirrorMessage) isMessage()       {}
func (*ActiveGoalMessage) isMessage()             {}
func (*ModelRefusalFallbackMessage) isMessage()   {}
func (*ModelRefusalNoFallbackMessage) isMessage() {}
func (*ControlRequestProgressMessage) isMessage() {}
func (*WorkerShuttingDownMessage) isMessage()     {}
func (*MemoryRecallMessage) isMessage()           {}
func (*MirrorErrorMessage) isMessage()            {}
func (*SessionWritesLostMessage) isMessage()      {}
func (*APIErrorMessage) isMessage()               {}
func (*StopHookSummaryMessage) isMessage()        {}
func (*MicrocompactBoundaryMessage) isMessage()   {}

// newSystemMore is newSystem for the subtypes in this file.
func newSystemMore(subtype string) Message {
	switch subtype {
	case "model_refusal_fallback":
		return new(ModelRefusalFallbackMessage)
	case "model_refusal_no_fallback":
		return new(ModelRefusalNoFallbackMessage)
	case "control_request_progress":
		return new(ControlRequestProgressMessage)
	case "worker_shutting_down":
		return new(WorkerShuttingDownMessage)
	case "memory_recall":
		return new(MemoryRecallMessage)
	case "mirror_error":
		return new(MirrorErrorMessage)
	case "session_writes_lost":
		return new(SessionWritesLostMessage)
	case "api_error":
		return new(APIErrorMessage)
	case "stop_hook_summary":
		return new(StopHookSummaryMessage)
	case "microcompact_boundary":
		return new(MicrocompactBoundaryMessage)
	}
	return newSystemPeer(subtype)
}
