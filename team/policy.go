package team

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"path/filepath"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// SessionPolicy is a team's rules for the CLI of a session a person owns,
// in one place, for every way a session gets a CLI: a start, a resume, a
// failover onto another agent, a wake from sleep. tether serve's local
// backend and a cluster's agent both ask it, so that a team's sessions
// run alike wherever they run:
//
//   - the owner's host options (SessionAuthorizer.SessionOptions): every
//     command checked as who sends it, the owner's denied tools, each
//     turn's cost on the owner's spend;
//   - with Isolation, the CLI confined (Isolator.Transport) with its
//     working directory its one writable folder, in the owner's private
//     HOME and /tmp, and its config folder (CLAUDE_CONFIG_DIR) in that
//     HOME (ConfigDir). The working directory, not the owner's whole
//     workspace (their first cwd root): a root may be shared by the
//     team (cwd_roots: [/srv/work], a folder each by convention), and a
//     session must not get everyone's folders because its own lies
//     under it. A session tether serve starts without a working
//     directory starts in the workspace, and so gets all of it;
//   - at each wake, what was checked and set up at the start checked and
//     set up again with the policy of now (Wake).
//
// The start itself (Authorizer.Start, with the person's running sessions
// counted as the caller counts them) and the access of whoever asks for a
// resume or failover are the caller's to check first. Its methods are
// safe for concurrent use when its fields are.
type SessionPolicy struct {
	// Authorizer gives a session its owner's host options and checks a
	// wake as a start. Required; *Authorizer is one.
	Authorizer SessionAuthorizer
	// Config resolves the owner again at a wake. Required; *Config is
	// one.
	Config SessionConfig
	// Isolation, when set, confines each session's CLI (*Isolation).
	// nil: the CLIs run as the host process does.
	Isolation Isolator
}

// SessionAuthorizer is what a SessionPolicy asks of the authorization
// point (*Authorizer).
type SessionAuthorizer interface {
	// Start checks a start (here: a wake) against the policy of the
	// person in ctx.
	Start(ctx context.Context, c *StartCheck) error
	// SessionOptions returns a copy of o for a session the person in ctx
	// owns.
	SessionOptions(ctx context.Context, o *host.Options) *host.Options
}

// wakeRecorder is what a SessionPolicy's Authorizer may do besides:
// record who woke a session (*Authorizer: Woke). Not part of
// SessionAuthorizer, which others implement.
type wakeRecorder interface {
	recordWake(ctx context.Context, s *host.Session)
}

// SessionConfig is what a SessionPolicy asks of the team's configuration
// (*Config).
type SessionConfig interface {
	// Resolve returns the person with their role of now, or an error
	// matching ErrUnauthenticated when they are no longer admitted.
	Resolve(id *Identity) (*Identity, error)
}

// Isolator confines a person's sessions (*Isolation).
type Isolator interface {
	// Transport returns the transport that starts the CLI of id's
	// session confined, workspace its one writable folder, through base.
	Transport(id *Identity, workspace string, base claude.Transport) claude.Transport
	// Home is the HOME of id's confined CLIs ("" = unknown: the CLI's
	// config folder is then left as the environment says).
	Home(id *Identity) string
}

// SessionPolicy returns the policy of the sessions this Authorizer's
// people own, under its configuration, confined by iso (nil: not
// confined).
func (a *Authorizer) SessionPolicy(iso Isolator) *SessionPolicy {
	return &SessionPolicy{Authorizer: a, Config: a.cfg, Isolation: iso}
}

// Options returns a copy of o (nil = defaults) for a session owner owns,
// its CLI working in cwd (absolute; "" keeps o's): the Authorizer's
// options for the owner; with Isolation, the CLI confined to cwd and its
// config folder set to ConfigDir(owner);
// and an OnWake that runs Wake (after o's own OnWake, if any). A start, a
// resume and a failover all take their options here, so that a session
// keeps running as its owner's whoever asks for it. A missing owner is an
// error matching ErrUnauthenticated.
func (p *SessionPolicy) Options(ctx context.Context, owner *Identity, cwd string, o *host.Options) (*host.Options, error) {
	return p.OptionsWithin(ctx, owner, cwd, "", o)
}

// OptionsWithin is Options for a CLI that must write beyond its working
// directory: with Isolation it is confined to writable (absolute; "" =
// cwd) instead. A session in a git worktree needs the whole repository,
// its worktree and the git directory the worktree's commits go to; at a
// wake the session's worktree (host.Session.Worktree) says the same again.
func (p *SessionPolicy) OptionsWithin(ctx context.Context, owner *Identity, cwd, writable string, o *host.Options) (*host.Options, error) {
	if owner == nil || owner.Subject == "" {
		return nil, fmt.Errorf("%w: a team session needs its owner", ErrUnauthenticated)
	}
	var tmpl host.Options
	if o != nil {
		tmpl = *o
	}
	var tcli claude.Options
	if tmpl.CLI != nil {
		tcli = *tmpl.CLI
	}
	if cwd != "" {
		tcli.Cwd = cwd
	}
	tmpl.CLI = &tcli
	out := p.Authorizer.SessionOptions(NewContext(ctx, owner), &tmpl)
	cli := *out.CLI
	p.confine(owner, tmpl.CLI.Transport, &cli, writable)
	out.CLI = &cli
	prev := tmpl.OnWake
	tmpl.OnWake = nil
	out.OnWake = func(ctx context.Context, s *host.Session, cli *claude.Options) error {
		if prev != nil {
			if err := prev(ctx, s, cli); err != nil {
				return err
			}
		}
		dir := ""
		if s == nil {
			// no session to ask (a caller running the hook by hand)
		} else if w := s.Worktree(); w != nil {
			dir = w.Repo // the worktree and the git directory, as at the start
		}
		if err := p.wake(ctx, owner, &tmpl, cli, dir); err != nil {
			return err
		}
		if r, ok := p.Authorizer.(wakeRecorder); ok && s != nil {
			r.recordWake(ctx, s)
		}
		return nil
	}
	return out, nil
}

// confine sets cli up for owner's isolation, if any: the transport
// through base, writable (or else cli.Cwd) the one folder it may write,
// and the config folder in the owner's confined HOME.
func (p *SessionPolicy) confine(owner *Identity, base claude.Transport, cli *claude.Options, writable string) {
	if p.Isolation == nil {
		return
	}
	cli.Transport = p.Isolation.Transport(owner, cmp.Or(writable, cli.Cwd), base)
	if d := p.ConfigDir(owner); d != "" {
		cli.Env = maps.Clone(cli.Env)
		if cli.Env == nil {
			cli.Env = map[string]string{}
		}
		cli.Env[claude.EnvConfigDir] = d
	}
}

// Wake checks and sets up the wake of owner's sleeping session as Options
// set up its start, with the policy of now: the owner resolved again
// (still admitted; their role of now), Authorizer.Start with the CLI's
// working directory, model and permission mode (the session itself not
// counted again: Running 0), the owner's denied tools of now, and with
// Isolation the CLI confined again with its config folder in the owner's
// HOME. tmpl is the session's options before the team's (as Options got
// them); cli is what the CLI wakes with, changed in place
// (host.Options.OnWake). An error refuses the wake.
func (p *SessionPolicy) Wake(ctx context.Context, owner *Identity, tmpl *host.Options, cli *claude.Options) error {
	return p.wake(ctx, owner, tmpl, cli, "")
}

// wake is Wake, confining to writable ("" = cli.Cwd) as OptionsWithin.
func (p *SessionPolicy) wake(ctx context.Context, owner *Identity, tmpl *host.Options, cli *claude.Options, writable string) error {
	id, err := p.Config.Resolve(owner)
	if err != nil {
		return fmt.Errorf("the session's owner: %w", err)
	}
	ctx = NewContext(ctx, id)
	if err := p.Authorizer.Start(ctx, &StartCheck{Cwd: cli.Cwd, Model: cli.Model, Mode: string(cli.PermissionMode)}); err != nil {
		return err
	}
	var base claude.Transport
	if tmpl != nil && tmpl.CLI != nil {
		base = tmpl.CLI.Transport
	}
	now := p.Authorizer.SessionOptions(ctx, tmpl)
	cli.DisallowedTools = now.CLI.DisallowedTools
	p.confine(id, base, cli, writable)
	return nil
}

// ConfigDir is the CLI's config folder (CLAUDE_CONFIG_DIR) of owner's
// confined sessions, where their session files are to be found:
// Isolation.Home(owner)/.claude. It is set explicitly, not left to the
// sandbox's HOME, because the CLI inherits the host process's environment
// and a CLAUDE_CONFIG_DIR there (the operator's, the template's) would
// otherwise be bound read-write into every person's sandbox, with the
// host's credentials and everyone's transcripts. "" without Isolation
// (or an Isolator that names no Home): the CLI's config folder is the
// host's.
func (p *SessionPolicy) ConfigDir(owner *Identity) string {
	if p.Isolation == nil || owner == nil {
		return ""
	}
	h := p.Isolation.Home(owner)
	if h == "" {
		return ""
	}
	return filepath.Join(h, ".claude")
}
