package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/team"
)

// testTeam is a team's authorization point as an agent gets it: the
// real Authorizer, its ACLs and spend in the cluster's JetStream, a
// policy of one working-directory root, the modes default and plan and
// at most 2 sessions per member. It keeps the audit events.
type testTeam struct {
	*team.Authorizer
	st   *team.Store // the ACLs, for what serve does by hand (teamResumed)
	root string

	mu     sync.Mutex
	events []team.AuditEvent
}

func (tt *testTeam) Record(ctx context.Context, ev *team.AuditEvent) error {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.events = append(tt.events, *ev)
	return nil
}

// audit returns the events of action, as "actor session detail".
func (tt *testTeam) audit(action string) []string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	var out []string
	for _, ev := range tt.events {
		if ev.Action == action {
			out = append(out, ev.Actor+" "+ev.Session+" "+ev.Detail)
		}
	}
	return out
}

// testTeamConfig: alice and carol members (one working-directory root,
// the modes default and plan, at most 2 sessions), bob a viewer.
func testTeamConfig(t *testing.T, root string) *team.Config {
	t.Helper()
	cfg, err := team.ParseConfig([]byte(`
people:
  - {email: alice@example.com, name: Alice, role: member}
  - {email: bob@example.com, name: Bob, role: viewer}
  - {email: carol@example.com, name: Carol, role: member}
policies:
  member: {cwd_roots: ["` + root + `"], modes: [default, plan], max_sessions: 2}
isolation: "off"
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newTestTeam(t *testing.T, url string) *testTeam {
	t.Helper()
	return newTestTeamIn(t, url, t.TempDir())
}

// newTestTeamIn is newTestTeam with the members' root given.
func newTestTeamIn(t *testing.T, url, root string) *testTeam {
	t.Helper()
	cfg := testTeamConfig(t, root)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := team.OpenStore(testCtx(t), js, &team.StoreOptions{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	tt := &testTeam{root: root, st: st}
	tt.Authorizer = team.NewAuthorizer(cfg, st, &team.AuthorizerOptions{Recorder: tt, SessionID: cluster.HostSessionID})
	return tt
}

var (
	alice = &team.Identity{Subject: "alice@example.com", Name: "Alice", Role: team.RoleMember}
	bob   = &team.Identity{Subject: "bob@example.com", Name: "Bob", Role: team.RoleViewer}
	carol = &team.Identity{Subject: "carol@example.com", Name: "Carol", Role: team.RoleMember}
)

// teamCluster runs an agent serving a team and a client; the sessions'
// working directories must be under root.
func teamCluster(t *testing.T) (*testTeam, *cluster.Agent, *cluster.Client, *nats.Conn, string) {
	t.Helper()
	ns := newNATS(t, nil)
	tt := newTestTeam(t, ns.URL())
	a := teamAgent(t, ns.URL(), "a1", tt)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return tt, a, newClient(t, ns.URL()), nc, tt.root
}

// teamAgent starts an agent of the team on the fake CLI, with a CLI
// config folder of its own (a failover must carry the transcript over).
func teamAgent(t *testing.T, url, id string, tt *testTeam) *cluster.Agent {
	t.Helper()
	a, err := cluster.NewAgent(testCtx(t), &cluster.AgentOptions{
		URL: url, ID: id, Capacity: 4, Limits: limits, Logger: testLog(t), Team: tt.Authorizer,
		MirrorInterval: 20 * time.Millisecond,
		Session: &host.Options{CLI: &claude.Options{Cwd: tt.root, Transport: &claudetest.FakeCLI{Script: memoryCLI},
			Env: map[string]string{claude.EnvConfigDir: t.TempDir()}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// startAs starts a session as who, and stores its ACL as serve's
// Authorizer.Created does.
func startAs(t *testing.T, tt *testTeam, c *cluster.Client, who *team.Identity, grants ...team.Grant) cluster.SessionInfo {
	t.Helper()
	ctx := team.NewContext(testCtx(t), who)
	info := mustStart(ctx, t, c, &cluster.StartOptions{Cwd: tt.root})
	if err := tt.Created(ctx, info.ID, info.Cwd); err != nil {
		t.Fatal(err)
	}
	if len(grants) > 0 {
		if err := tt.Share(ctx, info.ID, grants); err != nil {
			t.Fatal(err)
		}
	}
	return info
}

// handMade puts a command on the bus as anyone with NATS credentials
// could, and returns the agent's reply.
func handMade(t *testing.T, nc *nats.Conn, id, body string) (code string) {
	t.Helper()
	r, err := nc.Request("tether.v1.cmd."+id, []byte(body), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Error == nil {
		return ""
	}
	return rep.Error.Code
}

// untouched checks that the session holds no prompt: nothing refused
// reached the CLI or the registry.
func untouched(t *testing.T, c *cluster.Client, id string) {
	t.Helper()
	ctx := team.NewContext(testCtx(t), alice)
	snap, err := c.Snapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Transcript) != 0 || len(snap.Deliveries) != 0 || snap.Ended || snap.PermissionMode == "plan" {
		t.Fatalf("the session changed: %d messages, %d deliveries, ended %v, mode %q", len(snap.Transcript), len(snap.Deliveries), snap.Ended, snap.PermissionMode)
	}
	info, err := c.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.LastPrompt != "" || info.Title != "" {
		t.Fatalf("the registry changed: %+v", info)
	}
}

func isForbidden(err error) bool {
	var ce *host.CommandError
	return errors.As(err, &ce) && ce.Code == host.CodeForbidden && errors.Is(err, host.ErrForbidden)
}

// An agent serving a team refuses a command, a start or a snapshot that
// names nobody, with the forbidden code, and nothing happens.
func TestTeamAgentRefusesAnonymous(t *testing.T) {
	tt, a, c, _, _ := teamCluster(t)
	ctx := testCtx(t)
	info := startAs(t, tt, c, alice)
	if _, err := c.Command(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "anonymous"}); !isForbidden(err) {
		t.Fatalf("a command without identity: %v, want forbidden", err)
	}
	if _, err := c.Snapshot(ctx, info.ID); !isForbidden(err) {
		t.Fatalf("a snapshot without identity: %v, want forbidden", err)
	}
	if _, err := c.Start(ctx, &cluster.StartOptions{ID: "anon", Cwd: tt.root}); !isForbidden(err) {
		t.Fatalf("a start without identity: %v, want forbidden", err)
	}
	if _, err := c.Session(ctx, "anon"); !errors.Is(err, cluster.ErrNoSession) {
		t.Fatalf("the refused start is in the registry: %v", err)
	}
	untouched(t, c, info.ID)
	if n := a.Sessions(); n != 1 {
		t.Fatalf("the agent runs %d sessions, want 1", n)
	}
}

// A viewer's identity is refused on send, set_mode, answer and close at
// the agent, even in a command put on the bus by hand, and nothing
// changes; the owner's command passes, as who they are.
func TestTeamAgentChecksTheSender(t *testing.T) {
	tt, _, c, nc, _ := teamCluster(t)
	info := startAs(t, tt, c, alice, team.Grant{Person: bob.Subject, Level: team.ShareViewer})
	bobJSON, _ := json.Marshal(bob)
	carolJSON, _ := json.Marshal(carol)
	for _, body := range []string{
		`{"type":"send","text":"from bob","identity":` + string(bobJSON) + `}`,
		`{"type":"set_mode","mode":"plan","identity":` + string(bobJSON) + `}`,
		`{"type":"interrupt","identity":` + string(bobJSON) + `}`,
		`{"type":"close","identity":` + string(bobJSON) + `}`,
		`{"type":"send","text":"from carol","identity":` + string(carolJSON) + `}`,
		`{"type":"send","text":"no one"}`,
	} {
		if code := handMade(t, nc, info.ID, body); code != host.CodeForbidden {
			t.Errorf("%s: code %q, want forbidden", body, code)
		}
	}
	// Through the client too.
	if _, err := c.Command(team.NewContext(testCtx(t), bob), info.ID, &host.Command{Type: host.CommandSend, Text: "from bob"}); !isForbidden(err) {
		t.Fatalf("bob's send: %v, want forbidden", err)
	}
	untouched(t, c, info.ID)
	// Bob still watches.
	if _, err := c.Snapshot(team.NewContext(testCtx(t), bob), info.ID); err != nil {
		t.Fatalf("bob's snapshot: %v", err)
	}
	// The owner's command passes, checked as alice.
	if _, err := c.Command(team.NewContext(testCtx(t), alice), info.ID, &host.Command{Type: host.CommandSend, Text: "from alice"}); err != nil {
		t.Fatalf("alice's send: %v", err)
	}
	// Recorded where it ran, under the cluster's id of the session.
	if got := tt.audit(team.ActionPrompt); !slices.Equal(got, []string{"alice@example.com " + info.ID + " chars=10"}) {
		t.Fatalf("prompts recorded: %q", got)
	}
	if n := len(tt.audit(team.ActionRefused)); n < 5 {
		t.Fatalf("%d refusals recorded, want the 5 with an identity at least", n)
	}
}

// A forged identity of a shape no front end makes (no subject, an
// unknown role, oversized) is refused as malformed before anything runs.
func TestTeamAgentRefusesForgedIdentity(t *testing.T) {
	tt, _, c, nc, _ := teamCluster(t)
	info := startAs(t, tt, c, alice)
	for _, id := range []string{
		`{"sub":"","role":"admin"}`,
		`{"sub":"alice@example.com","role":"root"}`,
		`{"sub":"alice@example.com"}`,
		`{"sub":"` + strings.Repeat("a", 4096) + `","role":"admin"}`,
		`"alice@example.com"`,
	} {
		if code := handMade(t, nc, info.ID, `{"type":"send","text":"forged","identity":`+id+`}`); code != "malformed" {
			t.Errorf("identity %.60s: code %q, want malformed", id, code)
		}
	}
	// The client refuses to send one too.
	_, err := c.Command(team.NewContext(testCtx(t), &team.Identity{Role: team.RoleAdmin}), info.ID, &host.Command{Type: host.CommandSend, Text: "forged"})
	if !errors.Is(err, cluster.ErrMalformed) {
		t.Fatalf("the client sent an identity without subject: %v", err)
	}
	untouched(t, c, info.ID)
}

// The agent applies the person's start policy itself: a working
// directory outside the roots, a mode not allowed, more sessions than
// allowed or a viewer's start are refused with the forbidden code before
// the registry or a CLI sees them.
func TestTeamAgentStartPolicy(t *testing.T) {
	tt, a, c, _, root := teamCluster(t)
	actx := team.NewContext(testCtx(t), alice)
	outside := t.TempDir()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		opts cluster.StartOptions
	}{
		{"cwd", actx, cluster.StartOptions{ID: "cwd", Cwd: outside}},
		{"mode", actx, cluster.StartOptions{ID: "mode", Cwd: root, PermissionMode: "acceptEdits"}},
		{"viewer", team.NewContext(testCtx(t), bob), cluster.StartOptions{ID: "viewer", Cwd: root}},
		{"resume from disk", actx, cluster.StartOptions{ID: "disk", Cwd: root, Resume: "6f1d7a52-8ad3-4c55-9d35-ef9f3c7d1a11"}},
	} {
		_, err := c.Start(tc.ctx, &tc.opts)
		if !isForbidden(err) {
			t.Errorf("%s: %v, want forbidden", tc.name, err)
		}
		if _, err := c.Session(actx, tc.opts.ID); !errors.Is(err, cluster.ErrNoSession) {
			t.Errorf("%s: the refused start is in the registry: %v", tc.name, err)
		}
	}
	if _, err := c.Start(actx, &cluster.StartOptions{Cwd: outside}); !strings.Contains(fmt.Sprint(err), "is outside") {
		t.Fatalf("the refusal's message: %v", err)
	}
	// In a subfolder of the root, in plan mode: allowed; the agent counts
	// alice's running sessions across the cluster's registry.
	sub := filepath.Join(root, "proj")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Start(actx, &cluster.StartOptions{Cwd: sub, PermissionMode: "plan"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Start(actx, &cluster.StartOptions{ID: "third", Cwd: sub}); !isForbidden(err) || !strings.Contains(err.Error(), "you run 2 sessions") {
		t.Fatalf("alice's third session: %v, want forbidden (max_sessions)", err)
	}
	// Carol's count is her own.
	if _, err := c.Start(team.NewContext(testCtx(t), carol), &cluster.StartOptions{Cwd: sub}); err != nil {
		t.Fatalf("carol's first session: %v", err)
	}
	if n := a.Sessions(); n != 3 {
		t.Fatalf("the agent runs %d sessions, want 3", n)
	}
	rules := map[string]bool{}
	tt.mu.Lock()
	for _, ev := range tt.events {
		if ev.Outcome == team.OutcomeRefused {
			rules[ev.Rule] = true
		}
	}
	tt.mu.Unlock()
	for _, r := range []string{"cwd_roots", "modes", "role", "max_sessions"} {
		if !rules[r] {
			t.Errorf("no refusal by %s recorded (%v)", r, rules)
		}
	}
}

// The agent's count of a person's open sessions (what max_sessions is
// checked against) is exact while their records are being written, as a
// running session's are: the bucket's key listing could call itself
// complete early and leave keys out, and a third session got past a
// limit of two (TestTeamAgentStartPolicy, once in many runs).
func TestTeamRunningWhileRecordsChange(t *testing.T) {
	_, a, _, nc, _ := teamCluster(t)
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, cluster.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	// Three of alice's sessions asleep (no agent to fence the writes),
	// rewritten all along.
	put := func(i int) error {
		data, _ := json.Marshal(cluster.SessionInfo{ID: fmt.Sprint("sleeper", i%3), Person: alice.Subject,
			State: host.StateAsleep.String(), Updated: time.Now()})
		_, err := kv.Put(ctx, fmt.Sprint("sleeper", i%3), data)
		return err
	}
	for i := range 3 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(i); err != nil && ctx.Err() == nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range 200 {
		if n, err := cluster.Running(ctx, a, alice.Subject); err != nil || n != 3 {
			t.Fatalf("count %d: %d sessions (%v), want 3", i, n, err)
		}
	}
}

// A snapshot over the bus needs the viewer's access at the agent: a
// person the session is not shared with is refused, even by hand.
func TestTeamAgentSnapshotAccess(t *testing.T) {
	tt, _, c, nc, _ := teamCluster(t)
	info := startAs(t, tt, c, alice, team.Grant{Person: bob.Subject, Level: team.ShareViewer})
	if _, err := c.Snapshot(team.NewContext(testCtx(t), carol), info.ID); !isForbidden(err) {
		t.Fatalf("carol's snapshot: %v, want forbidden", err)
	}
	for _, who := range []*team.Identity{alice, bob} {
		snap, err := c.Snapshot(team.NewContext(testCtx(t), who), info.ID)
		if err != nil || snap.ID == "" {
			t.Fatalf("%s's snapshot: %v", who.Name, err)
		}
	}
	carolJSON, _ := json.Marshal(map[string]any{"identity": carol})
	m := nats.NewMsg("tether.v1.cmd." + info.ID)
	m.Header.Set("Tether-Op", "snapshot")
	m.Data = carolJSON
	r, err := nc.RequestMsg(m, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.Data), `"transcript"`) || !strings.Contains(string(r.Data), `"forbidden"`) {
		t.Fatalf("carol's hand-made snapshot: %.200s", r.Data)
	}
}

// An approval answered through the cluster is journaled with the name of
// whoever answered, from the identity that came with the answer, and
// recorded in the audit with its tool and the digest of its input.
func TestTeamAgentApprovalAnsweredBy(t *testing.T) {
	tt, _, c, _, _ := teamCluster(t)
	info := startAs(t, tt, c, alice)
	actx := team.NewContext(testCtx(t), alice)
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "approve"}); err != nil {
		t.Fatal(err)
	}
	f := follow(t, c, info.ID, 0)
	var approval string
	deadline := time.Now().Add(time.Minute)
	for approval == "" {
		snap, err := c.Snapshot(actx, info.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(snap.Approvals) > 0 {
			approval = snap.Approvals[0].ID
		} else if time.Now().After(deadline) {
			t.Fatal("no approval")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandAnswer, Approval: approval, Behavior: "allow"}); err != nil {
		t.Fatal(err)
	}
	for {
		f.mu.Lock()
		var by string
		found := false
		for _, ev := range f.events {
			if ev.Kind == host.EventApprovalResolved {
				var r host.ApprovalResolved
				json.Unmarshal(ev.Data, &r)
				by, found = r.AnsweredBy, true
			}
		}
		f.mu.Unlock()
		if found {
			if by != "Alice" {
				t.Fatalf("answered_by %q, want Alice", by)
			}
			break
		}
		select {
		case <-f.change:
		case <-time.After(time.Minute):
			t.Fatal("no approval_resolved event")
		}
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, ev := range tt.events {
		if ev.Action == team.ActionApproval {
			if ev.Actor != alice.Subject || ev.Session != info.ID || ev.Tool != "Bash" || len(ev.InputDigest) != 64 || ev.Rule != "allow" {
				t.Fatalf("approval recorded as %+v", ev)
			}
			return
		}
	}
	t.Fatal("the approval was not recorded")
}

// sharedTurn is a team agent's session of alice's, shared with carol as
// a collaborator, after alice's first turn ("apples"), mirrored and
// counted to her spend.
type sharedTurn struct {
	ns         *natsServer
	tt         *testTeam
	a1         *cluster.Agent
	c          *cluster.Client
	info       cluster.SessionInfo
	actx, cctx context.Context // alice's, carol's
	spent      func(context.Context) float64
	f          *follower
}

func alicesTurnSharedWithCarol(t *testing.T) *sharedTurn {
	t.Helper()
	w := &sharedTurn{ns: newNATS(t, nil)}
	w.tt = newTestTeam(t, w.ns.URL())
	w.a1 = teamAgent(t, w.ns.URL(), "a1", w.tt)
	w.c = newClient(t, w.ns.URL())
	w.info = startAs(t, w.tt, w.c, alice, team.Grant{Person: carol.Subject, Level: team.ShareCollaborator})
	w.actx, w.cctx = team.NewContext(testCtx(t), alice), team.NewContext(testCtx(t), carol)
	w.spent = spentBy(t, w.tt)
	w.f = follow(t, w.c, w.info.ID, 0)
	if _, err := w.c.Command(w.actx, w.info.ID, &host.Command{Type: host.CommandSend, Text: "apples"}); err != nil {
		t.Fatal(err)
	}
	w.f.wait(t, "alice's turn", result("echo: apples"))
	waitFor(t, "the transcript mirrored", mirrored(t, w.ns.URL(), w.info.ID, "apples"))
	waitFor(t, "alice's turn counted", func() bool { return w.spent(w.actx) > 0 })
	return w
}

// spentBy returns what the person in a ctx spent today, per the team's
// store.
func spentBy(t *testing.T, tt *testTeam) func(ctx context.Context) float64 {
	return func(ctx context.Context) float64 {
		t.Helper()
		s, err := tt.Spend(ctx)
		if err != nil || len(s) > 1 {
			t.Fatalf("spend: %+v, %v", s, err)
		}
		if len(s) == 0 {
			return 0
		}
		return s[0].USD
	}
}

// A failover that a collaborator asks for keeps the session its owner's:
// the turns after it count to the owner's daily spend, not to the
// collaborator who resumed it and sent the prompt.
func TestTeamAgentFailoverBillsTheOwner(t *testing.T) {
	w := alicesTurnSharedWithCarol(t)
	ns, tt, a1, c, info, actx, cctx, spent, f := w.ns, w.tt, w.a1, w.c, w.info, w.actx, w.cctx, w.spent, w.f
	before := spent(actx)

	cluster.Crash(a1)
	waitDisconnected(t, actx, c, info.ID)
	teamAgent(t, ns.URL(), "a2", tt)
	if _, err := c.Resume(cctx, info.ID); err != nil {
		t.Fatalf("carol's failover: %v", err)
	}
	if _, err := c.Command(cctx, info.ID, &host.Command{Type: host.CommandSend, Text: "pears"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "carol's turn after the failover", result("echo: pears"))
	waitFor(t, "carol's turn counted to alice", func() bool { return spent(actx) > before })
	if v := spent(cctx); v != 0 {
		t.Fatalf("carol was charged $%v for alice's session", v)
	}
}

// A session that ended, resumed in its place by a collaborator, stays
// its owner's, as on a lone serve and as in a failover: the registry
// names the owner as its person, and its turns count to the owner's
// daily spend, not to the collaborator who resumed it and sent the
// prompt.
func TestTeamAgentResumeKeepsTheOwner(t *testing.T) {
	w := alicesTurnSharedWithCarol(t)
	tt, c, info, actx, cctx, spent := w.tt, w.c, w.info, w.actx, w.cctx, w.spent
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "exit"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session ended", func() bool {
		s, err := c.Session(actx, info.ID)
		return err == nil && s.Ended && !s.Closed
	})
	before := spent(actx)

	next, err := c.Resume(cctx, info.ID)
	if err != nil {
		t.Fatalf("carol's resume: %v", err)
	}
	if next.ID == info.ID || next.Person != alice.Subject {
		t.Fatalf("the resumed session: %+v, want a new one of %s's", next, alice.Subject)
	}
	// What serve does after a resume (teamResumed): the new id takes
	// its predecessor's ACL.
	acl, err := tt.st.ACL(actx, info.ID)
	if err != nil || acl == nil {
		t.Fatalf("the ended session's ACL: %+v, %v", acl, err)
	}
	cp := *acl
	cp.Session = next.ID
	if err := tt.st.PutACL(actx, &cp); err != nil {
		t.Fatal(err)
	}
	g := follow(t, c, next.ID, 0)
	if _, err := c.Command(cctx, next.ID, &host.Command{Type: host.CommandSend, Text: "pears"}); err != nil {
		t.Fatal(err)
	}
	g.wait(t, "carol's turn after the resume", result("echo: pears"))
	waitFor(t, "carol's turn counted to alice", func() bool { return spent(actx) > before })
	if v := spent(cctx); v != 0 {
		t.Fatalf("carol was charged $%v for alice's session", v)
	}
}

// A draining agent of a team hands its sessions over on their owners'
// behalf: the agent taking one checks the owner's identity as for any
// failover (a request without one is refused), and the session carries
// on there with its conversation.
func TestTeamAgentDrainHandsOver(t *testing.T) {
	ns := newNATS(t, nil)
	tt := newTestTeam(t, ns.URL())
	a1 := teamAgent(t, ns.URL(), "a1", tt)
	c := newClient(t, ns.URL())
	info := startAs(t, tt, c, alice)
	actx := team.NewContext(testCtx(t), alice)
	f := follow(t, c, info.ID, 0)
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "apples"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the first turn", result("echo: apples"))
	teamAgent(t, ns.URL(), "a2", tt)
	if err := a1.Drain(actx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session on a2", func() bool {
		s, err := c.Session(actx, info.ID)
		// Ready, not just claimed: a2 writes the entry ("starting")
		// before its CLI is up and it listens for commands.
		return err == nil && s.Agent == "a2" && !s.Moving && (s.State == "ready" || s.State == "idle")
	})
	if _, err := c.Command(actx, info.ID, &host.Command{Type: host.CommandSend, Text: "recall"}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "the conversation remembered", resultContaining("remember: apples"))
}
