package team_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// recorder keeps the audit events; it can be made to fail or panic.
type recorder struct {
	mu     sync.Mutex
	events []team.AuditEvent
	fail   error
	panic  bool
}

func (r *recorder) Record(_ context.Context, ev *team.AuditEvent) error {
	r.mu.Lock()
	r.events = append(r.events, *ev)
	fail, p := r.fail, r.panic
	r.mu.Unlock()
	if p {
		panic("recorder down")
	}
	return fail
}

func (r *recorder) all() []team.AuditEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) last(t *testing.T) team.AuditEvent {
	t.Helper()
	ev := r.all()
	if len(ev) == 0 {
		t.Fatal("nothing recorded")
	}
	return ev[len(ev)-1]
}

const authzConfig = `
people:
  - {email: admin@x.com, name: Ada, role: admin}
  - {email: admin2@x.com, name: Abe, role: admin, policy: {allow_bypass: false}}
  - {email: owner@x.com, name: Olive, role: member}
  - {email: collab@x.com, name: Colin, role: member}
  - {email: viewer@x.com, name: Vera, role: member}
  - {email: capped@x.com, name: Cap, role: viewer}
  - {email: stranger@x.com, name: Stan, role: member}
policies:
  admin: {allow_bypass: true}
  member: {cwd_roots: ["ROOT/{user}"], modes: [default, acceptEdits, plan], models: [sonnet], denied_tools: [WebFetch], max_sessions: 2, daily_budget_usd: 5}
`

type fixture struct {
	t    *testing.T
	ctx  context.Context
	root string
	cfg  *team.Config
	st   *team.Store
	rec  *recorder
	az   *team.Authorizer
}

func newFixture(t *testing.T, bypass bool) *fixture {
	t.Helper()
	root := t.TempDir()
	cfg := mustConfig(t, strings.ReplaceAll(authzConfig, "ROOT", root))
	st, _ := newStore(t)
	f := &fixture{t: t, ctx: testCtx(t), root: root, cfg: cfg, st: st, rec: &recorder{}}
	f.az = team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: f.rec, AllowBypass: bypass})
	return f
}

// as is a ctx carrying the person whose e-mail local part is who.
func (f *fixture) as(who string) context.Context {
	f.t.Helper()
	id, err := f.cfg.Resolve(&team.Identity{Subject: who + "@x.com", Email: who + "@x.com", Addr: "127.0.0.1:1"})
	if err != nil {
		f.t.Fatal(err)
	}
	return team.NewContext(f.ctx, id)
}

// shared makes a session owned by owner, shared with collab
// (collaborator), viewer (viewer) and capped (collaborator, but a
// viewer by role).
func (f *fixture) shared(id string) {
	f.t.Helper()
	if err := f.az.Created(f.as("owner"), id, filepath.Join(f.root, "owner")); err != nil {
		f.t.Fatal(err)
	}
	if err := f.az.Share(f.as("owner"), id, []team.Grant{
		{Person: "collab@x.com", Level: team.ShareCollaborator},
		{Person: "viewer@x.com", Level: team.ShareViewer},
		{Person: "capped@x.com", Level: team.ShareCollaborator},
	}); err != nil {
		f.t.Fatal(err)
	}
}

// state is what a refusal must leave as it was.
// startShared starts a host session with o, closed when the test ends,
// and shares it (shared).
func (f *fixture) startShared(o *host.Options) *host.Session {
	f.t.Helper()
	s, err := host.Start(f.ctx, o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	f.shared(s.ID())
	return s
}

func (f *fixture) state(session string) (*team.ACL, map[string]float64) {
	f.t.Helper()
	a, err := f.st.ACL(f.ctx, session)
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := f.st.Spend(f.ctx, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return a, m
}

func (f *fixture) unchanged(session string, acl *team.ACL, spend map[string]float64) {
	f.t.Helper()
	a, m := f.state(session)
	if !reflect.DeepEqual(a, acl) || !reflect.DeepEqual(m, spend) {
		f.t.Errorf("a refusal changed the state: ACL %+v -> %+v, spend %v -> %v", acl, a, spend, m)
	}
}

// wantRefused checks err is a *PolicyError matching sentinel with rule,
// recorded as a refusal of who.
func wantRefused(t *testing.T, rec *recorder, err, sentinel error, rule, who string) *team.PolicyError {
	t.Helper()
	var pe *team.PolicyError
	if !errors.As(err, &pe) || !errors.Is(err, sentinel) {
		t.Fatalf("err %v, want a *PolicyError matching %v", err, sentinel)
	}
	if pe.Rule != rule {
		t.Errorf("Rule %q, want %q (%v)", pe.Rule, rule, err)
	}
	ev := rec.last(t)
	if ev.Action != team.ActionRefused || ev.Outcome != team.OutcomeRefused || ev.Rule != rule || ev.Actor != who {
		t.Errorf("recorded %+v, want a refusal of %s by rule %s", ev, who, rule)
	}
	return pe
}

// fakeSession is a host session on a fake CLI that answers the
// initialize request and then waits.
func fakeSession(t *testing.T, o *host.Options) *host.Session {
	t.Helper()
	if o == nil {
		o = &host.Options{}
	}
	if o.CLI == nil {
		o.CLI = &claude.Options{}
	}
	o.CLI.Transport = &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}}
	s, err := host.Start(testCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var commands = []*host.Command{
	{Type: host.CommandSend, Text: "hi"},
	{Type: host.CommandCancel, UUID: "u1"},
	{Type: host.CommandInterrupt},
	{Type: host.CommandForceInterrupt},
	{Type: host.CommandAnswer, Approval: "a1", Behavior: "allow"},
	{Type: host.CommandSetModel, Model: "sonnet"},
	{Type: host.CommandSetMode, Mode: "plan"},
	{Type: host.CommandResume},
	{Type: host.CommandRevertChanges, Paths: []string{"a.go"}},
	{Type: host.CommandChanges},
	{Type: host.CommandSlashCommands},
	{Type: host.CommandWake},
	{Type: host.CommandStopTask, TaskID: "bg1"},
	{Type: host.CommandClose},
}

// Every command type × every kind of person, through the front end's
// check (Command) and the host's (HostAuthorize): owner and admin may
// do all, a collaborator all but close, a viewer (by share, or by role
// whatever the share) and a stranger nothing; every refusal is a
// recorded *PolicyError and changes nothing.
func TestCommandAccess(t *testing.T) {
	f := newFixture(t, false)
	hs := fakeSession(t, nil)
	f.shared(hs.ID())
	acl, spend := f.state(hs.ID())
	hostAuth := f.az.HostAuthorize()
	for _, who := range []string{"owner", "admin", "collab", "viewer", "capped", "stranger"} {
		for _, c := range commands {
			allowed := who == "owner" || who == "admin" || (who == "collab" && c.Type != host.CommandClose) ||
				((c.Type == host.CommandChanges || c.Type == host.CommandSlashCommands) && who != "stranger") // a viewer reads, changes nothing
			checks := map[string]func() error{
				"Command": func() error { return f.az.Command(f.as(who), hs.ID(), c) },
			}
			if c.Type != host.CommandResume { // no host session sees a resume
				checks["HostAuthorize"] = func() error { return hostAuth(f.as(who), hs, c) }
			}
			for name, check := range checks {
				err := check()
				if allowed {
					if err != nil {
						t.Errorf("%s: %s %s refused: %v", name, who, c.Type, err)
					}
					if ev := f.rec.last(t); name == "HostAuthorize" && c.Type == host.CommandStopTask &&
						(ev.Action != team.ActionInterrupt || ev.Detail != "stop_task bg1" || ev.Actor != who+"@x.com") {
						t.Errorf("%s's stop_task recorded as %+v", who, ev)
					}
					continue
				}
				pe := wantRefused(t, f.rec, err, team.ErrForbidden, "access", who+"@x.com")
				if !errors.Is(err, host.ErrForbidden) || errors.Is(err, team.ErrPolicy) {
					t.Errorf("%s: %s %s: %v should match host.ErrForbidden, not ErrPolicy", name, who, c.Type, err)
				}
				if who == "stranger" && !strings.Contains(pe.Message, "not shared with you") {
					t.Errorf("stranger's refusal %q", pe.Message)
				}
				if who == "viewer" && c.Type != host.CommandClose && !strings.Contains(pe.Message, "only watch") {
					t.Errorf("viewer's refusal %q", pe.Message)
				}
			}
		}
	}
	f.unchanged(hs.ID(), acl, spend)
	// No identity at all: refused as unauthenticated, by both.
	for _, err := range []error{f.az.Command(f.ctx, hs.ID(), commands[0]), hostAuth(f.ctx, hs, commands[0])} {
		wantRefused(t, f.rec, err, team.ErrUnauthenticated, "signed_in", "")
	}
	if _, _, err := f.az.Access(f.ctx, hs.ID()); !errors.Is(err, team.ErrUnauthenticated) {
		t.Errorf("Access without identity: %v", err)
	}
}

func TestAccessAndVisible(t *testing.T) {
	f := newFixture(t, false)
	f.shared("s1")
	acl, _ := f.state("s1")
	for who, want := range map[string]team.Access{
		"owner": team.AccessOwn, "admin": team.AccessOwn, "collab": team.AccessCollaborate,
		"viewer": team.AccessView, "capped": team.AccessView, "stranger": team.AccessNone,
	} {
		got, a, err := f.az.Access(f.as(who), "s1")
		if err != nil || got != want || a == nil || a.Owner != "owner@x.com" {
			t.Errorf("Access of %s = %v, %+v, %v; want %v", who, got, a, err, want)
		}
		if vis := f.az.Visible(f.as(who), acl); vis != (want >= team.AccessView) {
			t.Errorf("Visible to %s = %v", who, vis)
		}
	}
	// A session without an ACL: admins own it, the rest see nothing.
	if got, _, _ := f.az.Access(f.as("admin"), "unknown"); got != team.AccessOwn {
		t.Errorf("admin on an unknown session: %v", got)
	}
	if got, _, _ := f.az.Access(f.as("owner"), "unknown"); got != team.AccessNone {
		t.Errorf("member on an unknown session: %v", got)
	}
	if f.az.Visible(f.as("owner"), nil) || !f.az.Visible(f.as("admin"), nil) || f.az.Visible(f.ctx, acl) {
		t.Error("Visible of a nil ACL or without identity is wrong")
	}
	if _, err := f.az.Require(f.as("stranger"), "s1", team.AccessView, "subscribe"); err == nil {
		t.Error("Require let a stranger subscribe")
	} else {
		wantRefused(t, f.rec, err, team.ErrForbidden, "access", "stranger@x.com")
	}
	if _, err := f.az.Require(f.as("viewer"), "s1", team.AccessView, "subscribe"); err != nil {
		t.Errorf("Require refused a viewer's subscribe: %v", err)
	}
}

// Each rule of the start policy refuses with its own Rule, recorded.
func TestStartPolicy(t *testing.T) {
	f := newFixture(t, true)
	mine := filepath.Join(f.root, "owner")
	if err := os.MkdirAll(filepath.Join(mine, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(mine, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.root, "collab"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, who string
		check     team.StartCheck
		sentinel  error
		rule      string // "" = allowed
	}{
		{"own workspace", "owner", team.StartCheck{Cwd: mine}, nil, ""},
		{"a folder not made yet under it", "owner", team.StartCheck{Cwd: mine + "/new/deeper", Mode: "plan", Model: "sonnet", Running: 1}, nil, ""},
		{"viewer role", "capped", team.StartCheck{}, team.ErrPolicy, "role"},
		{"no cwd", "owner", team.StartCheck{}, team.ErrPolicy, "cwd_roots"},
		{"relative cwd", "owner", team.StartCheck{Cwd: "owner/proj"}, team.ErrPolicy, "cwd_roots"},
		{"another's workspace", "owner", team.StartCheck{Cwd: filepath.Join(f.root, "collab")}, team.ErrPolicy, "cwd_roots"},
		{"dot-dot out", "owner", team.StartCheck{Cwd: mine + "/../collab"}, team.ErrPolicy, "cwd_roots"},
		{"prefix lookalike", "owner", team.StartCheck{Cwd: mine + "-evil"}, team.ErrPolicy, "cwd_roots"},
		{"symlink out", "owner", team.StartCheck{Cwd: filepath.Join(mine, "escape", "x")}, team.ErrPolicy, "cwd_roots"},
		{"unknown mode", "owner", team.StartCheck{Cwd: mine, Mode: "yolo"}, team.ErrPolicy, "modes"},
		{"mode not listed", "owner", team.StartCheck{Cwd: mine, Mode: "dontAsk"}, team.ErrPolicy, "modes"},
		{"bypass by a member", "owner", team.StartCheck{Cwd: mine, Mode: "bypassPermissions"}, team.ErrPolicy, "allow_bypass"},
		{"bypass by an admin whose policy says no", "admin2", team.StartCheck{Cwd: "/", Mode: "bypassPermissions"}, team.ErrPolicy, "allow_bypass"},
		{"bypass by an admin", "admin", team.StartCheck{Cwd: "/", Mode: "bypassPermissions"}, nil, ""},
		{"model not listed", "owner", team.StartCheck{Cwd: mine, Model: "opus"}, team.ErrPolicy, "models"},
		{"too many sessions", "owner", team.StartCheck{Cwd: mine, Running: 2}, team.ErrPolicy, "max_sessions"},
		{"admin has no bounds", "admin", team.StartCheck{Cwd: "/tmp", Model: "opus", Running: 50}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.az.Start(f.as(tc.who), &tc.check)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			wantRefused(t, f.rec, err, tc.sentinel, tc.rule, tc.who+"@x.com")
		})
	}
	// The server's flag is needed too.
	off := team.NewAuthorizer(f.cfg, f.st, &team.AuthorizerOptions{Recorder: f.rec})
	wantRefused(t, f.rec, off.Start(f.as("admin"), &team.StartCheck{Mode: "bypassPermissions"}), team.ErrPolicy, "allow_bypass", "admin@x.com")
	if ev := f.rec.all(); !slices.ContainsFunc(ev, func(e team.AuditEvent) bool { return e.Action == team.ActionBypass && e.Actor == "admin@x.com" }) {
		t.Error("the admin's bypass start is not recorded")
	}
	wantRefused(t, f.rec, f.az.Start(f.ctx, &team.StartCheck{Cwd: mine}), team.ErrUnauthenticated, "signed_in", "")
}

// A spent budget refuses a start and a send with a clear message; a
// collaborator's send is refused when the owner's budget (who pays) is
// spent.
func TestBudget(t *testing.T) {
	f := newFixture(t, false)
	f.shared("s1")
	if err := f.st.AddSpend(f.ctx, "owner@x.com", 5.12); err != nil {
		t.Fatal(err)
	}
	acl, spend := f.state("s1")
	err := f.az.Start(f.as("owner"), &team.StartCheck{Cwd: filepath.Join(f.root, "owner")})
	pe := wantRefused(t, f.rec, err, team.ErrBudget, "daily_budget_usd", "owner@x.com")
	if want := "daily budget of $5.00 spent ($5.12 today); it resets at 00:00 UTC"; pe.Message != want {
		t.Errorf("message %q, want %q", pe.Message, want)
	}
	if !errors.Is(err, team.ErrPolicy) || !errors.Is(err, host.ErrForbidden) {
		t.Errorf("%v should match ErrPolicy and host.ErrForbidden", err)
	}
	wantRefused(t, f.rec, f.az.Command(f.as("owner"), "s1", &host.Command{Type: host.CommandSend, Text: "x"}), team.ErrBudget, "daily_budget_usd", "owner@x.com")
	err = f.az.Command(f.as("collab"), "s1", &host.Command{Type: host.CommandSend, Text: "x"})
	pe = wantRefused(t, f.rec, err, team.ErrBudget, "daily_budget_usd", "collab@x.com")
	if !strings.HasPrefix(pe.Message, "Olive's daily budget") {
		t.Errorf("collaborator's refusal %q should name the owner's budget", pe.Message)
	}
	// Other commands go on: the budget bounds new turns only.
	if err := f.az.Command(f.as("owner"), "s1", &host.Command{Type: host.CommandInterrupt}); err != nil {
		t.Errorf("interrupt refused over budget: %v", err)
	}
	// Someone else's session of their own still starts.
	if err := f.az.Start(f.as("collab"), &team.StartCheck{Cwd: filepath.Join(f.root, "collab")}); err != nil {
		t.Errorf("collab refused: %v", err)
	}
	f.unchanged("s1", acl, spend)
}

// set_mode and set_model are checked against the acting person's
// policy; bypass needs an admin, the server's flag and the policy.
func TestModeAndModelCommands(t *testing.T) {
	f := newFixture(t, true)
	f.shared("s1")
	acl, spend := f.state("s1")
	for _, tc := range []struct {
		who  string
		c    host.Command
		rule string
	}{
		{"collab", host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"}, "allow_bypass"},
		{"owner", host.Command{Type: host.CommandSetMode, Mode: "dontAsk"}, "modes"},
		{"owner", host.Command{Type: host.CommandSetModel, Model: "opus"}, "models"},
		{"admin2", host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"}, "allow_bypass"},
		{"admin", host.Command{Type: host.CommandSetMode, Mode: "bypassPermissions"}, ""},
		{"owner", host.Command{Type: host.CommandSetModel}, ""},
	} {
		err := f.az.Command(f.as(tc.who), "s1", &tc.c)
		if tc.rule == "" {
			if err != nil {
				t.Errorf("%s %+v refused: %v", tc.who, tc.c, err)
			}
			continue
		}
		wantRefused(t, f.rec, err, team.ErrPolicy, tc.rule, tc.who+"@x.com")
	}
	f.unchanged("s1", acl, spend)
}

// A Recorder that fails or panics changes no decision.
func TestRecorderFailureDoesNotMatter(t *testing.T) {
	for _, mode := range []string{"error", "panic"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, false)
			f.shared("s1")
			f.rec.mu.Lock()
			f.rec.fail, f.rec.panic = errors.New("audit down"), mode == "panic"
			f.rec.mu.Unlock()
			n := len(f.rec.all())
			if err := f.az.Command(f.as("collab"), "s1", &host.Command{Type: host.CommandResume}); err != nil {
				t.Errorf("allowed command refused: %v", err)
			}
			wantRefused(t, f.rec, f.az.Command(f.as("viewer"), "s1", &host.Command{Type: host.CommandSend}), team.ErrForbidden, "access", "viewer@x.com")
			if err := f.az.Created(f.as("owner"), "s2", ""); err != nil {
				t.Errorf("Created: %v", err)
			}
			if len(f.rec.all()) != n+3 {
				t.Errorf("the recorder was not asked each time")
			}
		})
	}
}

func TestShareAndCreated(t *testing.T) {
	f := newFixture(t, false)
	f.shared("s1")
	if ev := f.rec.last(t); ev.Action != team.ActionShare || ev.Actor != "owner@x.com" || ev.Outcome != team.OutcomeOK ||
		ev.Detail != "person collab@x.com=collaborator, person viewer@x.com=viewer, person capped@x.com=collaborator" {
		t.Errorf("share recorded as %+v", ev)
	}
	acl, spend := f.state("s1")
	// Only the owner (or an admin) shares.
	for _, who := range []string{"collab", "viewer", "stranger"} {
		wantRefused(t, f.rec, f.az.Share(f.as(who), "s1", nil), team.ErrForbidden, "access", who+"@x.com")
	}
	for _, g := range [][]team.Grant{
		{{Level: team.ShareViewer}},
		{{Person: "a", Group: "b", Level: team.ShareViewer}},
		{{Person: "a", Level: "owner"}},
	} {
		if err := f.az.Share(f.as("owner"), "s1", g); !errors.Is(err, team.ErrBadGrant) || !errors.Is(err, host.ErrBadCommand) {
			t.Errorf("bad grant %+v: %v", g, err)
		}
	}
	// Someone else cannot claim the session's id.
	wantRefused(t, f.rec, f.az.Created(f.as("stranger"), "s1", "/"), team.ErrForbidden, "access", "stranger@x.com")
	f.unchanged("s1", acl, spend)
	// The grants are replaced, one per person or group.
	if err := f.az.Share(f.as("admin"), "s1", []team.Grant{
		{Group: "eng", Level: team.ShareViewer}, {Group: "eng", Level: team.ShareCollaborator},
	}); err != nil {
		t.Fatal(err)
	}
	a, _ := f.st.ACL(f.ctx, "s1")
	if !reflect.DeepEqual(a.Grants, []team.Grant{{Group: "eng", Level: team.ShareCollaborator}}) || a.Owner != "owner@x.com" || a.OwnerRole != team.RoleMember {
		t.Errorf("ACL after the admin's share %+v", a)
	}
	if got, _, _ := f.az.Access(f.as("viewer"), "s1"); got != team.AccessNone {
		t.Errorf("viewer's access after being unshared: %v", got)
	}
	// Created again by its owner is fine (a retried start).
	if err := f.az.Created(f.as("owner"), "s1", "/"); err != nil {
		t.Errorf("Created again by the owner: %v", err)
	}
}

func TestSpendPerPerson(t *testing.T) {
	f := newFixture(t, false)
	for who, usd := range map[string]float64{"owner": 1.5, "collab": 3} {
		if err := f.st.AddSpend(f.ctx, who+"@x.com", usd); err != nil {
			t.Fatal(err)
		}
	}
	all, err := f.az.Spend(f.as("admin"))
	if err != nil {
		t.Fatal(err)
	}
	want := []team.PersonSpend{
		{Person: "collab@x.com", Name: "Colin", USD: 3, BudgetUSD: 5},
		{Person: "owner@x.com", Name: "Olive", USD: 1.5, BudgetUSD: 5},
		{Person: "admin@x.com", Name: "Ada", USD: 0},
	}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("admin's Spend = %+v, want %+v", all, want)
	}
	mine, err := f.az.Spend(f.as("owner"))
	if err != nil || !reflect.DeepEqual(mine, want[1:2]) {
		t.Errorf("member's Spend = %+v, %v; want only their own", mine, err)
	}
	none, err := f.az.Spend(f.as("stranger"))
	if err != nil || len(none) != 1 || none[0].USD != 0 {
		t.Errorf("Spend of someone who spent nothing = %+v, %v", none, err)
	}
	if _, err := f.az.Spend(f.ctx); !errors.Is(err, team.ErrUnauthenticated) {
		t.Errorf("Spend without identity: %v", err)
	}
}

// SessionOptions wires the Authorizer into a real host session: every
// command through Session.Do is checked (a ctx without identity and a
// viewer refused), a collaborator's turn costs the owner, an answer is
// recorded with the approval's tool and the digest of its input, and
// the policy's denied tools reach the CLI.
func TestSessionOptions(t *testing.T) {
	f := newFixture(t, false)
	input := map[string]any{"command": "cat /etc/hostname"}
	theirs := &host.Options{CLI: &claude.Options{DisallowedTools: []string{"Bash(rm:*)"}}}
	o := f.az.SessionOptions(f.as("owner"), theirs)
	if !reflect.DeepEqual(o.CLI.DisallowedTools, []string{"Bash(rm:*)", "WebFetch"}) || len(theirs.CLI.DisallowedTools) != 1 {
		t.Errorf("DisallowedTools %v (caller's %v)", o.CLI.DisallowedTools, theirs.CLI.DisallowedTools)
	}
	if o.Commands == nil || o.Commands.Authorize == nil || o.OnTurnCost == nil || theirs.Commands != nil {
		t.Fatalf("SessionOptions did not wire the checks into a copy: %+v", o)
	}
	o.CLI.Transport = &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit())
		if _, err := c.CanUseTool(ctx, "tu1", "Bash", input); err != nil {
			return err
		}
		c.Write(c.AssistantText("done"), c.ResultSuccess("done").With("total_cost_usd", 0.5))
		<-ctx.Done()
		return nil
	}}
	s := f.startShared(o)
	acl, spend := f.state(s.ID())
	send := &host.Command{Type: host.CommandSend, Text: "héllo"}
	for ctx, sentinel := range map[context.Context]error{f.ctx: team.ErrUnauthenticated, f.as("viewer"): team.ErrForbidden} {
		_, err := s.Do(ctx, send)
		if !errors.Is(err, sentinel) || host.ErrorCode(err) != host.CodeForbidden {
			t.Errorf("Do(send) = %v, want forbidden matching %v", err, sentinel)
		}
	}
	f.unchanged(s.ID(), acl, spend)
	if _, err := s.Do(f.as("collab"), send); err != nil {
		t.Fatal(err)
	}
	if ev := f.rec.last(t); ev.Action != team.ActionPrompt || ev.Actor != "collab@x.com" || ev.Detail != "chars=5" || ev.Session != s.ID() {
		t.Errorf("prompt recorded as %+v", ev)
	}
	var ap *host.Approval
	for ap == nil {
		if as := s.Approvals(); len(as) > 0 {
			ap = as[0]
		} else if f.ctx.Err() != nil {
			t.Fatal("no approval came")
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := s.Do(f.as("viewer"), &host.Command{Type: host.CommandAnswer, Approval: ap.Request.RequestID, Behavior: "allow"}); !errors.Is(err, team.ErrForbidden) {
		t.Errorf("viewer's answer: %v", err)
	}
	if _, err := s.Do(f.as("collab"), &host.Command{Type: host.CommandAnswer, Approval: ap.Request.RequestID, Behavior: "allow"}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(ap.Request.Input)
	ev := f.rec.last(t)
	if ev.Action != team.ActionApproval || ev.Tool != "Bash" || ev.Rule != "allow" || ev.InputDigest != hex.EncodeToString(sum[:]) ||
		ev.ActorName != "Colin" || strings.Contains(ev.Detail, "hostname") {
		t.Errorf("answer recorded as %+v", ev)
	}
	// The turn's cost lands on the owner, though the collaborator sent it.
	for {
		v, err := f.st.SpendOf(f.ctx, time.Now(), "owner@x.com")
		if err != nil {
			t.Fatal(err)
		}
		if v == 0.5 {
			break
		}
		if f.ctx.Err() != nil {
			t.Fatalf("owner's spend %v, want 0.5", v)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v, _ := f.st.SpendOf(f.ctx, time.Now(), "collab@x.com"); v != 0 {
		t.Errorf("collaborator charged %v", v)
	}
}

// A session started again under its id by someone else (an admin or a
// collaborator failing it over) keeps running as its owner's: Owner reads
// the owner from the ACL, and SessionOptionsFor the owner denies the
// owner's tools and counts the turns' cost to the owner, not to whoever
// asked (here an admin, whose own policy denies nothing).
func TestSessionOptionsForOwner(t *testing.T) {
	f := newFixture(t, false)
	f.shared("s1")
	if _, err := f.az.Owner(f.as("admin"), "nope"); !errors.Is(err, team.ErrNoACL) {
		t.Errorf("Owner of an unknown session: %v, want ErrNoACL", err)
	}
	own, err := f.az.Owner(f.as("admin"), "s1")
	if err != nil {
		t.Fatal(err)
	}
	if own.Subject != "owner@x.com" || own.Role != team.RoleMember || own.Name != "Olive" {
		t.Fatalf("Owner = %+v", own)
	}
	if o := f.az.SessionOptions(f.as("admin"), nil); len(o.CLI.DisallowedTools) != 0 {
		t.Fatalf("the admin's own options deny %v", o.CLI.DisallowedTools)
	}
	o := f.az.SessionOptionsFor(own, nil)
	if !reflect.DeepEqual(o.CLI.DisallowedTools, []string{"WebFetch"}) {
		t.Errorf("DisallowedTools %v, want the owner's [WebFetch]", o.CLI.DisallowedTools)
	}
	o.OnTurnCost(0.25)
	m, err := f.st.Spend(f.ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, map[string]float64{"owner@x.com": 0.25}) {
		t.Errorf("spend %v, want only the owner's 0.25", m)
	}
}

// An MCP server's form is answered through the same authorization point
// as any approval: a viewer's values are refused and never reach the
// server, a collaborator's do, and the audit log records the answer as
// rule "answer" with the server's tool and the fields filled, but not the
// values typed.
func TestSessionElicitation(t *testing.T) {
	f := newFixture(t, false)
	o := f.az.SessionOptions(f.as("owner"), &host.Options{Elicitations: true})
	got := make(chan string, 1)
	o.CLI.Transport = &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SystemInit(), c.AssistantToolUse("toolu_1", "mcp__deploy__pick", map[string]any{}))
		raw, err := c.Request(ctx, "elicitation", map[string]any{"mcp_server_name": "deploy", "message": "Which environment?",
			"requested_schema": map[string]any{"type": "object", "required": []string{"env"}, "properties": map[string]any{
				"env": map[string]any{"type": "string"}}}})
		if err != nil {
			return err
		}
		got <- string(raw)
		c.Write(c.ToolResult("toolu_1", "ok", false), c.AssistantText("done"), c.ResultSuccess("done"))
		<-ctx.Done()
		return nil
	}}
	s := f.startShared(o)
	if _, err := s.Do(f.as("collab"), &host.Command{Type: host.CommandSend, Text: "deploy"}); err != nil {
		t.Fatal(err)
	}
	var ap *host.Approval
	for l := range s.Watch(f.ctx) {
		if l.State == host.StateAwaitingAnswer && l.Approval != nil {
			ap = l.Approval
			break
		}
	}
	if ap == nil || ap.Kind != host.ApprovalElicitation {
		t.Fatalf("approval %+v, want an elicitation (%v)", ap, f.ctx.Err())
	}
	const secret = "staging-7f3a"
	answer := &host.Command{Type: host.CommandAnswer, Approval: ap.ID(), Behavior: "allow", Content: json.RawMessage(`{"env":"` + secret + `"}`)}
	if _, err := s.Do(f.as("viewer"), answer); !errors.Is(err, team.ErrForbidden) {
		t.Errorf("viewer's answer: %v", err)
	}
	if ev := f.rec.last(t); ev.Action != team.ActionRefused || ev.Actor != "viewer@x.com" {
		t.Errorf("viewer's answer recorded as %+v", ev)
	}
	if _, err := s.Do(f.as("collab"), answer); err != nil {
		t.Fatal(err)
	}
	if raw := <-got; raw != `{"action":"accept","content":{"env":"`+secret+`"}}` {
		t.Errorf("the server got %s", raw)
	}
	ev := f.rec.last(t)
	if ev.Action != team.ActionApproval || ev.Rule != "answer" || ev.Tool != "mcp__deploy" || ev.ActorName != "Colin" ||
		!strings.HasSuffix(ev.Detail, " fields=env") || strings.Contains(fmt.Sprintf("%+v", ev), secret) {
		t.Errorf("answer recorded as %+v", ev)
	}
}
