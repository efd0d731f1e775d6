package host

import (
	"context"
	"iter"
	"time"
)

// Backend is the session service: where sessions live, as the front ends
// (tether serve's browser protocol) see them. serve's local backend runs
// them in this process on a Manager; the cluster's reaches sessions on
// agents across NATS. It is declared here, below both, so that serve and
// cluster are peers: each speaks this interface and its types, and its
// errors are this package's (ErrNoSession, ErrSessionClosed, ErrForbidden,
// ErrBadCommand, a *CommandError with a code). Every method is called from
// many goroutines at once.
type Backend interface {
	// List returns the sessions, oldest first.
	List(ctx context.Context) ([]SessionInfo, error)
	// Start starts a session (new, resumed or forked). A backend whose
	// starts can wait for room calls req.OnQueued while it waits, and
	// fails with a *CommandError of code busy when no room came.
	Start(ctx context.Context, req *StartRequest) (SessionInfo, error)
	// Events yields the session's events after the given seq, with the
	// contract of Session.Events (a *ResyncError when they are
	// no longer kept). An unknown session yields an error matching
	// ErrNoSession.
	Events(ctx context.Context, id string, after uint64) iter.Seq2[Event, error]
	// Snapshot returns the session's snapshot.
	Snapshot(ctx context.Context, id string) (*Snapshot, error)
	// Do runs a command on the session: Session.Do where the
	// session runs, whatever the path (the local manager, or an agent
	// across the cluster). CommandResume is the backend's own: it brings
	// back a session whose CLI is gone (BackendResult.Session).
	Do(ctx context.Context, id string, cmd *Command) (*BackendResult, error)
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
	// Tasks is how many background tasks the session's CLI runs
	// (Snapshot.Tasks): an agent or a command that outlives the turn that
	// started it, so that an idle session can still be at work. Watchers
	// (TaskInfo.Ambient) are no work and not counted (WorkingTasks).
	Tasks int `json:"tasks,omitempty"`

	// With teams (tether serve's Options.Team): who started the session (Subject and
	// display name) and what the person reading the list may do on it:
	// "owner", "collaborator" or "viewer".
	Person     string `json:"person,omitempty"`
	PersonName string `json:"person_name,omitempty"`
	Access     string `json:"access,omitempty"`

	// Worktree is the session's own git worktree, for a session started
	// with StartRequest.Worktree (zero, and left out of the JSON: none).
	// A value, so that SessionInfo stays comparable.
	Worktree WorktreeInfo `json:"worktree,omitzero"`
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
	// branch made from the one checked out in Cwd (WorktreeOptions):
	// Cwd must be in a git repository.
	Worktree bool `json:"worktree,omitempty"`

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

// BackendResult is the result of Backend.Do: the command's (the uuid of
// a prompt sent, the step of a forced interrupt) and, for CommandResume,
// the session that continues the conversation. A backend may continue it under the
// same id with its events' seq going on (the cluster's failover) or as a
// new session that replaces the old one in the list (the local backend:
// a new CLI started with --resume); a client follows Session.ID.
type BackendResult struct {
	CommandResult
	Session *SessionInfo `json:"session,omitempty"`
}

// Codes a Backend's errors carry beyond the commands' own (a
// *CommandError with one of them); front ends pass them on.
const (
	// CodeWaitingForAgent: the session has no agent right now (a
	// cluster: its agent drained with no other agent left, or is gone);
	// it has not ended, and goes on once an agent takes it.
	CodeWaitingForAgent = "waiting_for_agent"
	// CodeUnsupported: a process of another release on the way (a
	// cluster during a roll) cannot do what was asked: the message says
	// which.
	CodeUnsupported = "unsupported"
	// CodeTooLarge: the request is bigger than the backend takes.
	CodeTooLarge = "too_large"
)
