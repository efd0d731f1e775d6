package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/tetherhq/tether/host"
)

// Backend is where sessions live: the server talks to sessions only
// through it. NewLocalBackend runs them in this process on a
// host.Manager; a cluster provides one that reaches sessions on other
// machines. Every method is called from many goroutines at once.
type Backend interface {
	// List returns the sessions, oldest first.
	List(ctx context.Context) ([]SessionInfo, error)
	// Start starts a session (new, resumed or forked).
	Start(ctx context.Context, req *StartRequest) (SessionInfo, error)
	// Events yields the session's events after the given seq, with the
	// contract of host.Session.Events (a *host.ResyncError when they are
	// no longer kept). An unknown session yields an error matching
	// ErrNoSession.
	Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error]
	// Snapshot returns the session's snapshot.
	Snapshot(ctx context.Context, id string) (*host.Snapshot, error)
	// Do runs a command on the session. Its result (nil for none) is
	// JSON-encoded into the reply.
	Do(ctx context.Context, id string, cmd *Command) (any, error)
	// DiskSessions lists the CLI's conversations on disk for a working
	// directory, to resume or fork; most recently active first.
	DiskSessions(ctx context.Context, cwd string) ([]DiskSession, error)
}

// SessionInfo is one line of the sessions list.
type SessionInfo struct {
	ID             string    `json:"id"`
	SessionID      string    `json:"session_id,omitempty"`
	Title          string    `json:"title"`
	LastPrompt     string    `json:"last_prompt"`
	Cwd            string    `json:"cwd"`
	Model          string    `json:"model,omitempty"`
	PermissionMode string    `json:"permission_mode,omitempty"`
	State          string    `json:"state"`
	Tool           string    `json:"tool,omitempty"`
	LastEvent      time.Time `json:"last_event"`
	Created        time.Time `json:"created"`
	Seq            uint64    `json:"seq"`
	CostUSD        float64   `json:"cost_usd"`
	Owner          string    `json:"owner"`
	Ended          bool      `json:"ended"`
}

// StartRequest says what session to start.
type StartRequest struct {
	Cwd                string `json:"cwd"`
	Model              string `json:"model,omitempty"`
	PermissionMode     string `json:"permission_mode,omitempty"`
	AppendSystemPrompt string `json:"append_system_prompt,omitempty"`
	// Resume is a CLI session id to continue; with Fork, to copy into a
	// new session id.
	Resume string `json:"resume,omitempty"`
	Fork   bool   `json:"fork,omitempty"`
}

// DiskSession is a conversation the CLI keeps on disk.
type DiskSession struct {
	SessionID   string    `json:"session_id"`
	Title       string    `json:"title"`
	Summary     string    `json:"summary"`
	FirstPrompt string    `json:"first_prompt"`
	LastPrompt  string    `json:"last_prompt"`
	Modified    time.Time `json:"modified"`
	Created     time.Time `json:"created"`
	Cwd         string    `json:"cwd"`
	GitBranch   string    `json:"git_branch"`
	Size        int64     `json:"size"`
}

// Command is one command to a session (the "do" request's command).
type Command struct {
	// Type is send, interrupt, force_interrupt, answer, cancel,
	// set_model, set_mode, close or resume.
	//
	// resume brings back a session whose CLI is gone (state
	// disconnected): its result is a *ResumeResult. A session still
	// running is refused (bad_request).
	Type string `json:"type"`

	Text   string  `json:"text,omitempty"`   // send
	Images []Image `json:"images,omitempty"` // send
	UUID   string  `json:"uuid,omitempty"`   // cancel

	Approval  string            `json:"approval,omitempty"`  // answer
	Behavior  string            `json:"behavior,omitempty"`  // answer: allow or deny
	Always    bool              `json:"always,omitempty"`    // answer allow: apply the suggestions
	Message   string            `json:"message,omitempty"`   // answer deny
	Interrupt bool              `json:"interrupt,omitempty"` // answer deny: end the turn too
	Answers   map[string]string `json:"answers,omitempty"`   // answer a question

	Model string `json:"model,omitempty"` // set_model
	Mode  string `json:"mode,omitempty"`  // set_mode
}

// ResumeResult is the result of the resume command: the session that
// continues the conversation. A backend may continue it under the same
// id with its events' seq going on (the cluster's failover) or as a new
// session that replaces the old one in the list (the local backend: a
// new CLI started with --resume); a client follows Session.ID.
type ResumeResult struct {
	Session SessionInfo `json:"session"`
}

// Image is an image pasted into a prompt.
type Image struct {
	MediaType string `json:"media_type"`
	Data      string `json:"data"` // base64
}

// Error codes of the protocol (docs/serve-protocol.md).
const (
	CodeBadRequest         = "bad_request"
	CodeUnknownType        = "unknown_type"
	CodeUnsupportedVersion = "unsupported_version"
	CodeNoSession          = "no_session"
	CodeSessionClosed      = "session_closed"
	CodeNoApproval         = "no_approval"
	CodeAlreadyAnswered    = "already_answered"
	CodeWithdrawn          = "withdrawn"
	CodeNotAQuestion       = "not_a_question"
	CodeNotQueued          = "not_queued"
	CodeForbidden          = "forbidden"
	CodeBusy               = "busy"
	CodeInternal           = "internal"
	CodeUnauthorized       = "unauthorized"
	CodeForbiddenHost      = "forbidden_host"
	CodeForbiddenOrigin    = "forbidden_origin"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeTooLarge           = "too_large"
	CodeRateLimited        = "rate_limited"
)

// Error is a protocol error: a code from the table in the protocol
// document and a message for people. Backends return one (or an error
// wrapping a sentinel below) so that clients get the right code.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Sentinel errors a Backend may return (wrapped); the server maps them
// to codes. host's approval and delivery errors are mapped too.
var (
	ErrNoSession     = errors.New("serve: no such session")
	ErrSessionClosed = errors.New("serve: session closed")
	ErrForbidden     = errors.New("serve: forbidden by the server's policy")
	ErrBadRequest    = errors.New("serve: bad request")
)

// protoError maps err to the protocol's error.
func protoError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	code := CodeInternal
	switch {
	case errors.Is(err, ErrNoSession):
		code = CodeNoSession
	case errors.Is(err, ErrSessionClosed), errors.Is(err, host.ErrManagerClosed):
		code = CodeSessionClosed
	case errors.Is(err, ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, ErrBadRequest):
		code = CodeBadRequest
	case errors.Is(err, host.ErrNoApproval):
		code = CodeNoApproval
	case errors.Is(err, host.ErrAlreadyAnswered):
		code = CodeAlreadyAnswered
	case errors.Is(err, host.ErrWithdrawn):
		code = CodeWithdrawn
	case errors.Is(err, host.ErrNotAQuestion):
		code = CodeNotAQuestion
	case errors.Is(err, host.ErrNotQueued):
		code = CodeNotQueued
	}
	return &Error{Code: code, Message: err.Error()}
}

func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// rawJSON marshals v, which is known to marshal.
func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
}

// DefaultCwder is implemented by a Backend that starts sessions without a
// cwd in a default directory; the server names it to clients in the hello
// frame ("default_cwd"), so a UI can offer it rather than an empty field.
type DefaultCwder interface {
	DefaultCwd() string
}
