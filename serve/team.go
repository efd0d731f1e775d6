package serve

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// TeamOptions turn a server into a team's: people sign in (Auth), every
// request is identified and every read and command is authorized
// (Authorizer), and the sessions each person starts are theirs. With
// them the token login is off. See docs/serve-protocol.md, section 5.
//
// The fields are interfaces so that the server depends on what it asks,
// not on how package team answers: NewTeamAuthorizer adapts a
// *team.Authorizer and its *team.Store.
type TeamOptions struct {
	// Auth identifies a request (an OpenID Connect login's cookie, a
	// trusted proxy's header) and serves /auth/ (its Handler; nil: no
	// such routes). Required.
	Auth team.Authenticator
	// Config resolves a signed-in person's role (refusing people the
	// configuration does not admit) and names their workspace. Required.
	Config TeamConfig
	// Authorizer is the one authorization point. Required.
	Authorizer TeamAuthorizer
	// Audit answers GET /api/audit (admins); nil: that endpoint answers
	// unavailable.
	Audit AuditQuerier
	// Recorder, when set, records a member's refused audit read; every
	// other refusal is recorded by the Authorizer.
	Recorder team.Recorder
	// Isolation, when set, confines each session's CLI (LocalBackend:
	// LocalOptions.Team): set it only when the configuration turns
	// isolation on, after its Check passed.
	Isolation Isolator
	// RecheckInterval is how often an open WebSocket's sign-in is
	// checked again (0 = 30 s): a person who signed out, or whose login
	// was revoked, is disconnected within it.
	RecheckInterval time.Duration
}

// TeamConfig is what the server asks of a team's configuration
// (*team.Config).
type TeamConfig interface {
	// Resolve returns the person with their role, or an error matching
	// team.ErrUnauthenticated when they may not sign in.
	Resolve(id *team.Identity) (*team.Identity, error)
	// Workspace is the person's default working directory ("" = none).
	Workspace(id *team.Identity) string
}

// StartCheck is what a start is checked against (team.StartCheck).
type StartCheck struct {
	Cwd, Model, Mode string
	// Running is how many of the person's own sessions are running.
	Running int
}

// PersonSpend is one person's spend today (GET /api/spend).
type PersonSpend struct {
	Person    string  `json:"person"`
	Name      string  `json:"name"`
	USD       float64 `json:"usd"`
	BudgetUSD float64 `json:"budget_usd"` // 0: no budget
}

// TeamAuthorizer is the one authorization point, as the server uses it:
// *team.Authorizer with its store (NewTeamAuthorizer). The identity is
// the one team.FromContext finds in ctx.
type TeamAuthorizer interface {
	// Require refuses (and records) unless the person has at least need
	// on the session; what names the attempt ("subscribe", "read", a
	// command's type).
	Require(ctx context.Context, sessionID string, need team.Access, what string) (*team.ACL, error)
	// Visible says whether the person sees a session with this ACL in
	// lists.
	Visible(ctx context.Context, acl *team.ACL) bool
	// Start checks a start against the person's policy.
	Start(ctx context.Context, c *StartCheck) error
	// Created makes the person the owner of a session just started.
	Created(ctx context.Context, sessionID, cwd string) error
	// Command checks a client's command before the backend runs it;
	// where the session runs it is checked again and recorded
	// (host.CommandPolicy.Authorize, installed by SessionOptions).
	Command(ctx context.Context, sessionID string, c *host.Command) error
	// Share replaces the session's grants (the owner or an admin).
	Share(ctx context.Context, sessionID string, grants []team.Grant) error
	// SessionOptions returns the host options of a session the person
	// starts: the Authorize hook, the policy's denied tools, spend.
	SessionOptions(ctx context.Context, o *host.Options) *host.Options
	// Spend is today's spend per person (admins: everyone; others:
	// themselves).
	Spend(ctx context.Context) ([]PersonSpend, error)
	// ACL reads a session's ACL (nil, nil when it has none), for the
	// lists the server pushes; PutACL stores one (a resumed session takes
	// its predecessor's).
	ACL(ctx context.Context, sessionID string) (*team.ACL, error)
	PutACL(ctx context.Context, acl *team.ACL) error
}

// AuditQuery selects audit events (GET /api/audit).
type AuditQuery struct {
	Since, Until           time.Time
	Actor, Session, Action string
	Limit                  int
}

// AuditQuerier reads the audit log (*team.Audit, through an adapter).
type AuditQuerier interface {
	Query(ctx context.Context, q *AuditQuery) iter.Seq2[*team.AuditEvent, error]
}

// Isolator confines a person's sessions (*team.Isolation).
type Isolator interface {
	Transport(id *team.Identity, workspace string, base claude.Transport) claude.Transport
}

// sessionPolicy is the team's policy of the sessions these options make
// theirs (team.SessionPolicy): the local backend's sessions start, resume
// and wake under it, as a cluster agent's do. An Isolator without a Home
// (only *team.Isolation's is known) leaves the CLI's config folder alone.
func (t *TeamOptions) sessionPolicy() *team.SessionPolicy {
	p := &team.SessionPolicy{Authorizer: policyAuthz{t.Authorizer}, Config: t.Config}
	if t.Isolation != nil {
		iso, ok := t.Isolation.(team.Isolator)
		if !ok {
			iso = homeless{t.Isolation}
		}
		p.Isolation = iso
	}
	return p
}

// policyAuthz is a TeamAuthorizer as team.SessionPolicy asks it.
type policyAuthz struct{ TeamAuthorizer }

func (a policyAuthz) Start(ctx context.Context, c *team.StartCheck) error {
	return a.TeamAuthorizer.Start(ctx, &StartCheck{Cwd: c.Cwd, Model: c.Model, Mode: c.Mode, Running: c.Running})
}

// homeless is an Isolator that names no Home.
type homeless struct{ Isolator }

func (homeless) Home(*team.Identity) string { return "" }

// Me is the signed-in person as GET /api/me and the hello frame's "me"
// show them.
type Me struct {
	Subject  string    `json:"sub"`
	Name     string    `json:"name"`
	Email    string    `json:"email,omitempty"`
	Initials string    `json:"initials"`
	Role     team.Role `json:"role"`
	Groups   []string  `json:"groups,omitempty"`
}

func meOf(id *team.Identity) *Me {
	return &Me{Subject: id.Subject, Name: id.DisplayName(), Email: id.Email, Initials: id.Initials(), Role: id.Role, Groups: id.Groups}
}

// CodeUnauthenticated: teams are on and the request carries no valid
// sign-in; the UI shows its sign-in page.
const CodeUnauthenticated = "unauthenticated"

// identify establishes who r comes from: the Authenticator, then the
// configuration's role, then the client's address.
func (s *Server) identify(r *http.Request) (*team.Identity, error) {
	t := s.opts.Team
	id, err := t.Auth.Identify(r)
	if err != nil {
		return nil, err
	}
	if id == nil || id.Subject == "" {
		return nil, team.ErrUnauthenticated
	}
	id, err = t.Config.Resolve(id)
	if err != nil {
		return nil, err
	}
	if id == nil || !id.Role.Valid() {
		return nil, team.ErrUnauthenticated
	}
	cp := *id
	cp.Addr = s.clientIP(r)
	return &cp, nil
}

// teamIdentified identifies an /api or /ws request and puts the identity
// in its context; it answers 401 unauthenticated when it cannot.
func (s *Server) teamIdentified(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	id, err := s.identify(r)
	if err != nil {
		msg := "sign in first"
		if !errors.Is(err, team.ErrUnauthenticated) {
			s.log.Info("serve: identify failed", "err", err)
		}
		s.refuse(w, r, http.StatusUnauthorized, CodeUnauthenticated, msg)
		return r, false
	}
	return r.WithContext(team.NewContext(r.Context(), id)), true
}

func identityOf(ctx context.Context) *team.Identity {
	id, _ := team.FromContext(ctx)
	return id
}

// need refuses unless the person in ctx has at least min access to the
// session (the Authorizer decides and records a refusal). No teams:
// always allowed.
func (s *Server) need(ctx context.Context, sessionID string, min team.Access, what string) error {
	t := s.opts.Team
	if t == nil {
		return nil
	}
	_, err := t.Authorizer.Require(ctx, sessionID, min, what)
	return err
}

func subjectOf(id *team.Identity) string {
	if id == nil {
		return ""
	}
	return id.Subject
}

// view returns si as the person sees it: the owner and their access.
func view(si SessionInfo, acl *team.ACL, id *team.Identity) SessionInfo {
	if acl != nil {
		si.Person, si.PersonName = acl.Owner, acl.OwnerName
		if si.PersonName == "" {
			si.PersonName = acl.Owner
		}
	}
	si.Access = acl.Access(id).String()
	if id != nil && id.Role == team.RoleAdmin {
		si.Access = team.AccessOwn.String() // admins own every session, even one without an ACL
	}
	return si
}

// listFor is the sessions list as the person in ctx may see it: every
// session without teams; with them only the visible ones, each with its
// owner and the person's access.
func (s *Server) listFor(ctx context.Context) ([]SessionInfo, error) {
	list, err := s.b.List(ctx)
	if err != nil || s.opts.Team == nil {
		return list, err
	}
	return s.filter(ctx, list, func(sid string) (*team.ACL, error) { return s.opts.Team.Authorizer.ACL(ctx, sid) })
}

func (s *Server) filter(ctx context.Context, list []SessionInfo, acl func(string) (*team.ACL, error)) ([]SessionInfo, error) {
	t := s.opts.Team
	id := identityOf(ctx)
	out := make([]SessionInfo, 0, len(list))
	for _, si := range list {
		a, err := acl(si.ID)
		if err != nil {
			return nil, err
		}
		if !t.Authorizer.Visible(ctx, a) {
			continue
		}
		out = append(out, view(si, a, id))
	}
	return out, nil
}

// running counts the sessions the person owns that have not ended.
func (s *Server) running(ctx context.Context, id *team.Identity) (int, error) {
	list, err := s.b.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, si := range list {
		if si.Ended {
			continue
		}
		acl, err := s.opts.Team.Authorizer.ACL(ctx, si.ID)
		if err != nil {
			return 0, err
		}
		if acl != nil && acl.Owner == id.Subject {
			n++
		}
	}
	return n, nil
}

// teamStart is a start with teams: the policy (Authorizer.Start), the
// backend's start, then the ACL (Created) before the answer.
func (s *Server) teamStart(ctx context.Context, sr *StartRequest) (SessionInfo, error) {
	t := s.opts.Team
	id := identityOf(ctx)
	if id == nil {
		return SessionInfo{}, team.ErrUnauthenticated
	}
	if sr.Cwd == "" {
		sr.Cwd = t.Config.Workspace(id)
	}
	n, err := s.running(ctx, id)
	if err != nil {
		return SessionInfo{}, err
	}
	check := &StartCheck{Cwd: sr.Cwd, Model: sr.Model, Mode: sr.PermissionMode, Running: n}
	if sr.Worktree && filepath.IsAbs(sr.Cwd) {
		// The worktree goes under the repository's top folder, and the
		// session needs the repository's git directory: the whole
		// repository must be under the person's roots, not just cwd.
		top, err := worktreeRepo(ctx, sr.Cwd, nil)
		if _, local := s.b.(*LocalBackend); err != nil && !local {
			// Another backend's sessions may run on other machines
			// (the cluster's agents), where cwd is: cwd is checked
			// here, and the agent that makes the worktree checks its
			// repository against the same roots.
			top = sr.Cwd
		} else if err != nil {
			return SessionInfo{}, err
		}
		check.Cwd = top
		if err := t.Authorizer.Start(ctx, check); err != nil {
			var pe *team.PolicyError
			if errors.As(err, &pe) && pe.Rule == "cwd_roots" {
				// Say it of the worktree: cwd itself may be allowed.
				cp := *pe
				roots := ""
				if i := strings.LastIndex(pe.Message, " ("); i >= 0 {
					roots = pe.Message[i:]
				}
				cp.Message = fmt.Sprintf("a session in a worktree needs its whole repository under your roots: the repository of %s is %s, which is outside them%s",
					sr.Cwd, top, roots)
				return SessionInfo{}, &cp
			}
			return SessionInfo{}, err
		}
	} else if err := t.Authorizer.Start(ctx, check); err != nil {
		return SessionInfo{}, err
	}
	info, err := s.b.Start(ctx, sr)
	if err != nil {
		return SessionInfo{}, err
	}
	if err := t.Authorizer.Created(ctx, info.ID, info.Cwd); err != nil {
		// Nobody may own it: it must not run.
		s.log.Error("serve: a started session could not be given its owner; closing it", "session", info.ID, "err", err)
		_, _ = s.b.Do(context.WithoutCancel(ctx), info.ID, &host.Command{Type: host.CommandClose})
		return SessionInfo{}, err
	}
	acl, err := t.Authorizer.ACL(ctx, info.ID)
	if err != nil {
		acl = &team.ACL{Session: info.ID, Owner: id.Subject, OwnerName: id.DisplayName()}
	}
	s.setACL(info.ID, acl)
	return view(info, acl, id), nil
}

// teamResumed gives a session resumed under a new id its predecessor's
// ACL (the owner stays the owner whoever resumed it).
func (s *Server) teamResumed(ctx context.Context, oldID string, info *SessionInfo) error {
	t := s.opts.Team
	acl, err := t.Authorizer.ACL(ctx, oldID)
	if err != nil {
		return err
	}
	if acl == nil {
		return nil
	}
	if info.ID != oldID {
		cp := *acl
		cp.Session = info.ID
		cp.Grants = append([]team.Grant(nil), acl.Grants...)
		if err := t.Authorizer.PutACL(ctx, &cp); err != nil {
			return err
		}
		acl = &cp
	}
	s.setACL(info.ID, acl)
	*info = view(*info, acl, identityOf(ctx))
	return nil
}

// diskAllowed limits disk_sessions with teams: the CLI's conversations of
// a folder are the person's own only under their workspace (admins: any).
func (s *Server) diskAllowed(ctx context.Context, cwd *string) error {
	t := s.opts.Team
	if t == nil {
		return nil
	}
	id := identityOf(ctx)
	if id == nil {
		return team.ErrUnauthenticated
	}
	ws := t.Config.Workspace(id)
	if *cwd == "" {
		*cwd = ws
	}
	if id.Role == team.RoleAdmin {
		return nil
	}
	if id.Role == team.RoleViewer || ws == "" || !within(*cwd, ws) {
		return &team.PolicyError{Subject: id.Subject, Rule: "cwd_roots", Message: "you may list conversations only under your workspace " + ws, Err: team.ErrPolicy}
	}
	return nil
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(p, root string) bool {
	if !filepath.IsAbs(p) || !filepath.IsAbs(root) {
		return false
	}
	p, root = filepath.Clean(p), filepath.Clean(root)
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}

// doCommand runs a client's command. With teams the Authorizer checks it
// here (a viewer's command never reaches the backend) and the session
// again where it runs (host.CommandPolicy.Authorize), which records it.
func (s *Server) doCommand(ctx context.Context, id string, cmd *host.Command) (*Result, error) {
	t := s.opts.Team
	if t == nil {
		return s.b.Do(ctx, id, cmd)
	}
	if err := t.Authorizer.Command(ctx, id, cmd); err != nil {
		return nil, err
	}
	res, err := s.b.Do(ctx, id, cmd)
	if err != nil {
		return nil, err
	}
	if res.Session != nil {
		if err := s.teamResumed(ctx, id, res.Session); err != nil {
			s.log.Error("serve: a resumed session could not take its predecessor's ACL", "session", res.Session.ID, "err", err)
		}
	}
	return res, nil
}

// teamRound is the hub's round with teams: it reads the ACLs of sessions
// it has not seen (all of them every tenth round, for shares changed
// elsewhere) and gives each client the list as its person sees it.
func (s *Server) teamRound(now map[string]SessionInfo, clients []*client) {
	t := s.opts.Team
	s.mu.Lock()
	s.ticks++
	refresh := s.ticks%10 == 0
	var missing []string
	for id := range now {
		if _, ok := s.acls[id]; !ok || refresh {
			missing = append(missing, id)
		}
	}
	s.mu.Unlock()
	got := map[string]*team.ACL{}
	for _, id := range missing {
		acl, err := t.Authorizer.ACL(s.ctx, id)
		if err != nil {
			s.log.Warn("serve: reading a session's ACL failed", "session", id, "err", err)
			continue
		}
		got[id] = acl
	}
	s.mu.Lock()
	for id, acl := range got {
		s.acls[id] = acl
	}
	for id := range s.acls {
		if _, ok := now[id]; !ok {
			delete(s.acls, id)
		}
	}
	acls := make(map[string]*team.ACL, len(s.acls))
	for id, acl := range s.acls {
		acls[id] = acl
	}
	s.mu.Unlock()
	for _, c := range clients {
		for id, si := range now {
			c.showTeam(si, acls[id])
		}
		c.mu.Lock()
		var gone []string
		for id := range c.seen {
			if _, ok := now[id]; !ok {
				gone = append(gone, id)
			}
		}
		c.mu.Unlock()
		for _, id := range gone {
			c.hideTeam(id, false)
		}
	}
}

// showTeam tells the client about a session as its person sees it, or
// that it is gone from their view (and their subscription with it).
func (c *client) showTeam(si SessionInfo, acl *team.ACL) {
	if !c.s.opts.Team.Authorizer.Visible(c.ctx, acl) {
		c.hideTeam(si.ID, true)
		return
	}
	v := view(si, acl, c.id)
	c.mu.Lock()
	old, ok := c.seenInfo[si.ID]
	if ok && old == v {
		c.mu.Unlock()
		return
	}
	c.seen[si.ID] = true
	c.seenInfo[si.ID] = v
	c.mu.Unlock()
	c.setInfo(si.ID, &v)
}

// hideTeam removes a session from the client's view; when its access
// ended (revoked) rather than the session, a subscription ends too.
func (c *client) hideTeam(id string, revoked bool) {
	c.mu.Lock()
	was := c.seen[id]
	delete(c.seen, id)
	delete(c.seenInfo, id)
	sub := c.subs[id]
	if revoked && sub != nil {
		delete(c.subs, id)
	}
	c.mu.Unlock()
	if revoked && sub != nil {
		sub.cancel()
		b := rawJSON(errorFrameT{Type: "error", Session: id, Error: &Error{Code: CodeForbidden, Message: "session " + id + " is no longer shared with you"}})
		select {
		case c.out <- b:
		default:
		}
	}
	if was {
		c.setInfo(id, nil)
	}
}

// markSeen records the list the client was sent (teams).
func (c *client) markSeen(list []SessionInfo) {
	if c.id == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.seen)
	clear(c.seenInfo)
	for _, si := range list {
		c.seen[si.ID] = true
		c.seenInfo[si.ID] = si
	}
}

// recheck checks the connection's sign-in again now and then: a person
// who signed out, whose login was revoked or who is no longer admitted
// is disconnected.
func (c *client) recheck() {
	defer c.wg.Done()
	tk := time.NewTicker(c.s.opts.Team.RecheckInterval)
	defer tk.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tk.C:
		case <-c.recheckNow:
		}
		if !c.checkSignIn() {
			return
		}
	}
}

// statusSignedOut is the WebSocket close code of a connection whose
// sign-in ended (signed out, revoked, no longer admitted): a client
// shows its sign-in page rather than reconnecting. An application code
// (4000–4999), after HTTP's 401.
const statusSignedOut = websocket.StatusCode(4401)

// checkSignIn checks the connection's sign-in now; when it is no longer
// valid (or no longer the same person, role and groups) it closes the
// socket with statusSignedOut and reports false.
func (c *client) checkSignIn() bool {
	id, err := c.s.identify(c.authr)
	if err == nil && id.Subject == c.id.Subject && id.Role == c.id.Role && slices.Equal(id.Groups, c.id.Groups) {
		return true
	}
	c.s.log.Info("serve: sign-in no longer valid; disconnecting", "remote", c.ip)
	c.ws.Close(statusSignedOut, "signed out")
	c.cancel()
	return false
}
