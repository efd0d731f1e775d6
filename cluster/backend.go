package cluster

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"

	"github.com/tetherhq/tether/host"
)

// BackendOptions configures NewBackend. A nil *BackendOptions means
// defaults.
type BackendOptions struct {
	// DefaultCwd is the working directory of a start request without one
	// ("" = the agents' own default).
	DefaultCwd string
	// DefaultModel and DefaultPermissionMode are those of a start
	// request that names none ("" = the agents' own defaults).
	DefaultModel          string
	DefaultPermissionMode string
	// AllowBypassPermissions lets clients choose the bypassPermissions
	// mode. Off by default: a browser cannot turn approvals off. (The
	// agents' own policy applies too: see AgentOptions.)
	AllowBypassPermissions bool
}

// Backend is the cluster as a host.Backend, the session service that
// `tether serve --nats` serves: the browser UI and protocol of `tether
// serve` over every agent's sessions.
// Errors map onto the protocol's codes (an approval answered twice, from
// two servers at once, is already_answered for the second).
type Backend struct {
	c    *Client
	opts BackendOptions
}

var _ host.Backend = (*Backend)(nil)

// NewBackend returns c as a host.Backend. The caller closes c.
func NewBackend(c *Client, opts *BackendOptions) *Backend {
	b := &Backend{c: c}
	if opts != nil {
		b.opts = *opts
	}
	return b
}

// List implements host.Backend.
func (b *Backend) List(ctx context.Context) ([]host.SessionInfo, error) {
	list, err := b.c.Sessions(ctx)
	if err != nil {
		return nil, serveErr(err)
	}
	out := make([]host.SessionInfo, 0, len(list))
	for _, s := range list {
		if !s.Closed { // as in tether serve: a closed session leaves the list
			out = append(out, serveInfo(s))
		}
	}
	return out, nil
}

func serveInfo(s SessionInfo) host.SessionInfo {
	si := host.SessionInfo{
		ID: s.ID, SessionID: s.CLISession, Title: s.Title, LastPrompt: s.LastPrompt, Cwd: s.Cwd, Model: s.Model,
		State: s.State, LastEvent: s.LastEvent, Created: s.Created, Seq: s.Seq, CostUSD: s.CostUSD,
		Owner: s.Agent, Ended: s.Ended, Tasks: s.Tasks,
	}
	if s.Worktree != nil {
		si.Worktree = *s.Worktree
	}
	return si
}

func (b *Backend) checkMode(mode string) error {
	return host.CheckPermissionMode(mode, b.opts.AllowBypassPermissions)
}

// Start implements host.Backend: the request waits for an agent with
// room.
func (b *Backend) Start(ctx context.Context, req *host.StartRequest) (host.SessionInfo, error) {
	if req == nil {
		req = &host.StartRequest{}
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = b.opts.DefaultCwd
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		return host.SessionInfo{}, &host.CommandError{Code: host.CodeBadRequest, Message: "cwd must be an absolute path"}
	}
	model := cmpOr(req.Model, b.opts.DefaultModel)
	mode := cmpOr(req.PermissionMode, b.opts.DefaultPermissionMode)
	if err := b.checkMode(mode); err != nil {
		return host.SessionInfo{}, err
	}
	if req.Fork && req.Resume == "" {
		return host.SessionInfo{}, &host.CommandError{Code: host.CodeBadRequest, Message: "fork needs resume"}
	}
	if req.Worktree && req.Resume != "" {
		// The CLI finds a conversation by the folder it ran in: a new
		// worktree is another folder (as on a lone tether serve).
		return host.SessionInfo{}, &host.CommandError{Code: host.CodeBadRequest,
			Message: "a conversation resumed continues in the folder it ran in, not in a new worktree; start a new session in a worktree instead"}
	}
	if req.Worktree && cwd == "" {
		return host.SessionInfo{}, &host.CommandError{Code: host.CodeBadRequest, Message: "a session in a worktree needs cwd: a folder in a git repository"}
	}
	info, err := b.c.Start(ctx, &StartOptions{Cwd: cwd, Model: model, PermissionMode: mode,
		AppendSystemPrompt: req.AppendSystemPrompt, Resume: req.Resume, Fork: req.Fork, Worktree: req.Worktree,
		OnQueued: req.OnQueued})
	if err != nil {
		return host.SessionInfo{}, serveErr(err)
	}
	return serveInfo(info), nil
}

// Events implements host.Backend.
func (b *Backend) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		for ev, err := range b.c.Events(ctx, id, after) {
			if !yield(ev, serveErr(err)) {
				return
			}
		}
	}
}

// Snapshot implements host.Backend.
func (b *Backend) Snapshot(ctx context.Context, id string) (*host.Snapshot, error) {
	snap, err := b.c.Snapshot(ctx, id)
	return snap, serveErr(err)
}

// Do implements host.Backend: the command goes unchanged to the
// session's agent, which runs it with host.Session.Do; resume is a
// failover (Client.Resume).
func (b *Backend) Do(ctx context.Context, id string, cmd *host.Command) (*host.BackendResult, error) {
	if err := cmd.Validate(b.policy()); err != nil {
		return nil, err
	}
	if cmd.Type == host.CommandResume {
		// Failover: another agent restores the session under the same
		// id, its events' seq going on.
		info, err := b.c.resume(ctx, id, cmd.OnQueued)
		if err != nil {
			if errors.Is(err, ErrOwned) {
				return nil, &host.CommandError{Code: host.CodeBadRequest, Message: "the session's agent is alive; only a disconnected session can be resumed"}
			}
			return nil, serveErr(err)
		}
		si := serveInfo(info)
		return &host.BackendResult{Session: &si}, nil
	}
	res, err := b.c.Command(ctx, id, cmd)
	if err != nil {
		return nil, serveErr(err)
	}
	return &host.BackendResult{CommandResult: *res}, nil
}

// policy is what this server lets commands do, checked before they go
// to an agent (whose sessions check their own again).
func (b *Backend) policy() *host.CommandPolicy {
	return &host.CommandPolicy{AllowBypassPermissions: b.opts.AllowBypassPermissions, MaxImageBytes: MaxCommandSize}
}

// DefaultCwd returns the working directory of a start request without
// one.
func (b *Backend) DefaultCwd() string { return b.opts.DefaultCwd }

// Ready implements serve's Readier: NATS is reachable, the cluster's
// streams and buckets are there, and at least one live agent has room.
func (b *Backend) Ready(ctx context.Context) error { return b.c.Ready(ctx) }

// DiskSessions implements host.Backend: the conversations the cluster
// can resume in cwd are those of its sessions that were closed, ended or
// whose agent is gone, from their mirrored transcripts (the agents' own
// disks are not listed).
func (b *Backend) DiskSessions(ctx context.Context, cwd string) ([]host.DiskSession, error) {
	if cwd == "" {
		cwd = b.opts.DefaultCwd
	}
	list, err := b.c.Sessions(ctx)
	if err != nil {
		return nil, serveErr(err)
	}
	var out []host.DiskSession
	for _, s := range slices.Backward(list) {
		if s.CLISession == "" || (cwd != "" && s.Cwd != cwd) || !(s.Ended || s.State == host.StateDisconnected.String()) {
			continue
		}
		out = append(out, host.DiskSession{SessionID: s.CLISession, Title: s.Title, LastPrompt: s.LastPrompt,
			Modified: s.Updated, Created: s.Created, Cwd: s.Cwd})
	}
	return out, nil
}

// serveErr maps the cluster's errors onto the session service's (host's
// sentinels and codes; host's own pass as they are: the CommandError
// unwraps to them).
func serveErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoSession):
		// host.ErrNoSession, which serve's is too; its message for people
		// (as for the codes below), without the package's prefix.
		return &host.CommandError{Code: host.CodeNoSession, Message: commandMessage(err), Err: err}
	case errors.Is(err, ErrDisconnected):
		// Not ended: it goes on once an agent takes it (a drain's
		// handover, or a resume).
		return &host.CommandError{Code: host.CodeWaitingForAgent, Message: commandMessage(err), Err: err}
	case errors.Is(err, ErrUnsupported):
		return &host.CommandError{Code: host.CodeUnsupported, Message: err.Error(), Err: err}
	case errors.Is(err, ErrMalformed):
		return fmt.Errorf("%w: %w", host.ErrBadCommand, err)
	case errors.Is(err, ErrTooLarge):
		return &host.CommandError{Code: host.CodeTooLarge, Message: err.Error(), Err: err}
	case errors.Is(err, ErrUnavailable):
		return fmt.Errorf("%w: %w", host.ErrUnavailable, err)
	}
	return err
}

// commandMessage is a *CommandError's message without the package
// prefix, for people.
func commandMessage(err error) string {
	var ce *CommandError
	if errors.As(err, &ce) && ce.Message != "" {
		return ce.Message
	}
	return err.Error()
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
