package team

import (
	"context"
	"time"
)

// Recorder takes audit events: *Audit, or anything that wants them. A
// Recorder must not block for long; its error is logged, never shown to
// the person whose action it records.
type Recorder interface {
	Record(ctx context.Context, ev *AuditEvent) error
}

// AuditEvent is one line of the audit log: who did what, where, with
// what outcome.
type AuditEvent struct {
	// Seq is the event's position in the log (set by the log).
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time"`
	// Actor is who acted (Subject; "" for the system), ActorName their
	// display name at the time.
	Actor     string `json:"actor,omitempty"`
	ActorName string `json:"actor_name,omitempty"`
	Addr      string `json:"addr,omitempty"` // the client's address
	// Action is what happened: one of the Action constants.
	Action  string `json:"action"`
	Session string `json:"session,omitempty"` // the session's id
	// Outcome is "ok" or "refused".
	Outcome string `json:"outcome"`
	// Tool, InputDigest: an approval's tool and the SHA-256 of its input
	// (hex), never the input itself.
	Tool        string `json:"tool,omitempty"`
	InputDigest string `json:"input_digest,omitempty"`
	// Rule is the rule applied: the policy rule that refused, or for an
	// approval "allow", "allow_always", "deny" or "answer" (the values of
	// a question or of an MCP server's form).
	Rule string `json:"rule,omitempty"`
	// Detail is free text: a mode or model chosen, a share's grant, a
	// refusal's message, a prompt's length ("chars=123"), and the prompt
	// itself only when the configuration asks for content.
	Detail string `json:"detail,omitempty"`
}

// Audit actions.
const (
	ActionSignIn       = "sign_in"
	ActionSignOut      = "sign_out"
	ActionSignInFailed = "sign_in_refused"
	ActionStart        = "session_start"
	ActionShare        = "session_share"
	ActionClose        = "session_close"
	ActionPrompt       = "prompt"
	ActionApproval     = "approval"
	ActionInterrupt    = "interrupt"
	ActionMode         = "mode_change"
	ActionModel        = "model_change"
	ActionBypass       = "bypass_permissions"
	ActionRefused      = "refused"      // any refused command or read, Rule says which
	ActionRevert       = "files_revert" // files put back (revert_changes); Detail lists them
)

// Outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeRefused = "refused"
)
