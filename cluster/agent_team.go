package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/worktree"
	"github.com/tetherhq/tether/team"
)

// An agent with a team (AgentOptions.Team) checks every request where the
// session runs, with the identity the front end sent beside it: the same
// checks as tether serve's, so that a request put on the bus by hand (a
// holder of NATS credentials, a front end with a bug) meets them too.
//   - commands: the identity goes into the ctx of host.Session.Do, whose
//     CommandPolicy.Authorize is the Authorizer's (set through
//     Authorizer.SessionOptions when the session starts): it checks the
//     person's access on the session's ACL, found under the cluster's id
//     (HostSessionID), and records what it lets through;
//   - starts: Authorizer.Start (working directory, mode, model, the
//     person's running sessions, budget); a failover needs the
//     collaborator's access to the session, a resumed conversation the
//     viewer's access to the session it comes from;
//   - snapshots: AccessView.
// A request without an identity is refused with host's forbidden code.
// Events and transcripts are read from JetStream directly: NATS
// permissions guard them (docs/cluster.md), the front end checks
// AccessView before it subscribes.

// Isolator confines a person's sessions (*team.Isolation): the CLI runs
// through the transport it returns, with workspace its one writable
// folder. It has team.Isolator's methods: the agent confines sessions
// through team.SessionPolicy, as tether serve's local backend does.
type Isolator interface {
	Transport(id *team.Identity, workspace string, base claude.Transport) claude.Transport
	// Home is the HOME of the person's confined CLIs: the agent points
	// the CLI's config folder there (Home/.claude), and mirrors and
	// restores the session's transcript there.
	Home(id *team.Identity) string
}

// withIdentity returns ctx carrying id (when there is one), or the
// refusal of an agent with a team when there is none.
func (a *Agent) withIdentity(ctx context.Context, id *team.Identity) (context.Context, error) {
	if id == nil {
		if a.opts.Team != nil {
			return ctx, errNoIdentity
		}
		return ctx, nil
	}
	return team.NewContext(ctx, id), nil
}

// forbidden is a refusal in host's forbidden code, keeping err's text
// and matching it (team.ErrPolicy, team.ErrBudget cross as "forbidden";
// the message says which rule).
func forbidden(err error) error {
	var ce *host.CommandError
	if errors.As(err, &ce) {
		return err
	}
	return &host.CommandError{Code: host.CodeForbidden, Message: err.Error(), Err: err}
}

// teamStart applies the team's rules to a new session's start request
// at this agent, before anything is written, and returns the session's
// options for the person (teamOptions). rec is the registry entry to be:
// its Cwd the session's working directory; Person is set. ctx carries
// the identity.
func (a *Agent) teamStart(ctx context.Context, req *startRequest, rec *SessionInfo, o *host.Options) (*host.Options, error) {
	id, _ := team.FromContext(ctx)
	if req.Resume != "" {
		// A conversation of the cluster's (its transcript restored from
		// the mirror): the person must at least see the session it comes
		// from. The agents' own disks are not a team's to resume.
		if req.Restore == "" {
			return nil, forbidden(fmt.Errorf("%w: with a team, only a conversation of the cluster's sessions can be resumed", team.ErrForbidden))
		}
		need := team.AccessView
		if req.Continue {
			// Resuming the session itself, in its place: as a
			// failover, it takes the right to work in it.
			need = team.AccessCollaborate
		}
		if err := a.needAccess(ctx, req.Restore, need); err != nil {
			return nil, err
		}
		if req.Cwd == "" { // restoreFrom takes the source's: check that one
			src, _, err := a.b.record(ctx, req.Restore)
			if err != nil {
				return nil, err
			}
			rec.Cwd = src.Cwd
			o.CLI.Cwd = src.Cwd
		}
	}
	if req.Continue && req.Restore != "" {
		// Resumed in its place, as a lone serve resumes it: like a
		// failover, it stays its owner's (their policy, workspace and
		// spend), whoever asked; the asker's access was checked above.
		owner, err := a.opts.Team.Owner(ctx, req.Restore)
		if errors.Is(err, team.ErrNoACL) {
			owner = id
		} else if err != nil {
			return nil, forbidden(err)
		}
		writable := ""
		if o.Worktree != nil && o.Worktree.Existing != nil {
			writable = o.Worktree.Existing.Repo // the worktree and its git directory
		}
		rec.Person = owner.Subject
		return a.teamOptions(ctx, owner, rec, writable, o)
	}
	n, err := a.running(ctx, id.Subject)
	if err != nil {
		return nil, err
	}
	check := &team.StartCheck{Cwd: rec.Cwd, Model: o.CLI.Model, Mode: string(o.CLI.PermissionMode), Running: n}
	if err := a.opts.Team.Start(ctx, check); err != nil {
		return nil, forbidden(err)
	}
	writable := ""
	if o.Worktree != nil {
		// The worktree goes under the repository's top folder, and the
		// CLI needs the repository's git directory: the whole
		// repository must be under the person's roots, not just cwd, and
		// a sandbox binds it all (as tether serve's local backend does).
		var top string
		if e := o.Worktree.Existing; e != nil {
			top = e.Repo // cwd is in the worktree, not the repository's checkout
		} else {
			_, t, _, err := worktree.Plan(ctx, rec.Cwd, nil)
			if err != nil {
				return nil, &host.CommandError{Code: host.CodeBadRequest, Message: "a session in a worktree: " + err.Error(), Err: host.ErrWorktree}
			}
			top = t
		}
		check.Cwd = top
		if err := a.opts.Team.Start(ctx, check); err != nil {
			var pe *team.PolicyError
			if errors.As(err, &pe) && pe.Rule == "cwd_roots" {
				cp := *pe
				cp.Message = fmt.Sprintf("a session in a worktree needs its whole repository under your roots: the repository of %s is %s, which is outside them", rec.Cwd, top)
				err = &cp
			}
			return nil, forbidden(err)
		}
		writable = top
	}
	rec.Person = id.Subject
	return a.teamOptions(ctx, id, rec, writable, o)
}

// sessionConfigDir is where the CLI of a session with options o keeps
// its session files: the config folder teamOptions chose for a confined
// CLI (team.SessionPolicy.ConfigDir), else the agent's.
func (a *Agent) sessionConfigDir(o *host.Options) string {
	if a.opts.Isolation != nil && a.opts.Team != nil && o != nil && o.CLI != nil {
		if d := o.CLI.Env[claude.EnvConfigDir]; d != "" {
			return d
		}
	}
	return a.configDir
}

// failoverOptions returns o for a session failing over to this agent:
// its owner's (Authorizer.Owner), whoever asked for the failover (a
// collaborator, an admin, the draining agent on the owner's behalf), so
// that it keeps the owner's denied tools, spend and workspace. A session
// without an ACL (one an admin may take over) runs as the asker's.
// Without a team it returns o.
func (a *Agent) failoverOptions(ctx context.Context, sessionID string, rec *SessionInfo, o *host.Options) (*host.Options, error) {
	if a.opts.Team == nil {
		return o, nil
	}
	owner, err := a.opts.Team.Owner(ctx, sessionID)
	if errors.Is(err, team.ErrNoACL) {
		owner, _ = team.FromContext(ctx)
	} else if err != nil {
		return nil, err
	}
	writable := ""
	if wt := liveWorktree(rec.Worktree); wt != nil {
		writable = wt.Repo // the worktree and its git directory
	}
	return a.teamOptions(ctx, owner, rec, writable, o)
}

// teamOptions returns o for a session owner owns, working in rec.Cwd,
// as the team's session policy has it (team.SessionPolicy, the one that
// tether serve's local backend applies too): the host policy that checks
// each command, the owner's denied tools, spend counted to the owner; the
// CLI confined to the owner's workspace by the isolation, in the owner's
// HOME and /tmp, its config folder in that HOME (the agent's own is not
// in the sandbox): sessionConfigDir; and at each wake the same again,
// with the policy of now.
func (a *Agent) teamOptions(ctx context.Context, owner *team.Identity, rec *SessionInfo, writable string, o *host.Options) (*host.Options, error) {
	o, err := a.opts.Team.SessionPolicy(a.opts.Isolation).OptionsWithin(ctx, owner, rec.Cwd, writable, o)
	if err != nil {
		return nil, forbidden(err)
	}
	return o, nil
}

// needAccess refuses unless the person in ctx has at least want on the
// session.
func (a *Agent) needAccess(ctx context.Context, session string, want team.Access) error {
	got, _, err := a.opts.Team.Access(ctx, session)
	if err != nil {
		return forbidden(err)
	}
	if got < want {
		return forbidden(fmt.Errorf("%w: %s access to session %s needed", team.ErrForbidden, want, session))
	}
	return nil
}

// running counts the person's sessions the registry shows running, on
// every agent: those they started (SessionInfo.Person), not ended, on a
// live agent or asleep (open, as tether serve counts them: a person
// does not get past max_sessions by letting sessions sleep). It is read,
// not reserved: two starts of one person racing on two agents may both
// pass the max_sessions check.
func (a *Agent) running(ctx context.Context, subject string) (int, error) {
	// Not the bucket's ListKeys: its watch may call the listing complete
	// early while other records are being written (as every running
	// session's are), leaving out keys that were there all along. The
	// stream's subjects are the exact set.
	es, err := a.b.entries(ctx, a.b.sessions)
	if err != nil {
		return 0, err
	}
	alive := map[string]bool{}
	n := 0
	for key, e := range es {
		var r SessionInfo
		if decode(BucketSessions+"."+key, e.Value(), MaxRecordSize, &r) != nil || r.Person != subject || r.Ended {
			continue
		}
		if isAsleep(&r) {
			n++
			continue
		}
		if r.Agent == "" {
			continue
		}
		if r.Agent == a.id {
			// This agent is alive: it is the one asking. Asking the bus
			// instead could find its own heartbeat late on a busy
			// machine and let the person past max_sessions.
			n++
			continue
		}
		ok, seen := alive[r.Agent]
		if !seen {
			if ok, err = a.b.ownerAlive(ctx, &r); err != nil {
				return 0, err
			}
			alive[r.Agent] = ok
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// checkSnapshot reads a snapshot request's body (who asks) and refuses
// it at an agent with a team unless that person may view the session.
func (s *agentSession) checkSnapshot(ctx context.Context, subject string, h nats.Header, body []byte) error {
	var m snapshotMsg
	if len(body) > 0 {
		if err := decodeFrom(subject, h, body, MaxRecordSize, &m); err != nil {
			return err
		}
	}
	ctx, err := s.a.withIdentity(ctx, m.Identity)
	if err != nil || s.a.opts.Team == nil {
		return err
	}
	return s.a.needAccess(ctx, s.id, team.AccessView)
}

// errorPart is a refusal in the snapshot's answer form.
func errorPart(err error) []byte {
	data, _ := json.Marshal(&commandReply{Error: wireErr(err)})
	return data
}

// hostSessions maps the host sessions of this process's agents to their
// cluster ids (HostSessionID).
var hostSessions sync.Map // *host.Session → string

// HostSessionID is the cluster's id of a session an agent of this
// process runs ("" for another): team.AuthorizerOptions.SessionID of an
// agent's Authorizer, so that the host policy checking each command
// finds the session's ACL, stored under the cluster's id by the front end
// (the host session's own id is not the cluster's).
func HostSessionID(s *host.Session) string {
	if id, ok := hostSessions.Load(s); ok {
		return id.(string)
	}
	return ""
}
