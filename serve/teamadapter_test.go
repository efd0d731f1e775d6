package serve_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/team"
)

// memRecorder keeps what it is given.
type memRecorder struct {
	mu  sync.Mutex
	evs []*team.AuditEvent
}

func (r *memRecorder) Record(_ context.Context, ev *team.AuditEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
	return nil
}

func (r *memRecorder) actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.evs {
		out = append(out, ev.Action+"/"+ev.Outcome+"/"+ev.Rule)
	}
	return out
}

// NewTeamAuthorizer passes each of the server's questions to package
// team's real Authorizer and Store, converting what differs: a start
// check, a session without ACL (nil, nil rather than ErrNoACL), spend.
func TestNewTeamAuthorizer(t *testing.T) {
	ctx := testCtx(t)
	st := localTeamStore(t, ctx)
	cfg, err := team.ParseConfig([]byte(`people:
  - {email: alice@example.com, name: Alice, role: member}
  - {email: bob@example.com, name: Bob, role: member}
  - {email: root@example.com, name: Root, role: admin}
policies:
  member: {cwd_roots: ["/srv/{user}"], models: [sonnet], denied_tools: [WebFetch], max_sessions: 2, daily_budget_usd: 5}
isolation: off
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	ta := serve.NewTeamAuthorizer(team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: rec}), st)
	as := func(email string) context.Context {
		id, err := cfg.Resolve(&team.Identity{Subject: email, Email: email})
		if err != nil {
			t.Fatal(err)
		}
		return team.NewContext(ctx, id)
	}
	alice, bob, root := as("alice@example.com"), as("bob@example.com"), as("root@example.com")

	// Start: every field of the server's check reaches the policy.
	for _, c := range []struct {
		check serve.StartCheck
		rule  string
	}{
		{serve.StartCheck{Cwd: "/srv/alice"}, ""},
		{serve.StartCheck{Cwd: "/srv/bob"}, "cwd_roots"},
		{serve.StartCheck{Cwd: "/srv/alice", Model: "opus"}, "models"},
		{serve.StartCheck{Cwd: "/srv/alice", Mode: "bypassPermissions"}, "allow_bypass"},
		{serve.StartCheck{Cwd: "/srv/alice", Running: 2}, "max_sessions"},
	} {
		err := ta.Start(alice, &c.check)
		var pe *team.PolicyError
		if c.rule == "" && err != nil || c.rule != "" && (!errors.As(err, &pe) || pe.Rule != c.rule) {
			t.Errorf("Start %+v: %v, want rule %q", c.check, err, c.rule)
		}
	}

	// No ACL yet: nil, nil; admins see it, others do not.
	if acl, err := ta.ACL(alice, "s1"); acl != nil || err != nil {
		t.Fatalf("ACL of an unknown session: %+v, %v", acl, err)
	}
	if ta.Visible(alice, nil) || !ta.Visible(root, nil) {
		t.Fatal("a session without ACL: visible to a member, or hidden from an admin")
	}
	if err := ta.Created(alice, "s1", "/srv/alice"); err != nil {
		t.Fatal(err)
	}
	acl, err := ta.ACL(bob, "s1")
	if err != nil || acl == nil || acl.Owner != "alice@example.com" || acl.Cwd != "/srv/alice" {
		t.Fatalf("ACL after Created: %+v, %v", acl, err)
	}
	if !ta.Visible(alice, acl) || ta.Visible(bob, acl) {
		t.Fatal("visibility of alice's session")
	}
	if _, err := ta.Require(bob, "s1", team.AccessView, "subscribe"); !errors.Is(err, team.ErrForbidden) {
		t.Fatalf("bob's subscribe: %v", err)
	}
	if err := ta.Command(bob, "s1", &host.Command{Type: host.CommandSend, Text: "hi"}); !errors.Is(err, team.ErrForbidden) {
		t.Fatalf("bob's send: %v", err)
	}
	if err := ta.Share(bob, "s1", []team.Grant{{Person: "bob@example.com", Level: team.ShareCollaborator}}); !errors.Is(err, team.ErrForbidden) {
		t.Fatalf("bob shares alice's session: %v", err)
	}
	if err := ta.Share(alice, "s1", []team.Grant{{Person: "bob@example.com", Level: team.ShareViewer}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.Require(bob, "s1", team.AccessView, "subscribe"); err != nil {
		t.Fatalf("bob, a viewer now, subscribes: %v", err)
	}
	if err := ta.Command(bob, "s1", &host.Command{Type: host.CommandInterrupt}); !errors.Is(err, team.ErrForbidden) {
		t.Fatalf("a viewer's interrupt: %v", err)
	}
	if err := ta.Command(alice, "s1", &host.Command{Type: host.CommandSetModel, Model: "opus"}); !errors.Is(err, team.ErrPolicy) {
		t.Fatalf("a model outside the policy: %v", err)
	}
	if err := ta.Command(alice, "s1", &host.Command{Type: host.CommandSend, Text: "hi"}); err != nil {
		t.Fatalf("the owner's send: %v", err)
	}

	// PutACL stores a copy under another id (a resumed session's).
	cp := *acl
	cp.Session = "s2"
	if err := ta.PutACL(alice, &cp); err != nil {
		t.Fatal(err)
	}
	if got, err := ta.ACL(alice, "s2"); err != nil || got == nil || got.Owner != "alice@example.com" {
		t.Fatalf("ACL of s2: %+v, %v", got, err)
	}

	// SessionOptions: the policy's denied tools, and an Authorize hook.
	o := ta.SessionOptions(alice, &host.Options{})
	if o.CLI == nil || !slices.Contains(o.CLI.DisallowedTools, "WebFetch") || o.Commands == nil || o.Commands.Authorize == nil {
		t.Fatalf("session options %+v", o)
	}

	// Spend: converted, a member sees themselves, an admin everyone.
	if err := st.AddSpend(ctx, "alice@example.com", 1.5); err != nil {
		t.Fatal(err)
	}
	sp, err := ta.Spend(alice)
	if err != nil || len(sp) != 1 || sp[0] != (serve.PersonSpend{Person: "alice@example.com", Name: "Alice", USD: 1.5, BudgetUSD: 5}) {
		t.Fatalf("alice's spend: %+v, %v", sp, err)
	}
	if sp, err := ta.Spend(root); err != nil || len(sp) != 2 {
		t.Fatalf("the admin's spend: %+v, %v", sp, err)
	}

	// Refusals went to the Recorder; what was allowed at the front end
	// did not (the host records it where it runs).
	want := []string{"refused/refused/cwd_roots", "refused/refused/models", "refused/refused/allow_bypass", "refused/refused/max_sessions",
		"session_start/ok/", "refused/refused/access", "refused/refused/access", "refused/refused/access", "session_share/ok/",
		"refused/refused/access", "refused/refused/models"}
	if got := rec.actions(); !slices.Equal(got, want) {
		t.Errorf("recorded %q\nwant     %q", got, want)
	}
}

// localTeamStore is a team store on a local JetStream in a test folder,
// as tether serve --team keeps it on one machine.
func localTeamStore(t *testing.T, ctx context.Context) *team.Store {
	t.Helper()
	ljs, err := team.StartLocalJetStream(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ljs.Close() })
	st, err := team.OpenStore(ctx, ljs.JetStream(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
