package cluster

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// BackendOptions configures NewBackend. A nil *BackendOptions means
// defaults.
type BackendOptions struct {
	// DefaultCwd is the working directory of a start request without one
	// ("" = the agents' own default).
	DefaultCwd string
	// AllowBypassPermissions lets clients choose the bypassPermissions
	// mode. Off by default: a browser cannot turn approvals off.
	AllowBypassPermissions bool
}

// Backend is the cluster as a serve.Backend: `tether serve --nats` is the
// browser UI and protocol of `tether serve` over every agent's sessions.
// Errors map onto the protocol's codes (an approval answered twice, from
// two servers at once, is already_answered for the second).
type Backend struct {
	c    *Client
	opts BackendOptions
}

var _ serve.Backend = (*Backend)(nil)

// NewBackend returns c as a serve.Backend. The caller closes c.
func NewBackend(c *Client, opts *BackendOptions) *Backend {
	b := &Backend{c: c}
	if opts != nil {
		b.opts = *opts
	}
	return b
}

// List implements serve.Backend.
func (b *Backend) List(ctx context.Context) ([]serve.SessionInfo, error) {
	list, err := b.c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]serve.SessionInfo, 0, len(list))
	for _, s := range list {
		if !s.Closed { // as in tether serve: a closed session leaves the list
			out = append(out, serveInfo(s))
		}
	}
	return out, nil
}

func serveInfo(s SessionInfo) serve.SessionInfo {
	return serve.SessionInfo{
		ID: s.ID, SessionID: s.CLISession, Title: s.Title, LastPrompt: s.LastPrompt, Cwd: s.Cwd, Model: s.Model,
		State: s.State, LastEvent: s.LastEvent, Created: s.Created, Seq: s.Seq, CostUSD: s.CostUSD,
		Owner: s.Agent, Ended: s.Ended,
	}
}

var permissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "auto", "bypassPermissions"}

func (b *Backend) checkMode(mode string) error {
	if mode == "" {
		return nil
	}
	if !slices.Contains(permissionModes, mode) {
		return &serve.Error{Code: serve.CodeBadRequest, Message: fmt.Sprintf("unknown permission mode %q", mode)}
	}
	if mode == "bypassPermissions" && !b.opts.AllowBypassPermissions {
		return &serve.Error{Code: serve.CodeForbidden, Message: "bypassPermissions is not allowed by this server"}
	}
	return nil
}

// Start implements serve.Backend: the request waits for an agent with
// room.
func (b *Backend) Start(ctx context.Context, req *serve.StartRequest) (serve.SessionInfo, error) {
	if req == nil {
		req = &serve.StartRequest{}
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = b.opts.DefaultCwd
	}
	if cwd != "" && !filepath.IsAbs(cwd) {
		return serve.SessionInfo{}, &serve.Error{Code: serve.CodeBadRequest, Message: "cwd must be an absolute path"}
	}
	if err := b.checkMode(req.PermissionMode); err != nil {
		return serve.SessionInfo{}, err
	}
	if req.Fork && req.Resume == "" {
		return serve.SessionInfo{}, &serve.Error{Code: serve.CodeBadRequest, Message: "fork needs resume"}
	}
	info, err := b.c.Start(ctx, &StartOptions{Cwd: cwd, Model: req.Model, PermissionMode: req.PermissionMode,
		AppendSystemPrompt: req.AppendSystemPrompt, Resume: req.Resume, Fork: req.Fork})
	if err != nil {
		return serve.SessionInfo{}, serveErr(err)
	}
	return serveInfo(info), nil
}

// Events implements serve.Backend.
func (b *Backend) Events(ctx context.Context, id string, after uint64) iter.Seq2[host.Event, error] {
	return func(yield func(host.Event, error) bool) {
		for ev, err := range b.c.Events(ctx, id, after) {
			if !yield(ev, serveErr(err)) {
				return
			}
		}
	}
}

// Snapshot implements serve.Backend.
func (b *Backend) Snapshot(ctx context.Context, id string) (*host.Snapshot, error) {
	snap, err := b.c.Snapshot(ctx, id)
	return snap, serveErr(err)
}

// Do implements serve.Backend.
func (b *Backend) Do(ctx context.Context, id string, cmd *serve.Command) (any, error) {
	c := &Command{}
	switch cmd.Type {
	case "send":
		c.Op, c.Prompt = OpSend, cmd.Text
		for _, im := range cmd.Images {
			c.Images = append(c.Images, Image{MediaType: im.MediaType, Data: im.Data})
		}
	case "interrupt":
		c.Op = OpInterrupt
	case "force_interrupt":
		c.Op, c.Interrupt = OpInterrupt, true
	case "answer":
		c.Op, c.Approval, c.Answers, c.Message = OpRespond, cmd.Approval, cmd.Answers, cmd.Message
		switch {
		case cmd.Answers != nil:
		case cmd.Behavior == "allow" && cmd.Always:
			c.Behavior = "allow_always"
		case cmd.Behavior == "allow":
			c.Behavior = "allow"
		case cmd.Behavior == "deny":
			c.Behavior, c.Interrupt = "deny", cmd.Interrupt
		default:
			return nil, &serve.Error{Code: serve.CodeBadRequest, Message: `answer needs behavior "allow" or "deny", or answers`}
		}
	case "cancel":
		c.Op, c.UUID = OpCancel, cmd.UUID
	case "set_model":
		c.Op, c.Model = OpSetModel, cmd.Model
	case "set_mode":
		if err := b.checkMode(cmd.Mode); err != nil {
			return nil, err
		}
		c.Op, c.Mode = OpSetMode, cmd.Mode
	case "close":
		c.Op = OpClose
	case "resume":
		// Failover: another agent restores the session under the same
		// id, its events' seq going on.
		info, err := b.c.Resume(ctx, id)
		if err != nil {
			if errors.Is(err, ErrOwned) {
				return nil, &serve.Error{Code: serve.CodeBadRequest, Message: "the session's agent is alive; only a disconnected session can be resumed"}
			}
			return nil, serveErr(err)
		}
		return &serve.ResumeResult{Session: serveInfo(info)}, nil
	case "":
		return nil, &serve.Error{Code: serve.CodeBadRequest, Message: "command.type is required"}
	default:
		return nil, &serve.Error{Code: serve.CodeUnknownType, Message: fmt.Sprintf("unknown command %q", cmd.Type)}
	}
	out, err := b.c.Command(ctx, id, c)
	if err != nil {
		return nil, serveErr(err)
	}
	switch cmd.Type {
	case "send":
		return map[string]string{"uuid": out}, nil
	case "force_interrupt":
		return map[string]string{"step": out}, nil
	}
	return nil, nil
}

// DiskSessions implements serve.Backend: the conversations the cluster
// can resume in cwd are those of its sessions that were closed, ended or
// whose agent is gone, from their mirrored transcripts (the agents' own
// disks are not listed).
func (b *Backend) DiskSessions(ctx context.Context, cwd string) ([]serve.DiskSession, error) {
	if cwd == "" {
		cwd = b.opts.DefaultCwd
	}
	list, err := b.c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []serve.DiskSession
	for _, s := range slices.Backward(list) {
		if s.CLISession == "" || (cwd != "" && s.Cwd != cwd) || !(s.Ended || s.State == host.StateDisconnected.String()) {
			continue
		}
		out = append(out, serve.DiskSession{SessionID: s.CLISession, Title: s.Title, LastPrompt: s.LastPrompt,
			Modified: s.Updated, Created: s.Created, Cwd: s.Cwd})
	}
	return out, nil
}

// serveErr maps the cluster's errors onto serve's (host's sentinels pass
// as they are: the CommandError unwraps to them).
func serveErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoSession):
		return fmt.Errorf("%w: %w", serve.ErrNoSession, err)
	case errors.Is(err, ErrDisconnected):
		return fmt.Errorf("%w: %w", serve.ErrSessionClosed, err)
	case errors.Is(err, ErrMalformed):
		return fmt.Errorf("%w: %w", serve.ErrBadRequest, err)
	case errors.Is(err, ErrTooLarge):
		return &serve.Error{Code: serve.CodeTooLarge, Message: err.Error()}
	}
	return err
}
