package team

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
)

// ErrBadGrant: a share's grant is malformed (neither or both of person
// and group, an unknown level). It matches host.ErrBadCommand, so front
// ends answer bad_request.
var ErrBadGrant = fmt.Errorf("team: bad grant: %w", host.ErrBadCommand)

// The time a Recorder and a spend update get, even when the request
// that caused them is gone: the record of a refusal must not be lost
// because the client hung up.
const (
	recordTimeout = 5 * time.Second
	spendTimeout  = 5 * time.Second
)

// AuthorizerOptions configures an Authorizer. A nil *AuthorizerOptions
// means defaults.
type AuthorizerOptions struct {
	// Recorder takes the audit events of what was authorized and refused
	// (nil = none). Its errors and panics are logged, never refuse.
	Recorder Recorder
	// AllowBypass is the server's consent to bypassPermissions (tether
	// serve --allow-bypass): needed, with an admin's role and a policy's
	// allow_bypass, for anyone to use it.
	AllowBypass bool
	// Logger is for diagnostics (nil = silent).
	Logger *slog.Logger
	// Now is the clock (nil = time.Now): today's spend is of Now's UTC
	// day.
	Now func() time.Time
	// SessionID names the ACL of a host session for HostAuthorize (nil
	// = s.ID(), which is tether serve's session id). The cluster's agent
	// sets it to map its host sessions to the cluster's ids.
	SessionID func(s *host.Session) string
}

// Authorizer is the one place that decides what a person may do: start
// a session, read one, send it commands, share it. The front end asks it
// (Start, Created, Access, Visible, Command, Share); where a session
// runs, the command layer asks it again for every command
// (HostAuthorize, installed by SessionOptions), so no path around it
// exists.
//
// The person is the Identity in the ctx (NewContext), resolved by
// Config.Resolve. Every refusal is a *PolicyError matching
// ErrUnauthenticated, ErrForbidden, ErrPolicy or ErrBudget, and is
// recorded (Action refused, Rule the rule). What is authorized is
// recorded once, where it runs: commands by HostAuthorize, starts by
// Created, shares by Share.
//
// Every method is safe for concurrent use.
type Authorizer struct {
	cfg       *Config
	st        *Store
	rec       Recorder
	bypass    bool
	log       *slog.Logger
	now       func() time.Time
	sessionID func(*host.Session) string
}

// NewAuthorizer returns an Authorizer applying cfg, with the ACLs and
// spend in st. cfg and st are required.
func NewAuthorizer(cfg *Config, st *Store, opts *AuthorizerOptions) *Authorizer {
	if cfg == nil || st == nil {
		panic("team: NewAuthorizer needs a Config and a Store")
	}
	var o AuthorizerOptions
	if opts != nil {
		o = *opts
	}
	a := &Authorizer{cfg: cfg, st: st, rec: o.Recorder, bypass: o.AllowBypass, log: o.Logger, now: o.Now, sessionID: o.SessionID}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.sessionID == nil {
		a.sessionID = func(s *host.Session) string { return s.ID() }
	}
	return a
}

// StartCheck is what Start checks: the session's working directory,
// model and permission mode as asked ("" = the server's defaults), and
// how many sessions the person runs now.
type StartCheck struct {
	Cwd     string
	Model   string
	Mode    string
	Running int
}

// PersonSpend is one person's spend today.
type PersonSpend struct {
	Person    string  `json:"person"` // Subject
	Name      string  `json:"name"`
	USD       float64 `json:"usd"`
	BudgetUSD float64 `json:"budget_usd"` // 0 = none
}

// who is the ctx's identity, or a recorded refusal.
func (a *Authorizer) who(ctx context.Context, what, session string) (*Identity, error) {
	id, ok := FromContext(ctx)
	if !ok || id.Subject == "" {
		return nil, a.refuse(ctx, nil, session, what, &PolicyError{Rule: "signed_in", Message: "not signed in", Err: ErrUnauthenticated})
	}
	return id, nil
}

// refuse records pe as a refusal of what and returns it.
func (a *Authorizer) refuse(ctx context.Context, id *Identity, session, what string, pe *PolicyError) error {
	if id != nil {
		pe.Subject = id.Subject
	}
	a.record(ctx, id, &AuditEvent{Action: ActionRefused, Outcome: OutcomeRefused, Session: session, Rule: pe.Rule, Detail: what + ": " + pe.Message})
	return pe
}

// record hands ev to the Recorder, filling in who and when; a failing
// or panicking Recorder is logged and otherwise ignored.
func (a *Authorizer) record(ctx context.Context, id *Identity, ev *AuditEvent) {
	if a.rec == nil {
		return
	}
	ev.Time = a.now().UTC()
	if ev.Outcome == "" {
		ev.Outcome = OutcomeOK
	}
	if id != nil {
		ev.Actor, ev.ActorName, ev.Addr = id.Subject, id.DisplayName(), id.Addr
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("team: the audit Recorder panicked", "action", ev.Action, "panic", p)
		}
	}()
	if err := a.rec.Record(ctx, ev); err != nil {
		a.log.Error("team: audit event not recorded", "action", ev.Action, "err", err)
	}
}

// Access is what the person in ctx may do on the session, with its ACL
// (nil when none is stored: then admins own it and others have no
// access). It refuses only a ctx without identity; a store failure is
// returned as it is.
func (a *Authorizer) Access(ctx context.Context, sessionID string) (Access, *ACL, error) {
	id, err := a.who(ctx, "read", sessionID)
	if err != nil {
		return AccessNone, nil, err
	}
	return a.access(ctx, id, sessionID)
}

func (a *Authorizer) access(ctx context.Context, id *Identity, sessionID string) (Access, *ACL, error) {
	acl, err := a.st.ACL(ctx, sessionID)
	if errors.Is(err, ErrNoACL) {
		if id.Role == RoleAdmin {
			return AccessOwn, nil, nil
		}
		return AccessNone, nil, nil
	}
	if err != nil {
		return AccessNone, nil, err
	}
	return acl.Access(id), acl, nil
}

// Require refuses (and records) unless the person in ctx has at least
// need on the session; what names the attempt for the record
// ("subscribe", "history", a command's type). It returns the ACL (nil
// when none is stored and the person is an admin).
func (a *Authorizer) Require(ctx context.Context, sessionID string, need Access, what string) (*ACL, error) {
	id, err := a.who(ctx, what, sessionID)
	if err != nil {
		return nil, err
	}
	return a.require(ctx, id, sessionID, need, what)
}

func (a *Authorizer) require(ctx context.Context, id *Identity, sessionID string, need Access, what string) (*ACL, error) {
	got, acl, err := a.access(ctx, id, sessionID)
	if err != nil {
		return nil, err
	}
	if got >= need {
		return acl, nil
	}
	var msg string
	switch {
	case got == AccessNone:
		// The same answer whether the session exists or not: its id
		// tells a stranger nothing.
		msg = fmt.Sprintf("session %s is not shared with you", sessionID)
	case need == AccessOwn:
		msg = fmt.Sprintf("only the owner of session %s may %s it", sessionID, what)
	default:
		msg = fmt.Sprintf("you may only watch session %s", sessionID)
	}
	return nil, a.refuse(ctx, id, sessionID, what, &PolicyError{Rule: "access", Message: msg, Err: ErrForbidden})
}

// Visible reports whether the person in ctx may see a session with this
// ACL in a list (nil ACL: admins only).
func (a *Authorizer) Visible(ctx context.Context, acl *ACL) bool {
	id, ok := FromContext(ctx)
	if !ok || id.Subject == "" {
		return false
	}
	if acl == nil {
		return id.Role == RoleAdmin
	}
	return acl.Access(id) >= AccessView
}

// Start checks that the person in ctx may start a session as c asks:
// not a viewer; the working directory under their cwd roots (cleaned,
// symlinks resolved); the mode and model allowed; fewer than
// max_sessions running; today's spend under their budget.
func (a *Authorizer) Start(ctx context.Context, c *StartCheck) error {
	const what = ActionStart
	id, err := a.who(ctx, what, "")
	if err != nil {
		return err
	}
	if c == nil {
		c = &StartCheck{}
	}
	if id.Role != RoleAdmin && id.Role != RoleMember {
		return a.refuse(ctx, id, "", what, &PolicyError{Rule: "role", Err: ErrPolicy,
			Message: fmt.Sprintf("a %s watches sessions shared with them and starts none", cmp.Or(string(id.Role), "person without a role"))})
	}
	p := a.cfg.Policy(id)
	if pe := checkCwd(p, c.Cwd); pe != nil {
		return a.refuse(ctx, id, "", what, pe)
	}
	if pe := a.checkMode(id, p, c.Mode); pe != nil {
		return a.refuse(ctx, id, "", what, pe)
	}
	if pe := checkModel(p, c.Model); pe != nil {
		return a.refuse(ctx, id, "", what, pe)
	}
	if n := p.SessionLimit(); n > 0 && c.Running >= n {
		return a.refuse(ctx, id, "", what, &PolicyError{Rule: "max_sessions", Err: ErrPolicy,
			Message: fmt.Sprintf("you run %d sessions, your most at once; close one first", c.Running)})
	}
	if err := a.checkBudget(ctx, id, id, "", what); err != nil {
		return err
	}
	if c.Mode == string(claude.PermissionModeBypassPermissions) {
		a.record(ctx, id, &AuditEvent{Action: ActionBypass, Detail: "session start, cwd " + c.Cwd})
	}
	return nil
}

// checkCwd: cwd under one of the roots, both cleaned and with symlinks
// resolved (as far as the path exists), so neither ".." nor a link
// leads out.
func checkCwd(p Policy, cwd string) *PolicyError {
	if len(p.CwdRoots) == 0 {
		return nil
	}
	roots := strings.Join(p.CwdRoots, ", ")
	if cwd == "" || !filepath.IsAbs(cwd) {
		return &PolicyError{Rule: "cwd_roots", Err: ErrPolicy,
			Message: fmt.Sprintf("choose a working directory by its absolute path under %s", roots)}
	}
	real := resolvePath(filepath.Clean(cwd))
	for _, r := range p.CwdRoots {
		if within(real, resolvePath(r)) {
			return nil
		}
	}
	return &PolicyError{Rule: "cwd_roots", Err: ErrPolicy,
		Message: fmt.Sprintf("working directory %s is outside your roots (%s)", cwd, roots)}
}

// resolvePath resolves the symlinks of the longest part of p that
// exists, keeping the rest as it is.
func resolvePath(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p is root or below it (both clean and absolute).
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+string(filepath.Separator))
}

// checkMode: a known mode, in the policy's modes; bypassPermissions
// only for an admin, with the server's and the policy's consent.
func (a *Authorizer) checkMode(id *Identity, p Policy, mode string) *PolicyError {
	if mode == "" {
		return nil
	}
	if !slices.Contains(host.PermissionModes, mode) {
		return &PolicyError{Rule: "modes", Err: ErrPolicy, Message: fmt.Sprintf("%q is not a permission mode", mode)}
	}
	if mode == string(claude.PermissionModeBypassPermissions) {
		var why string
		switch {
		case id.Role != RoleAdmin:
			why = "bypassPermissions is for admins only"
		case !a.bypass:
			why = "this server does not allow bypassPermissions"
		case !p.BypassAllowed():
			why = "your policy does not allow bypassPermissions"
		default:
			return nil
		}
		return &PolicyError{Rule: "allow_bypass", Err: ErrPolicy, Message: why}
	}
	if len(p.Modes) > 0 && !slices.Contains(p.Modes, mode) {
		return &PolicyError{Rule: "modes", Err: ErrPolicy,
			Message: fmt.Sprintf("permission mode %s is not allowed (allowed: %s)", mode, strings.Join(p.Modes, ", "))}
	}
	return nil
}

func checkModel(p Policy, model string) *PolicyError {
	if model == "" || len(p.Models) == 0 || slices.Contains(p.Models, model) {
		return nil
	}
	return &PolicyError{Rule: "models", Err: ErrPolicy,
		Message: fmt.Sprintf("model %s is not allowed (allowed: %s)", model, strings.Join(p.Models, ", "))}
}

// checkBudget refuses when payer's spend today has reached their daily
// budget; actor is who is refused. A store failure refuses too (the
// budget cannot be known), as a plain error.
func (a *Authorizer) checkBudget(ctx context.Context, payer, actor *Identity, session, what string) error {
	budget := a.cfg.Policy(payer).Budget()
	if budget <= 0 {
		return nil
	}
	spent, err := a.st.SpendOf(ctx, a.now(), payer.Subject)
	if err != nil {
		return err
	}
	if spent < budget {
		return nil
	}
	whose := "daily budget"
	if payer.Subject != actor.Subject {
		whose = payer.DisplayName() + "'s daily budget (the session's owner)"
	}
	return a.refuse(ctx, actor, session, what, &PolicyError{Rule: "daily_budget_usd", Err: ErrBudget,
		Message: fmt.Sprintf("%s of $%.2f spent ($%.2f today); it resets at 00:00 UTC", whose, budget, spent)})
}

// owner is the identity whose policy and budget a session's turns count
// against.
func owner(acl *ACL, actor *Identity) *Identity {
	if acl == nil || acl.Owner == actor.Subject {
		return actor
	}
	return ownerOf(acl)
}

// ownerOf is the owner an ACL names, with the role they had when the
// session started.
func ownerOf(acl *ACL) *Identity {
	o := &Identity{Subject: acl.Owner, Name: acl.OwnerName, Role: acl.OwnerRole}
	if strings.Contains(acl.Owner, "@") {
		o.Email = acl.Owner
	}
	return o
}

// Owner is the person a session belongs to, from its ACL (ErrNoACL when
// none is stored), with the role they had when it started: the person
// whose policy and workspace its CLI runs under and whose spend its turns
// count to, whoever is acting on it now. A session that starts again
// under the same id (a failover, a resume that a collaborator or an
// admin may ask for) gets SessionOptionsFor(Owner(…)), not the options
// of the person asking. It checks nothing: check the asker's access
// first (Require).
func (a *Authorizer) Owner(ctx context.Context, sessionID string) (*Identity, error) {
	acl, err := a.st.ACL(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return ownerOf(acl), nil
}

// Created records that the person in ctx started the session: it stores
// the session's ACL (the person owns it) and records session_start. The
// front end calls it as soon as the backend started the session, before
// it answers. An id already owned by someone else is refused.
func (a *Authorizer) Created(ctx context.Context, sessionID, cwd string) error {
	id, err := a.who(ctx, ActionStart, sessionID)
	if err != nil {
		return err
	}
	acl := &ACL{Session: sessionID, Owner: id.Subject, OwnerName: id.DisplayName(), OwnerRole: id.Role, Cwd: cwd, Created: a.now().UTC()}
	got, created, err := a.st.CreateACL(ctx, acl)
	if err != nil {
		return err
	}
	if !created && got.Owner != id.Subject {
		return a.refuse(ctx, id, sessionID, ActionStart, &PolicyError{Rule: "access", Err: ErrForbidden,
			Message: fmt.Sprintf("session %s belongs to someone else", sessionID)})
	}
	a.record(ctx, id, &AuditEvent{Action: ActionStart, Session: sessionID, Detail: "cwd " + cwd})
	return nil
}

// Woke records that the person in ctx woke the session (session_start,
// detail "wake"): a sleeping session's CLI starts again at their command,
// as the owner's (SessionPolicy.Wake), and costs what a start costs, so
// the log says who caused it (the command that woke it is recorded as
// well, by its own action). SessionPolicy's OnWake calls it for a host
// session once the wake's checks passed; a cluster agent that wakes a
// session asleep by failover (no host session to hand the hook) calls it
// itself.
func (a *Authorizer) Woke(ctx context.Context, sessionID string) {
	id, _ := FromContext(ctx)
	a.record(ctx, id, &AuditEvent{Action: ActionStart, Session: sessionID, Detail: "wake"})
}

// recordWake is Woke for a host session (under its id for the team:
// AuthorizerOptions.SessionID).
func (a *Authorizer) recordWake(ctx context.Context, s *host.Session) { a.Woke(ctx, a.sessionID(s)) }

// needed is the access a command needs: a command that only reads
// (host.CommandType.ReadOnly: changes, slash_commands) is a viewer's,
// closing the owner's, the rest a collaborator's (reverting files and
// waking a sleeping session too, which starts its CLI; an unknown type
// the owner's: the strictest).
func needed(t host.CommandType) Access {
	if t.ReadOnly() {
		return AccessView
	}
	switch t {
	case host.CommandRevertChanges,
		host.CommandSend, host.CommandCancel, host.CommandInterrupt, host.CommandForceInterrupt, host.CommandStopTask,
		host.CommandAnswer, host.CommandSetModel, host.CommandSetMode, host.CommandResume, host.CommandWake:
		return AccessCollaborate
	}
	return AccessOwn
}

// Command checks that the person in ctx may send c to the session: the
// access it needs (close: owner; the rest: collaborator), set_mode and
// set_model against their policy, send against the daily budget of the
// session's owner (who pays for its turns). The front end calls it
// before passing c on; where the session runs HostAuthorize checks
// again and records what was done. A resume, which no host session
// sees, is recorded here.
func (a *Authorizer) Command(ctx context.Context, sessionID string, c *host.Command) error {
	_, err := a.check(ctx, sessionID, c)
	if err == nil && c.Type == host.CommandResume {
		id, _ := FromContext(ctx)
		a.record(ctx, id, &AuditEvent{Action: ActionStart, Session: sessionID, Detail: "resume"})
	}
	return err
}

func (a *Authorizer) check(ctx context.Context, sessionID string, c *host.Command) (*Identity, error) {
	what := "command"
	if c != nil {
		what = string(c.Type)
	}
	id, err := a.who(ctx, what, sessionID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: no command", host.ErrBadCommand)
	}
	acl, err := a.require(ctx, id, sessionID, needed(c.Type), what)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case host.CommandSetMode:
		if pe := a.checkMode(id, a.cfg.Policy(id), c.Mode); pe != nil {
			return nil, a.refuse(ctx, id, sessionID, what, pe)
		}
	case host.CommandSetModel:
		if pe := checkModel(a.cfg.Policy(id), c.Model); pe != nil {
			return nil, a.refuse(ctx, id, sessionID, what, pe)
		}
	case host.CommandSend:
		if err := a.checkBudget(ctx, owner(acl, id), id, sessionID, what); err != nil {
			return nil, err
		}
	}
	return id, nil
}

// HostAuthorize is the check for host.CommandPolicy.Authorize, where a
// session runs: the same as Command, for the session of s
// (AuthorizerOptions.SessionID), refusing a ctx without identity. What
// it lets through is recorded: prompts by length (and text when the
// configuration's audit.prompts says so), answers with the approval's
// tool, the SHA-256 of its input and the answer, mode and model changes,
// use of bypassPermissions, interrupts and closes.
func (a *Authorizer) HostAuthorize() func(ctx context.Context, s *host.Session, c *host.Command) error {
	return func(ctx context.Context, s *host.Session, c *host.Command) error {
		id, err := a.hostCheck(ctx, s, c)
		if err != nil {
			return err
		}
		a.recordCommand(ctx, id, s, c)
		return nil
	}
}

func (a *Authorizer) hostCheck(ctx context.Context, s *host.Session, c *host.Command) (*Identity, error) {
	if s == nil {
		return nil, fmt.Errorf("team: HostAuthorize without a session")
	}
	return a.check(ctx, a.sessionID(s), c)
}

// formFields lists the names of a form's answer (an elicitation's
// content), sorted and joined by commas; "" for none.
func formFields(content json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(content, &obj) != nil {
		return ""
	}
	return strings.Join(slices.Sorted(maps.Keys(obj)), ",")
}

// recordCommand records an authorized command.
func (a *Authorizer) recordCommand(ctx context.Context, id *Identity, s *host.Session, c *host.Command) {
	ev := &AuditEvent{Session: a.sessionID(s)}
	switch c.Type {
	case host.CommandSend:
		ev.Action = ActionPrompt
		ev.Detail = fmt.Sprintf("chars=%d", utf8.RuneCountInString(c.Text))
		if len(c.Images) > 0 {
			ev.Detail += fmt.Sprintf(" images=%d", len(c.Images))
		}
		if a.cfg.Audit.Prompts {
			ev.Detail += "\n" + c.Text
		}
	case host.CommandCancel:
		ev.Action, ev.Detail = ActionPrompt, "cancel "+c.UUID
	case host.CommandAnswer:
		ev.Action = ActionApproval
		switch {
		case c.Answers != nil, c.Content != nil:
			ev.Rule = "answer"
		case c.Behavior == "allow" && c.Always:
			ev.Rule = "allow_always"
		default:
			ev.Rule = c.Behavior
		}
		if ap, err := s.Approval(c.Approval); err == nil && ap.Request != nil {
			ev.Tool = ap.Request.ToolName
			sum := sha256.Sum256(ap.Request.Input)
			ev.InputDigest = hex.EncodeToString(sum[:])
		}
		ev.Detail = "approval " + c.Approval
		if names := formFields(c.Content); names != "" {
			// Which fields a form's answer filled, never what it said.
			ev.Detail += " fields=" + names
		}
	case host.CommandInterrupt, host.CommandForceInterrupt:
		ev.Action, ev.Detail = ActionInterrupt, string(c.Type)
	case host.CommandStopTask:
		ev.Action, ev.Detail = ActionInterrupt, "stop_task "+c.TaskID
	case host.CommandSetMode:
		ev.Action, ev.Detail = ActionMode, c.Mode
		if c.Mode == string(claude.PermissionModeBypassPermissions) {
			a.record(ctx, id, &AuditEvent{Action: ActionBypass, Session: ev.Session, Detail: "set_mode"})
		}
	case host.CommandSetModel:
		ev.Action, ev.Detail = ActionModel, c.Model
	case host.CommandClose:
		ev.Action = ActionClose
	case host.CommandRevertChanges:
		ev.Action, ev.Detail = ActionRevert, "all"
		if len(c.Paths) > 0 {
			ev.Detail = strings.Join(c.Paths, "\n")
		}
	default:
		return
	}
	a.record(ctx, id, ev)
}

// Share replaces the session's grants (the owner's, or an admin's to
// give), and records session_share.
func (a *Authorizer) Share(ctx context.Context, sessionID string, grants []Grant) error {
	const what = "share"
	id, err := a.who(ctx, what, sessionID)
	if err != nil {
		return err
	}
	clean := make([]Grant, 0, len(grants))
	for i, g := range grants {
		if (g.Person == "") == (g.Group == "") {
			return fmt.Errorf("%w %d: name exactly one of person and group", ErrBadGrant, i)
		}
		if g.Level != ShareViewer && g.Level != ShareCollaborator {
			return fmt.Errorf("%w %d: level %q is not viewer or collaborator", ErrBadGrant, i, g.Level)
		}
		// One grant per person or group: the last one given.
		clean = slices.DeleteFunc(clean, func(o Grant) bool { return o.Person == g.Person && o.Group == g.Group })
		clean = append(clean, g)
	}
	if _, err := a.require(ctx, id, sessionID, AccessOwn, what); err != nil {
		return err
	}
	if _, err := a.st.UpdateACL(ctx, sessionID, func(acl *ACL) error {
		acl.Grants = clean
		return nil
	}); err != nil {
		return err
	}
	var d []string
	for _, g := range clean {
		if g.Person != "" {
			d = append(d, "person "+g.Person+"="+string(g.Level))
		} else {
			d = append(d, "group "+g.Group+"="+string(g.Level))
		}
	}
	a.record(ctx, id, &AuditEvent{Action: ActionShare, Session: sessionID, Detail: cmp.Or(strings.Join(d, ", "), "unshared")})
	return nil
}

// SessionOptions returns a copy of o (nil = defaults) for a session the
// person in ctx starts and owns: SessionOptionsFor that person.
func (a *Authorizer) SessionOptions(ctx context.Context, o *host.Options) *host.Options {
	id, _ := FromContext(ctx)
	return a.SessionOptionsFor(id, o)
}

// SessionOptionsFor returns a copy of o (nil = defaults) for a session
// that owner owns: every command is checked by HostAuthorize against
// the identity in the command's ctx (before o's own Authorize, if any),
// the owner's denied tools are added to the CLI's DisallowedTools, and
// each turn's cost is added to the owner's spend of the day
// (host.Options.OnTurnCost, o's own hook still called), whoever sent the
// prompt. bypassPermissions is left to the Authorizer to allow when the
// server does (AllowBypass). A session started again under its id (a
// failover, a resume) passes Owner's answer, so that it keeps running as
// its owner's.
func (a *Authorizer) SessionOptionsFor(owner *Identity, o *host.Options) *host.Options {
	var out host.Options
	if o != nil {
		out = *o
	}
	id := owner
	var cli claude.Options
	if out.CLI != nil {
		cli = *out.CLI
	}
	cli.DisallowedTools = slices.Clone(cli.DisallowedTools)
	for _, t := range a.cfg.Policy(id).DeniedTools {
		if !slices.Contains(cli.DisallowedTools, t) {
			cli.DisallowedTools = append(cli.DisallowedTools, t)
		}
	}
	out.CLI = &cli

	var cp host.CommandPolicy
	if out.Commands != nil {
		cp = *out.Commands
	}
	prev := cp.Authorize
	cp.Authorize = func(ctx context.Context, s *host.Session, c *host.Command) error {
		who, err := a.hostCheck(ctx, s, c)
		if err != nil {
			return err
		}
		if prev != nil {
			if err := prev(ctx, s, c); err != nil {
				return err
			}
		}
		a.recordCommand(ctx, who, s, c)
		return nil
	}
	if a.bypass {
		cp.AllowBypassPermissions = true
	}
	out.Commands = &cp

	prevCost := out.OnTurnCost
	out.OnTurnCost = func(usd float64) {
		if prevCost != nil {
			func() {
				defer func() {
					if p := recover(); p != nil {
						a.log.Error("team: OnTurnCost panicked", "panic", p)
					}
				}()
				prevCost(usd)
			}()
		}
		if id != nil && usd > 0 {
			a.addSpend(id.Subject, usd)
		}
	}
	return &out
}

// addSpend counts usd to subject today, bounded in time: it runs on a
// session's receive loop.
func (a *Authorizer) addSpend(subject string, usd float64) {
	ctx, cancel := context.WithTimeout(context.Background(), spendTimeout)
	defer cancel()
	if err := a.st.addSpendOn(ctx, a.now(), subject, usd); err != nil {
		a.log.Error("team: spend not counted", "usd", usd, "err", err)
	}
}

// Spend is today's spend per person (UTC day): everyone's for an admin,
// their own for anyone else; the highest first.
func (a *Authorizer) Spend(ctx context.Context) ([]PersonSpend, error) {
	id, err := a.who(ctx, "spend", "")
	if err != nil {
		return nil, err
	}
	m, err := a.st.Spend(ctx, a.now())
	if err != nil {
		return nil, err
	}
	if id.Role != RoleAdmin {
		m = map[string]float64{id.Subject: m[id.Subject]}
	} else if _, ok := m[id.Subject]; !ok {
		m[id.Subject] = 0
	}
	out := make([]PersonSpend, 0, len(m))
	for sub, usd := range m {
		p := &Identity{Subject: sub}
		if sub == id.Subject {
			p = id
		} else {
			if strings.Contains(sub, "@") {
				p.Email = sub
			}
			if r, err := a.cfg.Resolve(p); err == nil {
				p = r
			}
		}
		name := p.Name
		if e := a.cfg.person(p); e != nil && name == "" {
			name = e.Name
		}
		out = append(out, PersonSpend{Person: sub, Name: cmp.Or(name, sub), USD: usd, BudgetUSD: a.cfg.Policy(p).Budget()})
	}
	slices.SortFunc(out, func(x, y PersonSpend) int {
		return cmp.Or(cmp.Compare(y.USD, x.USD), cmp.Compare(x.Person, y.Person))
	})
	return out, nil
}
