package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// Backend is where sessions live: the server talks to sessions only
// through it. NewLocalBackend runs them in this process on a
// host.Manager; a cluster provides one that reaches sessions on other
// machines. Every method is called from many goroutines at once.
type Backend interface {
	// List returns the sessions, oldest first.
	List(ctx context.Context) ([]SessionInfo, error)
	// Start starts a session (new, resumed or forked). A backend whose
	// starts can wait for room calls req.OnQueued while it waits, and
	// fails with a *host.CommandError of code busy when no room came.
	Start(ctx context.Context, req *StartRequest) (SessionInfo, error)
	// Events yields the session's events after the given seq, with the
	// contract of host.Session.Events (a *host.ResyncError when they are
	// no longer kept). An unknown session yields an error matching
	// ErrNoSession.
	Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error]
	// Snapshot returns the session's snapshot.
	Snapshot(ctx context.Context, id string) (*host.Snapshot, error)
	// Do runs a command on the session: host.Session.Do where the
	// session runs, whatever the path (the local manager, or an agent
	// across the cluster). CommandResume is the backend's own: it brings
	// back a session whose CLI is gone (Result.Session).
	Do(ctx context.Context, id string, cmd *host.Command) (*Result, error)
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

	// With teams (Options.Team): who started the session (Subject and
	// display name) and what the person reading the list may do on it:
	// "owner", "collaborator" or "viewer".
	Person     string `json:"person,omitempty"`
	PersonName string `json:"person_name,omitempty"`
	Access     string `json:"access,omitempty"`

	// Worktree is the session's own git worktree, for a session started
	// with StartRequest.Worktree (zero, and left out of the JSON: none).
	// A value, so that SessionInfo stays comparable.
	Worktree host.WorktreeInfo `json:"worktree,omitzero"`
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
	// Worktree runs the session in a git worktree of its own, on a new
	// branch made from the one checked out in Cwd (host.WorktreeOptions):
	// Cwd must be in a git repository.
	Worktree bool `json:"worktree,omitempty"`

	// existing continues in the worktree of an ended session (resume).
	existing *host.WorktreeInfo

	// OnQueued, when set, is called while the start waits for room (a
	// full cluster), with the request's place in the queue (1 = next);
	// again when the place changes. Never called by a backend that does
	// not queue.
	OnQueued func(position int) `json:"-"`
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

// Result is the result of a command: host's (the uuid of a prompt sent,
// the step of a forced interrupt) and, for CommandResume, the session
// that continues the conversation. A backend may continue it under the
// same id with its events' seq going on (the cluster's failover) or as a
// new session that replaces the old one in the list (the local backend:
// a new CLI started with --resume); a client follows Session.ID.
type Result struct {
	host.CommandResult
	Session *SessionInfo `json:"session,omitempty"`
}

// Error codes of the protocol (docs/serve-protocol.md). Those of
// commands are host's, passed on as they are.
const (
	CodeBadRequest         = host.CodeBadRequest
	CodeUnknownType        = host.CodeUnknownType
	CodeUnsupportedVersion = "unsupported_version"
	CodeNoSession          = "no_session"
	CodeSessionClosed      = host.CodeSessionClosed
	CodeNoApproval         = host.CodeNoApproval
	CodeAlreadyAnswered    = host.CodeAlreadyAnswered
	CodeWithdrawn          = host.CodeWithdrawn
	CodeNotAQuestion       = host.CodeNotAQuestion
	CodeNotQueued          = host.CodeNotQueued
	CodeForbidden          = host.CodeForbidden
	CodeBusy               = host.CodeBusy
	CodeTimeout            = host.CodeTimeout
	CodeUnavailable        = "unavailable"
	CodeInternal           = host.CodeInternal
	CodeUnauthorized       = "unauthorized"
	CodeForbiddenHost      = "forbidden_host"
	CodeForbiddenOrigin    = "forbidden_origin"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeTooLarge           = "too_large"
	CodeRateLimited        = "rate_limited"
	// CodeWaitingForAgent: the session has no agent right now (tether
	// serve --nats: its agent drained with no other agent left, or is
	// gone); it has not ended, and goes on once an agent takes it.
	CodeWaitingForAgent = "waiting_for_agent"
	// CodeUnsupported: a process of another release on the way (tether
	// serve --nats) cannot do what was asked: the message says which.
	CodeUnsupported = "unsupported"
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
	// ErrUnavailable: what the backend depends on is out of reach (the
	// cluster's NATS); the request changed nothing.
	ErrUnavailable = errors.New("serve: backend unavailable")
)

// protoError maps err to the protocol's error: serve's sentinels, then
// host's codes (which commands' errors carry, from wherever they ran).
func protoError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var code string
	switch {
	case errors.Is(err, ErrNoSession):
		code = CodeNoSession
	case errors.Is(err, ErrSessionClosed):
		code = CodeSessionClosed
	case errors.Is(err, ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, ErrBadRequest):
		code = CodeBadRequest
	case errors.Is(err, ErrUnavailable):
		code = CodeUnavailable
	case errors.Is(err, team.ErrUnauthenticated):
		code = CodeUnauthenticated
	default:
		code = host.ErrorCode(err)
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
