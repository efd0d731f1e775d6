package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// TestNATSPermissions runs the permissions docs/cluster.md gives
// (testdata/permissions.conf): agents and a client (serve's user) work
// under them (a turn, a snapshot, a session marked disconnected and taken
// back, with and without the client's marker, a failover), and
// the client's user cannot publish events.
func TestNATSPermissions(t *testing.T) {
	ctx := testCtx(t)
	ns := permissionedNATS(t)
	agent := nats.UserInfo("agent", "agent-secret")
	serve := nats.UserInfo("serve", "serve-secret")
	a1 := newAgent(t, ns.URL(), "a1", 2, agent)
	c := newClient(t, ns.URL(), serve)
	id, f := echoed(t, c, "one")
	if _, err := c.Snapshot(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The agent taking its session back says so itself when the client
	// could store no marker: on its own subject, the marker's being
	// serve's alone.
	cluster.FailMarkerAppends(c, 1<<20)
	reapOnce(t, c, id)
	stateAfterMarker(t, f, "idle")
	cluster.FailMarkerAppends(c, 0)
	reapUntilMarked(t, c, f, id)
	stateAfterMarker(t, f, "idle")
	send(t, c, id, "two")
	f.wait(t, "the turn after the marker", result("echo: two"))
	checkSeqs(t, f.list(), 1)
	// A failover: the mirror, the start queue and the registry work
	// under the agents' permissions. (The second turn must be mirrored
	// before the crash, or a2 resumes without it.)
	waitFor(t, "the second turn mirrored", mirrored(t, ns.URL(), id, "two", serve))
	newAgent(t, ns.URL(), "a2", 2, agent)
	cluster.Crash(a1)
	waitFor(t, "a1 gone", func() bool {
		as, err := c.Agents(ctx)
		return err == nil && len(as) == 1 && as[0].ID == "a2"
	})
	if _, err := c.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	send(t, c, id, "recall")
	f.wait(t, "the conversation on a2", result("remember: one|two"))
	checkSeqs(t, f.list(), 1)

	// serve's user may not publish events.
	denied := make(chan error, 8)
	nc, err := nats.Connect(ns.URL(), serve, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		denied <- err
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := js.Publish(pctx, "tether.v1.ev."+id, []byte(`{}`)); err == nil {
		t.Fatal("serve's user published an event")
	}
	select {
	case err := <-denied:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("publishing an event as serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no permission violation reported")
	}
}

// TestSetUpRefused: a user who may look the streams up but not create
// them (serve's permissions without STREAM.CREATE, as docs/cluster.md
// allows) gets the server's refusal naming the request on an empty
// cluster, not a wait for its ctx; once a user who may has created them,
// it starts.
func TestSetUpRefused(t *testing.T) {
	ctx := testCtx(t)
	reader := &server.User{Username: "reader", Password: "reader-secret", Permissions: &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{"$JS.API.INFO", "$JS.API.STREAM.INFO.*",
			"$JS.API.STREAM.MSG.GET.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.>", "tether.v1.start", "tether.v1.cmd.*"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "tether.v1.live.>"}},
	}}
	admin := &server.User{Username: "admin", Password: "admin-secret"}
	ns := newNATS(t, func(o *server.Options) { o.Users = []*server.User{reader, admin} })
	_, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.URL(), Limits: limits,
		NATS: []nats.Option{nats.UserInfo("reader", "reader-secret")}})
	if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), `"$JS.API.STREAM.CREATE.`+cluster.StreamStart+`"`) {
		t.Fatalf("a client that may not create the streams: got %v, want the refusal of STREAM.CREATE.%s", err, cluster.StreamStart)
	}
	if ctx.Err() != nil {
		t.Fatal("the refusal came when the ctx ended")
	}
	newClient(t, ns.URL(), nats.UserInfo("admin", "admin-secret"))
	newClient(t, ns.URL(), nats.UserInfo("reader", "reader-secret"))
}

// permissionedNATS runs a NATS server with testdata/permissions.conf's
// users: agent, serve and auditor, their passwords "<user>-secret".
func permissionedNATS(t *testing.T) *natsServer {
	t.Helper()
	return permissionedNATSFrom(t, "testdata/permissions.conf")
}

// permissionedNATSFrom runs NATS with the users of the configuration file
// conf (testdata/permissions.conf, or a variant of it).
func permissionedNATSFrom(t *testing.T, conf string) *natsServer {
	t.Helper()
	t.Setenv("TETHER_AGENT_PASSWORD", "agent-secret")
	t.Setenv("TETHER_SERVE_PASSWORD", "serve-secret")
	t.Setenv("TETHER_AUDITOR_PASSWORD", "auditor-secret")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	return newNATS(t, func(o *server.Options) {
		o.Accounts, o.Users = opts.Accounts, opts.Users
	})
}

// reapOnce marks the session disconnected in the registry, as a client
// that judged its agent gone does, exactly once: a reap that loses to
// the agent rewriting its entry at that moment (its heartbeat) is tried
// again.
func reapOnce(t *testing.T, c *cluster.Client, id string) {
	t.Helper()
	waitFor(t, "the session marked disconnected in the registry", func() bool {
		marked, err := cluster.ReapMarked(testCtx(t), c, id)
		if err != nil {
			t.Fatal(err)
		}
		return marked
	})
}

// reapUntilMarked marks a session disconnected as a client does when its
// agent's entry lapsed, until a marker more than its events had is there:
// a reap loses (and appends nothing) when the live agent rewrote the
// registry entry between the reap's read and its update.
func reapUntilMarked(t *testing.T, c *cluster.Client, f *follower, id string) {
	t.Helper()
	var last time.Time
	had := len(markers(f.list()))
	waitFor(t, "the disconnected marker", func() bool {
		if len(markers(f.list())) > had {
			return true
		}
		if time.Since(last) > 250*time.Millisecond {
			last = time.Now()
			if err := cluster.Reap(testCtx(t), c, id); err != nil {
				t.Fatal(err)
			}
		}
		return false
	})
}

// TestNATSPermissionsTeam runs a team's cluster under
// testdata/permissions.conf, each part on its own user as deployed: the
// agent's Authorizer (spend, audit) on the agent user; serve's (ACLs,
// sign-ins, spend read, audit write and read) on the serve user; tether
// audit on the auditor user. A session starts, is shared, runs a turn
// whose cost lands on its owner and is audited where it ran. Then what
// the permissions hold against: the auditor cannot append an event, and
// neither the agent nor serve can delete, purge or reconfigure the audit
// stream. (Both must append events, so both can append forged ones:
// subject permissions cannot tell a true event from a false one.)
func TestNATSPermissionsTeam(t *testing.T) {
	ctx := testCtx(t)
	ns := permissionedNATS(t)
	agentUser := nats.UserInfo("agent", "agent-secret")
	serveUser := nats.UserInfo("serve", "serve-secret")
	root := t.TempDir()
	cfg := testTeamConfig(t, root)
	js := func(o nats.Option) jetstream.JetStream {
		t.Helper()
		nc, err := nats.Connect(ns.URL(), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	authz := func(js jetstream.JetStream) (*team.Authorizer, *team.Audit) {
		t.Helper()
		st, err := team.OpenStore(ctx, js, nil)
		if err != nil {
			t.Fatalf("the store: %v", err)
		}
		au, err := team.OpenAudit(ctx, js, nil)
		if err != nil {
			t.Fatalf("the audit log: %v", err)
		}
		return team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: au, SessionID: cluster.HostSessionID}), au
	}
	// serve first, as a fresh deployment would: it creates the buckets
	// and the stream the agent then adopts.
	sjs := js(serveUser)
	serveAuthz, serveAudit := authz(sjs)
	logins, err := team.NewKVLoginStore(ctx, sjs)
	if err != nil {
		t.Fatalf("the sign-ins: %v", err)
	}
	agentAuthz, agentAudit := authz(js(agentUser))
	a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.URL(), NATS: []nats.Option{agentUser}, ID: "a1", Capacity: 2,
		Limits: limits, Logger: testLogger(), Team: agentAuthz,
		Session: &host.Options{CLI: &claude.Options{Cwd: root, Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	c := newClient(t, ns.URL(), serveUser)

	// A sign-in, then serve's path of a start: the policy, the start on
	// an agent, the ACL; a share; a turn.
	lid, err := logins.Create(ctx, alice, time.Hour)
	if err != nil {
		t.Fatalf("recording a sign-in: %v", err)
	}
	if _, _, err := logins.Get(ctx, lid); err != nil {
		t.Fatalf("reading a sign-in: %v", err)
	}
	actx := team.NewContext(ctx, alice)
	if err := serveAuthz.Start(actx, &team.StartCheck{Cwd: root}); err != nil {
		t.Fatal(err)
	}
	info := mustStart(actx, t, c, &cluster.StartOptions{Cwd: root})
	if err := serveAuthz.Created(actx, info.ID, info.Cwd); err != nil {
		t.Fatalf("storing the ACL: %v", err)
	}
	if err := serveAuthz.Share(actx, info.ID, []team.Grant{{Person: carol.Subject, Level: team.ShareCollaborator}}); err != nil {
		t.Fatalf("sharing: %v", err)
	}
	f := follow(t, c, info.ID, 0)
	if _, err := c.Command(team.NewContext(ctx, carol), info.ID, &host.Command{Type: host.CommandSend, Text: "one"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "carol's turn", result("echo: one"))
	waitFor(t, "the turn's cost on alice, as serve reads it", func() bool {
		s, err := serveAuthz.Spend(actx)
		if err != nil {
			t.Fatalf("reading spend: %v", err)
		}
		return len(s) == 1 && s[0].USD > 0
	})
	if err := logins.Revoke(ctx, lid); err != nil {
		t.Fatalf("revoking a sign-in: %v", err)
	}

	// The audit log holds what serve and the agent recorded, read by
	// serve and by the auditor.
	ajs := js(nats.UserInfo("auditor", "auditor-secret"))
	auditor, err := team.OpenAudit(ctx, ajs, &team.AuditOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("the auditor's audit log: %v", err)
	}
	for name, au := range map[string]*team.Audit{"serve": serveAudit, "auditor": auditor} {
		got := map[string]string{}
		for ev, err := range au.Query(ctx, &team.AuditQuery{Session: info.ID}) {
			if err != nil {
				t.Fatalf("%s's query: %v", name, err)
			}
			got[ev.Action] = ev.Actor
		}
		if got[team.ActionStart] != alice.Subject || got[team.ActionShare] != alice.Subject || got[team.ActionPrompt] != carol.Subject {
			t.Fatalf("%s reads the audit of the session as %v", name, got)
		}
	}

	// What the permissions refuse. A refused request gets no answer:
	// each attempt waits a moment; one let through would succeed, and
	// the count of events below would show it.
	refused := func() context.Context {
		c, cancel := context.WithTimeout(ctx, time.Second)
		t.Cleanup(cancel)
		return c
	}
	if _, err := ajs.Publish(refused(), team.AuditSubjectPrefix+team.ActionPrompt, []byte(`{"action":"prompt","actor":"forged"}`)); err == nil {
		t.Fatal("the auditor appended an audit event")
	}
	st, err := ajs.Stream(ctx, team.StreamAudit)
	if err != nil {
		t.Fatal(err)
	}
	before := st.CachedInfo().State.Msgs
	for name, j := range map[string]jetstream.JetStream{"agent": js(agentUser), "serve": sjs, "auditor": ajs} {
		if err := j.DeleteStream(refused(), team.StreamAudit); err == nil {
			t.Fatalf("%s deleted the audit stream", name)
		}
		their, err := j.Stream(ctx, team.StreamAudit)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := their.Purge(refused()); err == nil {
			t.Fatalf("%s purged the audit stream", name)
		}
		if err := their.DeleteMsg(refused(), 1); err == nil {
			t.Fatalf("%s deleted an audit event", name)
		}
		cfg := st.CachedInfo().Config
		cfg.MaxAge = time.Second
		if _, err := j.UpdateStream(refused(), cfg); err == nil {
			t.Fatalf("%s shortened the audit's retention", name)
		}
	}
	if i, err := st.Info(ctx); err != nil || i.State.Msgs != before || i.Config.MaxAge == time.Second {
		t.Fatalf("the audit stream changed: %+v, %v", i, err)
	}
	_ = agentAudit
}

// markers are the "disconnected" states among evs.
func markers(evs []host.Event) []host.Event {
	var ms []host.Event
	for _, ev := range evs {
		if state("disconnected")(ev) {
			ms = append(ms, ev)
		}
	}
	return ms
}
