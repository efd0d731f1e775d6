package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ResultMessage ends a turn. The CLI writes one per turn, not one per user
// message: messages sent while a turn runs are merged into the next turn.
//
// IsError is authoritative: an API failure ends the turn with Subtype
// "success" and IsError true. Err returns a *ResultError for every failed
// turn, and Receive yields it together with the message.
type ResultMessage struct {
	Meta
	Subtype       ResultSubtype `json:"subtype"`
	IsError       bool          `json:"is_error"`
	DurationMS    int64         `json:"duration_ms"`
	DurationAPIMS int64         `json:"duration_api_ms"`
	// NumTurns counts API round trips and synthetic steps.
	NumTurns int `json:"num_turns"`
	// Result is the final text (the error text on an API failure). Absent
	// for error subtypes, which carry Errors instead.
	Result     string `json:"result"`
	StopReason string `json:"stop_reason"`
	// TerminalReason says why the turn's loop ended: completed,
	// aborted_streaming, aborted_tools, max_turns, prompt_too_long, …
	// (empty when the CLI did not say).
	TerminalReason TerminalReason `json:"terminal_reason,omitempty"`
	// APIErrorStatus is the HTTP status of the API failure that ended the
	// turn (0 when none, or when it had none, as for a stream error).
	APIErrorStatus int      `json:"api_error_status,omitempty"`
	Errors         []string `json:"errors,omitempty"`

	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             Usage                 `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []PermissionDenial    `json:"permission_denials"`
	// StructuredOutput is the JSON the model produced for --json-schema.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	// DeferredToolUse is the tool call a PreToolUse hook deferred
	// (HookOutput's PermissionDecision "defer"): the turn stopped before
	// running it, and the host decides what happens to it. Nil otherwise.
	DeferredToolUse *DeferredToolUse `json:"deferred_tool_use,omitempty"`

	TTFTMS        int64  `json:"ttft_ms,omitempty"`
	FastModeState string `json:"fast_mode_state,omitempty"`
	// FastModeDisabledReason says why fast mode is off when it is
	// ("sdk_opt_in_required", …; newer CLIs).
	FastModeDisabledReason string `json:"fast_mode_disabled_reason,omitempty"`

	// Timings of the turn's first request, in milliseconds from the
	// prompt (0 when the CLI did not say): TTFTStreamMS to the first
	// streamed token, TimeToRequestMS until the request was sent,
	// FirstContentFrameMS to the first content frame (newer CLIs). They
	// show where a slow turn spent its time.
	TTFTStreamMS        int64 `json:"ttft_stream_ms,omitempty"`
	TimeToRequestMS     int64 `json:"time_to_request_ms,omitempty"`
	FirstContentFrameMS int64 `json:"first_content_frame_ms,omitempty"`

	// QueuedTurnCount is how many prompts were still queued when the turn
	// ended (newer CLIs; nil from older ones).
	QueuedTurnCount *int `json:"queued_turn_count,omitempty"`
	// UserMessageUUID is the UUID of the prompt the turn answered, and
	// UserMessageUUIDs of each prompt when queued prompts were answered
	// together; "" and nil when the CLI did not say.
	UserMessageUUID  string   `json:"user_message_uuid,omitempty"`
	UserMessageUUIDs []string `json:"user_message_uuids,omitempty"`
	// LocalCommand names the slash command the CLI ran itself for this
	// "turn" (no model call), when that is what it was.
	LocalCommand string `json:"local_command,omitempty"`

	// ResultIndex numbers the session's results from 0 (newer CLIs; nil
	// from older ones): a gap means a result was lost.
	ResultIndex *int `json:"result_index,omitempty"`
	// Origin is the origin of the prompt the turn answered, when not this
	// host (see UserMessage.Origin).
	Origin *MessageOrigin `json:"origin,omitempty"`
	// ResumeReason says why this turn continued one a restart
	// interrupted.
	ResumeReason string `json:"resume_reason,omitempty"`

	// CredentialExpiresAt is when the credential the turn used expires
	// (an ISO 8601 time), when the CLI knows.
	CredentialExpiresAt string `json:"credential_expires_at,omitempty"`
	// StartupFailureReason is set on the zeroed error_during_execution
	// result a run writes before exiting on a known start-up failure
	// (config_file_invalid, managed_settings_invalid, cwd_unavailable, …);
	// Errors carries the message.
	StartupFailureReason string `json:"startup_failure_reason,omitempty"`
	// InvalidConfigFile is set with the config_file_invalid reason: the
	// file that did not parse, and its backup.
	InvalidConfigFile *InvalidConfigFile `json:"invalid_config_file,omitempty"`

	// More timings of the turn's first request and of the first frames
	// it posted, in milliseconds (0 when the CLI did not say). The _wall_
	// ones are Unix times; TimeOriginMS is the Unix time the others are
	// measured from. FirstStreamPostQueuedBehind and
	// FirstTextPostQueuedBehind say what a post waited behind
	// (durable_post, ephemeral_post, retry_backoff, hold, none).
	RequestSentWallMS           int64  `json:"request_sent_wall_ms,omitempty"`
	TimeOriginMS                int64  `json:"time_origin_ms,omitempty"`
	TimeToRequestFromSpawnMS    int64  `json:"time_to_request_from_spawn_ms,omitempty"`
	FirstStreamPostMS           int64  `json:"first_stream_post_ms,omitempty"`
	FirstStreamPostAckMS        int64  `json:"first_stream_post_ack_ms,omitempty"`
	FirstStreamPostQueueWaitMS  int64  `json:"first_stream_post_queue_wait_ms,omitempty"`
	FirstStreamPostQueuedBehind string `json:"first_stream_post_queued_behind,omitempty"`
	FirstStreamPostWallMS       int64  `json:"first_stream_post_wall_ms,omitempty"`
	FirstTextPostMS             int64  `json:"first_text_post_ms,omitempty"`
	FirstTextPostQueueWaitMS    int64  `json:"first_text_post_queue_wait_ms,omitempty"`
	FirstTextPostQueuedBehind   string `json:"first_text_post_queued_behind,omitempty"`
	FirstTextPostWallMS         int64  `json:"first_text_post_wall_ms,omitempty"`
	// WarmSpareClaimed is set when the turn ran on a prewarmed CLI that a
	// claim took (see Prewarm).
	WarmSpareClaimed bool `json:"warm_spare_claimed,omitempty"`
}

// InvalidConfigFile is ResultMessage.InvalidConfigFile: paths are in the
// form of the machine that runs the CLI.
type InvalidConfigFile struct {
	Path string `json:"path"`
	// IsGlobal says it is the CLI's global config file, the only one with
	// backups.
	IsGlobal bool `json:"is_global"`
	// BackupSearched true with no BackupPath: the CLI looked and found no
	// backup.
	BackupSearched bool   `json:"backup_searched"`
	BackupPath     string `json:"backup_path,omitempty"`
}

// DeferredToolUse is a tool call a hook deferred: the model asked for it,
// and the CLI ended the turn without running it.
type DeferredToolUse struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ResultSubtype is how a turn ended.
type ResultSubtype string

// Result subtypes. Note that ResultSuccess does not mean success: check
// IsError.
const (
	ResultSuccess                         ResultSubtype = "success"
	ResultErrorDuringExecution            ResultSubtype = "error_during_execution"
	ResultErrorMaxTurns                   ResultSubtype = "error_max_turns"
	ResultErrorMaxBudgetUSD               ResultSubtype = "error_max_budget_usd"
	ResultErrorMaxStructuredOutputRetries ResultSubtype = "error_max_structured_output_retries"
)

// TerminalReason is why a turn's query loop ended.
type TerminalReason string

// Terminal reasons the CLI knows.
const (
	TerminalCompleted           TerminalReason = "completed"
	TerminalStopHookPrevented   TerminalReason = "stop_hook_prevented"
	TerminalHookStopped         TerminalReason = "hook_stopped"
	TerminalToolDeferred        TerminalReason = "tool_deferred"
	TerminalMaxTurns            TerminalReason = "max_turns"
	TerminalAbortedStreaming    TerminalReason = "aborted_streaming"
	TerminalAbortedTools        TerminalReason = "aborted_tools"
	TerminalBackgroundRequested TerminalReason = "background_requested"
	TerminalBlockingLimit       TerminalReason = "blocking_limit"
	TerminalRapidRefillBreaker  TerminalReason = "rapid_refill_breaker"
	TerminalPromptTooLong       TerminalReason = "prompt_too_long"
	TerminalImageError          TerminalReason = "image_error"
	TerminalModelError          TerminalReason = "model_error"
	// TerminalAPIError: the API failed the request.
	TerminalAPIError TerminalReason = "api_error"
	// TerminalMalformedToolUseExhausted: the model wrote a malformed tool
	// call, and its retry did too.
	TerminalMalformedToolUseExhausted TerminalReason = "malformed_tool_use_exhausted"
	// TerminalBudgetExhausted: a spending budget ran out before the turn
	// was done.
	TerminalBudgetExhausted TerminalReason = "budget_exhausted"
	// TerminalStructuredOutputRetryExhausted: the output never matched
	// the JSON schema within the retries (JSONSchema).
	TerminalStructuredOutputRetryExhausted TerminalReason = "structured_output_retry_exhausted"
	// TerminalToolDeferredUnavailable: a call deferred by an earlier turn
	// (TerminalToolDeferred) could not be taken up when the session
	// resumed.
	TerminalToolDeferredUnavailable TerminalReason = "tool_deferred_unavailable"
	// TerminalTurnSetupFailed: the turn failed before the model was
	// asked (a prompt the CLI could not take in).
	TerminalTurnSetupFailed TerminalReason = "turn_setup_failed"
)

// ModelUsage is one model's share of a session's usage and cost.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
	// ThinkingTokens are the output tokens spent thinking, when the CLI
	// counts them apart.
	ThinkingTokens int64 `json:"thinkingTokens,omitempty"`
	// The cache writes by time to live, when the API reported them.
	CacheCreationEphemeral5mInputTokens int64 `json:"cacheCreationEphemeral5mInputTokens,omitempty"`
	CacheCreationEphemeral1hInputTokens int64 `json:"cacheCreationEphemeral1hInputTokens,omitempty"`
	// CanonicalModel is the model's canonical id, Provider who served it
	// (firstParty, bedrock, vertex, …), CostBasis how CostUSD was priced:
	// list, managed or unknown.
	CanonicalModel string `json:"canonicalModel,omitempty"`
	Provider       string `json:"provider,omitempty"`
	CostBasis      string `json:"costBasis,omitempty"`
}

// PermissionDenial is a tool call that was refused during the turn.
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
	// AutoModeUnchecked is set when auto mode refused the call without
	// judging it (SDK 0.3.337 declares it; CLI 2.1.337 was seen to say
	// so in the result's Errors instead, which ErrAutoModeUnchecked
	// reads too).
	AutoModeUnchecked UncheckedReason `json:"auto_mode_unchecked,omitempty"`
}

// UncheckedReason says why auto mode refused a call without judging
// it. New values are additive.
type UncheckedReason string

// The reasons CLI 2.1.337 knows.
const (
	// UncheckedNoCheckInSession: the safety check does not run for this
	// session, as when ANTHROPIC_BASE_URL names a gateway that does not
	// pass it through. Every call that needs it is refused.
	UncheckedNoCheckInSession UncheckedReason = "no_check_in_session"
	// UncheckedNoVerdict: the check gave no verdict on this call, as in
	// an outage.
	UncheckedNoVerdict UncheckedReason = "no_verdict"
)

// uncheckedTag ends the CLI's words in Errors for a turn whose calls
// auto mode could not check (2.1.337).
const uncheckedTag = "[auto_mode_unchecked]"

// Err returns a *ResultError when the turn failed (IsError), else nil.
// From CLI 2.1.337 a turn that ran to its end is IsError too when auto
// mode refused calls it could not check: its error matches
// ErrAutoModeUnchecked, and Result stays the final text.
func (r *ResultMessage) Err() error {
	if !r.IsError {
		return nil
	}
	e := &ResultError{
		Subtype: r.Subtype, TerminalReason: r.TerminalReason, APIErrorStatus: r.APIErrorStatus,
		Result: r.Result, Errors: r.Errors, SessionID: r.SessionID,
	}
	e.unchecked = slices.ContainsFunc(r.PermissionDenials, func(d PermissionDenial) bool { return d.AutoModeUnchecked != "" })
	if e.unchecked || e.Is(ErrAutoModeUnchecked) {
		e.unchecked, e.Result = true, "" // the final text, not the error's
	}
	return e
}

func (*ResultMessage) isMessage() {}

// ErrAutoModeUnchecked matches (errors.Is) the *ResultError of a turn
// that ran to its end while auto mode refused tool calls it could not
// check, so they did not run (CLI 2.1.337 and later mark such a turn
// IsError; older CLIs end it as a success). Its Errors name the calls;
// another permission mode runs them.
var ErrAutoModeUnchecked = errors.New("claude: auto mode could not check some tool calls, so they did not run")

// ResultError is a turn that ended in error: an API failure (retries
// exhausted, 4xx, a stream error), an interrupt, the turn or budget
// limit, or calls auto mode could not check (ErrAutoModeUnchecked).
// It is yielded together with its *ResultMessage; the session lives on.
type ResultError struct {
	Subtype        ResultSubtype
	TerminalReason TerminalReason
	APIErrorStatus int      // HTTP status of an API failure, else 0
	Result         string   // the CLI's error text, for API failures
	Errors         []string // the CLI's diagnostics, for error subtypes
	SessionID      string

	unchecked bool // set by Err: a denial said auto_mode_unchecked, or Errors is tagged
}

// Is reports whether target is ErrAutoModeUnchecked and the turn's
// calls were refused unchecked.
func (e *ResultError) Is(target error) bool {
	if target != ErrAutoModeUnchecked {
		return false
	}
	return e.unchecked || slices.ContainsFunc(e.Errors, func(s string) bool { return strings.Contains(s, uncheckedTag) })
}

func (e *ResultError) Error() string {
	var b strings.Builder
	if e.Is(ErrAutoModeUnchecked) {
		if len(e.Errors) == 0 {
			return ErrAutoModeUnchecked.Error()
		}
		return "claude: " + strings.Join(e.Errors, "; ") // the CLI's words name the calls
	}
	b.WriteString("claude: turn failed")
	if e.Subtype != "" && e.Subtype != ResultSuccess {
		fmt.Fprintf(&b, " (%s)", e.Subtype)
	} else if e.TerminalReason != "" && e.TerminalReason != TerminalCompleted {
		fmt.Fprintf(&b, " (%s)", e.TerminalReason)
	}
	if e.APIErrorStatus != 0 {
		fmt.Fprintf(&b, ": API status %d", e.APIErrorStatus)
	}
	switch {
	case e.Result != "":
		fmt.Fprintf(&b, ": %s", e.Result)
	case len(e.Errors) > 0:
		fmt.Fprintf(&b, ": %s", strings.Join(e.Errors, "; "))
	}
	return b.String()
}

// Interrupted reports a turn ended by an interrupt (or a deny with
// interrupt).
func (e *ResultError) Interrupted() bool {
	return e.TerminalReason == TerminalAbortedStreaming || e.TerminalReason == TerminalAbortedTools
}
