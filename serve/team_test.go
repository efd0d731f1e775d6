package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
	"github.com/tetherhq/tether/team"
)

// The people of the team tests: the header X-Test-User names who a
// request comes from (fakeAuth); the configuration gives their role.
var testPeople = map[string]*team.Identity{
	"alice@example.com": {Subject: "alice@example.com", Email: "alice@example.com", Name: "Alice Example", Role: team.RoleMember},
	"bob@example.com":   {Subject: "bob@example.com", Email: "bob@example.com", Name: "Bob", Role: team.RoleMember},
	"carol@example.com": {Subject: "carol@example.com", Email: "carol@example.com", Name: "Carol", Role: team.RoleMember},
	"vera@example.com":  {Subject: "vera@example.com", Email: "vera@example.com", Name: "Vera Viewer", Role: team.RoleViewer},
	"root@example.com":  {Subject: "root@example.com", Email: "root@example.com", Name: "Ada Admin", Role: team.RoleAdmin},
}

// fakeAuth believes the X-Test-User header: the tests are about what
// the server does with an identity, not how it is established.
type fakeAuth struct{}

func (fakeAuth) Identify(r *http.Request) (*team.Identity, error) {
	u := r.Header.Get("X-Test-User")
	if u == "" {
		return nil, team.ErrUnauthenticated
	}
	return &team.Identity{Subject: u, Email: u}, nil
}

func (fakeAuth) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "sign-in routes") })
}

// fakeConfig admits testPeople only; each has a workspace under root.
type fakeConfig struct{ root string }

func (c *fakeConfig) Resolve(id *team.Identity) (*team.Identity, error) {
	p, ok := testPeople[id.Subject]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not on the team", team.ErrUnauthenticated, id.Subject)
	}
	cp := *p
	return &cp, nil
}

func (c *fakeConfig) Workspace(id *team.Identity) string {
	return filepath.Join(c.root, strings.SplitN(id.Subject, "@", 2)[0])
}

// fakeAuthz is an in-memory Authorizer with the contract's rules: ACL
// access, viewers start nothing, a spent budget refuses starts and
// sends. It counts the checks made where the session runs (host).
type fakeAuthz struct {
	mu         sync.Mutex
	acls       map[string]*team.ACL
	spent      map[string]bool
	hostChecks []string // "subject command" of every host-side check
	events     []*team.AuditEvent
}

func newFakeAuthz() *fakeAuthz {
	return &fakeAuthz{acls: map[string]*team.ACL{}, spent: map[string]bool{}}
}

func (a *fakeAuthz) Record(ctx context.Context, ev *team.AuditEvent) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, ev)
	return nil
}

func (a *fakeAuthz) access(ctx context.Context, sid string) (team.Access, *team.ACL, error) {
	id, ok := team.FromContext(ctx)
	if !ok {
		return team.AccessNone, nil, team.ErrUnauthenticated
	}
	a.mu.Lock()
	acl := a.acls[sid]
	a.mu.Unlock()
	if id.Role == team.RoleAdmin {
		return team.AccessOwn, acl, nil
	}
	return acl.Access(id), acl, nil
}

func (a *fakeAuthz) Require(ctx context.Context, sid string, need team.Access, what string) (*team.ACL, error) {
	acc, acl, err := a.access(ctx, sid)
	if err != nil {
		return nil, err
	}
	if acc < need {
		id, _ := team.FromContext(ctx)
		a.Record(ctx, &team.AuditEvent{Actor: id.Subject, Action: team.ActionRefused, Session: sid, Outcome: team.OutcomeRefused, Rule: "access", Detail: what})
		return nil, a.refuse(id, "access", "session "+sid+" is not shared with you", team.ErrForbidden)
	}
	return acl, nil
}

func (a *fakeAuthz) Visible(ctx context.Context, acl *team.ACL) bool {
	id, _ := team.FromContext(ctx)
	return id != nil && (id.Role == team.RoleAdmin || acl.Access(id) > team.AccessNone)
}

func (a *fakeAuthz) refuse(id *team.Identity, rule, msg string, err error) error {
	return &team.PolicyError{Subject: id.Subject, Rule: rule, Message: msg, Err: err}
}

func (a *fakeAuthz) Start(ctx context.Context, c *serve.StartCheck) error {
	id, _ := team.FromContext(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case id.Role == team.RoleViewer:
		return a.refuse(id, "role", "viewers start no sessions", team.ErrForbidden)
	case a.spent[id.Subject]:
		return a.refuse(id, "daily_budget_usd", "daily budget of $5.00 spent", team.ErrBudget)
	}
	return nil
}

func (a *fakeAuthz) Created(ctx context.Context, sid, cwd string) error {
	id, _ := team.FromContext(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acls[sid] = &team.ACL{Session: sid, Owner: id.Subject, OwnerName: id.DisplayName(), Cwd: cwd}
	return nil
}

func (a *fakeAuthz) check(ctx context.Context, sid string, c *host.Command) error {
	acc, _, err := a.access(ctx, sid)
	if err != nil {
		return err
	}
	id, _ := team.FromContext(ctx)
	need := team.AccessCollaborate
	switch {
	case c.Type == host.CommandClose:
		need = team.AccessOwn
	case c.Type.ReadOnly():
		need = team.AccessView // as team.Authorizer: viewers read
	}
	if acc < need {
		return a.refuse(id, "access", "not yours", team.ErrForbidden)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.Type == host.CommandSend && a.spent[id.Subject] {
		return a.refuse(id, "daily_budget_usd", "daily budget of $5.00 spent ($5.12 today); it resets at 00:00 UTC", team.ErrBudget)
	}
	return nil
}

func (a *fakeAuthz) Command(ctx context.Context, sid string, c *host.Command) error {
	if err := a.check(ctx, sid, c); err != nil {
		id, _ := team.FromContext(ctx)
		a.Record(ctx, &team.AuditEvent{Actor: id.Subject, Action: team.ActionRefused, Session: sid, Outcome: team.OutcomeRefused, Detail: string(c.Type)})
		return err
	}
	return nil
}

func (a *fakeAuthz) Share(ctx context.Context, sid string, grants []team.Grant) error {
	acc, acl, err := a.access(ctx, sid)
	if err != nil {
		return err
	}
	id, _ := team.FromContext(ctx)
	if acc < team.AccessOwn || acl == nil {
		return a.refuse(id, "access", "only the owner shares a session", team.ErrForbidden)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cp := *acl
	cp.Grants = grants
	a.acls[sid] = &cp
	return nil
}

func (a *fakeAuthz) SessionOptions(ctx context.Context, o *host.Options) *host.Options {
	cp := *o
	cp.Commands = &host.CommandPolicy{Authorize: func(ctx context.Context, s *host.Session, c *host.Command) error {
		id, _ := team.FromContext(ctx)
		a.mu.Lock()
		a.hostChecks = append(a.hostChecks, subjectOr(id)+" "+string(c.Type))
		a.mu.Unlock()
		return a.check(ctx, s.ID(), c)
	}}
	return &cp
}

func subjectOr(id *team.Identity) string {
	if id == nil {
		return "-"
	}
	return id.Subject
}

func (a *fakeAuthz) Spend(ctx context.Context) ([]serve.PersonSpend, error) {
	id, _ := team.FromContext(ctx)
	a.mu.Lock()
	usd := 1.25
	if a.spent[id.Subject] {
		usd = 5.12
	}
	a.mu.Unlock()
	return []serve.PersonSpend{{Person: id.Subject, Name: id.DisplayName(), USD: usd, BudgetUSD: 5}}, nil
}

func (a *fakeAuthz) ACL(ctx context.Context, sid string) (*team.ACL, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acls[sid], nil
}

func (a *fakeAuthz) PutACL(ctx context.Context, acl *team.ACL) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acls[acl.Session] = acl
	return nil
}

func (a *fakeAuthz) Query(ctx context.Context, q *serve.AuditQuery) iter.Seq2[*team.AuditEvent, error] {
	return func(yield func(*team.AuditEvent, error) bool) {
		a.mu.Lock()
		evs := append([]*team.AuditEvent(nil), a.events...)
		a.mu.Unlock()
		for _, ev := range evs {
			if q.Actor != "" && ev.Actor != q.Actor {
				continue
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// teamEnv is a team's server on the fake CLI.
type teamEnv struct {
	t     *testing.T
	http  *httptest.Server
	authz *fakeAuthz
	cfg   *fakeConfig
	m     *host.Manager // the local backend's sessions
}

func newTeamEnv(t *testing.T) *teamEnv { t.Helper(); return newTeamEnvWith(t, nil) }

// newTeamEnvWith is newTeamEnv with more server options (Team is set).
func newTeamEnvWith(t *testing.T, so *serve.Options) *teamEnv {
	t.Helper()
	root := t.TempDir()
	cfg := &fakeConfig{root: root}
	for u := range testPeople {
		if err := os.MkdirAll(cfg.Workspace(&team.Identity{Subject: u}), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	authz := newFakeAuthz()
	to := &serve.TeamOptions{Auth: fakeAuth{}, Config: cfg, Authorizer: authz, Audit: authz, Recorder: authz}
	return teamServer(t, to, cfg, authz, fakeCLI, so)
}

// teamServer serves a team (to) over a local backend whose CLIs run
// script, for as long as the test; so has more server options (nil: none).
func teamServer(t *testing.T, to *serve.TeamOptions, cfg *fakeConfig, authz *fakeAuthz, script func(context.Context, *claudetest.CLI) error, so *serve.Options) *teamEnv {
	t.Helper()
	m := host.NewManager(nil)
	b := serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: script}}}, Team: to})
	o := serve.Options{}
	if so != nil {
		o = *so
	}
	o.Team = to
	srv := serve.NewServer(b, &o)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		m.Close()
	})
	return &teamEnv{t: t, http: hs, authz: authz, cfg: cfg, m: m}
}

// as sends an HTTP request as user ("" = nobody) and returns the status,
// the error code and the body.
func (e *teamEnv) as(user, method, path, body string, hdr ...string) (int, string, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", e.http.URL)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb struct{ Error *serve.Error }
	_ = json.Unmarshal(b, &eb)
	code := ""
	if eb.Error != nil {
		code = eb.Error.Code
	}
	return resp.StatusCode, code, b
}

// dial opens a WebSocket as user.
func (e *teamEnv) dial(ctx context.Context, user string) *wsClient {
	e.t.Helper()
	return dialWS(e.t, ctx, e.http.URL, &servetest.DialOptions{Header: http.Header{"X-Test-User": {user}}})
}

func sessionsOf(t *testing.T, cl *wsClient, ctx context.Context) map[string]serve.SessionInfo {
	t.Helper()
	var r struct{ Sessions []serve.SessionInfo }
	if err := json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]serve.SessionInfo{}
	for _, si := range r.Sessions {
		out[si.ID] = si
	}
	return out
}

func wantRefused(t *testing.T, what string, f *frame, code string) {
	t.Helper()
	if f.Error == nil || f.Error.Code != code {
		t.Fatalf("%s: %s, want error %s", what, f.raw, code)
	}
}

func snapshotAs(t *testing.T, e *teamEnv, user, id string) *host.Snapshot {
	t.Helper()
	st, code, b := e.as(user, "GET", "/api/sessions/"+id+"/snapshot", "")
	if st != 200 {
		t.Fatalf("snapshot as %s: %d %s", user, st, code)
	}
	var sn host.Snapshot
	if err := json.Unmarshal(b, &sn); err != nil {
		t.Fatal(err)
	}
	return &sn
}

// Without a sign-in only the UI's files and /auth/ answer; the token
// login is gone; with one, /api/me says who and what role.
func TestTeamSignIn(t *testing.T) {
	ctx := testCtx(t)
	e := newTeamEnv(t)
	for _, c := range []struct {
		user, method, path string
		status             int
		code               string
	}{
		{"", "GET", "/api/sessions", 401, serve.CodeUnauthenticated},
		{"", "GET", "/api/me", 401, serve.CodeUnauthenticated},
		{"", "GET", "/api/spend", 401, serve.CodeUnauthenticated},
		{"", "GET", "/api/audit", 401, serve.CodeUnauthenticated},
		{"", "GET", "/ws", 401, serve.CodeUnauthenticated},
		{"mallory@example.com", "GET", "/api/sessions", 401, serve.CodeUnauthenticated}, // not on the team
		{"", "POST", "/auth", 404, serve.CodeNotFound},                                  // the token login is off
		{"", "POST", "/logout", 404, serve.CodeNotFound},
		{"", "GET", "/", 200, ""}, // the UI loads, to show its sign-in page
		{"", "GET", "/auth/login", 200, ""},
		{"", "GET", "/healthz", 200, ""},
	} {
		st, code, _ := e.as(c.user, c.method, c.path, "")
		if st != c.status || code != c.code {
			t.Errorf("%s %s as %q: %d %q, want %d %q", c.method, c.path, c.user, st, code, c.status, c.code)
		}
	}
	st, _, b := e.as("alice@example.com", "GET", "/api/me", "")
	var me serve.Me
	if err := json.Unmarshal(b, &me); st != 200 || err != nil || me.Subject != "alice@example.com" || me.Name != "Alice Example" || me.Initials != "AE" || me.Role != team.RoleMember {
		t.Fatalf("/api/me: %d %s", st, b)
	}
	cl := e.dial(ctx, "alice@example.com")
	from := 0
	hello := cl.waitFrame(ctx, &from, "hello", func(f *frame) bool { return f.Type == "hello" })
	var h struct {
		Me         *serve.Me `json:"me"`
		DefaultCwd string    `json:"default_cwd"`
	}
	json.Unmarshal(hello.raw, &h)
	if h.Me == nil || h.Me.Subject != "alice@example.com" || h.DefaultCwd != e.cfg.Workspace(&me_alice) {
		t.Fatalf("hello %s", hello.raw)
	}
}

var me_alice = team.Identity{Subject: "alice@example.com"}

// The whole story of a shared session over the WebSocket and the JSON
// endpoints: every refusal is refused where it is asked, and changes
// nothing; the allowed paths work; answers carry who gave them.
func TestTeamSessions(t *testing.T) {
	ctx := testCtx(t)
	e := newTeamEnv(t)
	alice, bob, carol := e.dial(ctx, "alice@example.com"), e.dial(ctx, "bob@example.com"), e.dial(ctx, "carol@example.com")
	// Alice starts one in her workspace (no cwd: her default).
	var started struct{ Session serve.SessionInfo }
	json.Unmarshal(alice.ok(ctx, map[string]any{"type": "start"}), &started)
	id := started.Session.ID
	if id == "" || started.Session.Cwd != e.cfg.Workspace(&me_alice) || started.Session.Person != "alice@example.com" || started.Session.PersonName != "Alice Example" || started.Session.Access != "owner" {
		t.Fatalf("start: %+v", started.Session)
	}
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	an := 0
	turn(t, ctx, alice, id, "hello", &an)
	before := snapshotAs(t, e, "alice@example.com", id)

	// Bob and Carol see nothing of it, and cannot touch it.
	for _, cl := range []*wsClient{bob, carol} {
		if l := sessionsOf(t, cl, ctx); len(l) != 0 {
			t.Fatalf("a stranger lists %+v", l)
		}
		wantRefused(t, "stranger subscribe", cl.call(ctx, map[string]any{"type": "subscribe", "session": id, "snapshot": true}), serve.CodeForbidden)
		wantRefused(t, "stranger send", cl.do(ctx, id, map[string]any{"type": "send", "text": "tool cat secrets"}), serve.CodeForbidden)
		wantRefused(t, "stranger close", cl.do(ctx, id, map[string]any{"type": "close"}), serve.CodeForbidden)
		wantRefused(t, "stranger resume", cl.do(ctx, id, map[string]any{"type": "resume"}), serve.CodeForbidden)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/sessions/" + id + "/snapshot", ""},
		{"GET", "/api/sessions/" + id + "/share", ""},
		{"POST", "/api/sessions/" + id + "/share", `{"grants":[{"person":"bob@example.com","level":"collaborator"}]}`},
	} {
		if st, code, _ := e.as("bob@example.com", c.method, c.path, c.body); st != 403 || code != serve.CodeForbidden {
			t.Errorf("stranger %s %s: %d %s", c.method, c.path, st, code)
		}
	}
	if st, _, b := e.as("bob@example.com", "GET", "/api/sessions", ""); st != 200 || strings.Contains(string(b), id) {
		t.Fatalf("stranger's /api/sessions: %d %s", st, b)
	}

	// Alice shares it read-only with Bob: he sees it, as a viewer.
	bn := 0
	if st, code, b := e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"viewer"}]}`); st != 200 || !strings.Contains(string(b), `"level":"viewer"`) {
		t.Fatalf("share: %d %s %s", st, code, b)
	}
	f := bob.waitFrame(ctx, &bn, "the shared session", func(f *frame) bool { return f.Type == "session" && strings.Contains(string(f.Session), id) })
	var si serve.SessionInfo
	json.Unmarshal(f.Session, &si)
	if si.Access != "viewer" || si.Person != "alice@example.com" {
		t.Fatalf("bob sees %+v", si)
	}
	if l := sessionsOf(t, carol, ctx); len(l) != 0 {
		t.Fatalf("carol lists %+v", l)
	}
	bob.ok(ctx, map[string]any{"type": "subscribe", "session": id, "snapshot": true})
	snapshotAs(t, e, "bob@example.com", id)
	// A viewer cannot share it on, send, interrupt, change the mode or close.
	if st, code, _ := e.as("bob@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"carol@example.com","level":"collaborator"}]}`); st != 403 || code != serve.CodeForbidden {
		t.Fatalf("viewer share: %d %s", st, code)
	}
	for _, cmd := range []map[string]any{
		{"type": "send", "text": "tool rm -rf /"}, {"type": "interrupt"}, {"type": "set_mode", "mode": "acceptEdits"},
		{"type": "set_model", "model": "x"}, {"type": "close"}, {"type": "resume"},
	} {
		wantRefused(t, fmt.Sprint("viewer ", cmd["type"]), bob.do(ctx, id, cmd), serve.CodeForbidden)
	}

	// An approval: the viewer's answer is refused, the owner's is taken,
	// with her name.
	if f := alice.do(ctx, id, map[string]any{"type": "send", "text": "tool ls"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	ev := alice.waitFrame(ctx, &an, "the approval", isKind(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	wantRefused(t, "viewer answer", bob.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}), serve.CodeForbidden)
	if sn := snapshotAs(t, e, "alice@example.com", id); len(sn.Approvals) != 1 || sn.State.State != "awaiting_approval" {
		t.Fatalf("after the viewer's answer: %+v", sn.State)
	}
	if f := alice.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	res := bob.waitFrame(ctx, &bn, "approval_resolved", isKind(id, host.EventApprovalResolved))
	if !strings.Contains(string(res.Event.Data), `"answered_by":"Alice Example"`) {
		t.Fatalf("approval_resolved %s", res.Event.Data)
	}
	alice.waitFrame(ctx, &an, "idle", isState(id, "idle"))

	// None of the refused prompts reached the session: its prompts are
	// Alice's two.
	after := snapshotAs(t, e, "alice@example.com", id)
	var prompts []string
	for _, line := range after.Transcript {
		var m struct {
			Type     string
			IsReplay bool `json:"isReplay"`
		}
		json.Unmarshal(line, &m)
		if m.Type == "user" && strings.Contains(string(line), `"text"`) && !strings.Contains(string(line), "tool_result") {
			prompts = append(prompts, string(line))
		}
	}
	if len(prompts) != 2 || strings.Contains(fmt.Sprint(prompts), "rm -rf") || strings.Contains(fmt.Sprint(prompts), "secrets") || after.Ended || len(before.Transcript) == 0 {
		t.Fatalf("the session's prompts: %v (ended %v)", prompts, after.Ended)
	}
	// The session checked again where it runs, as each person.
	e.authz.mu.Lock()
	checks := strings.Join(e.authz.hostChecks, ",")
	e.authz.mu.Unlock()
	if !strings.Contains(checks, "alice@example.com answer") || strings.Contains(checks, "bob@example.com") || strings.Contains(checks, "carol@example.com") {
		t.Fatalf("host checks %s", checks)
	}

	// Collaborator: Bob may send now; the owner's revocation hides it again.
	e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"collaborator"}]}`)
	bob.waitFrame(ctx, &bn, "collaborator", func(f *frame) bool {
		return f.Type == "session" && strings.Contains(string(f.Session), `"access":"collaborator"`)
	})
	turn(t, ctx, bob, id, "from bob", &bn)
	e.as("alice@example.com", "POST", "/api/sessions/"+id+"/share", `{"grants":[]}`)
	bob.waitFrame(ctx, &bn, "removed", func(f *frame) bool { return f.Type == "removed" && f.sessionID() == id })
	wantRefused(t, "revoked send", bob.do(ctx, id, map[string]any{"type": "send", "text": "again"}), serve.CodeForbidden)

	// An admin sees and owns everything; the audit log is theirs only.
	root := e.dial(ctx, "root@example.com")
	if l := sessionsOf(t, root, ctx); l[id].Access != "owner" {
		t.Fatalf("admin lists %+v", l)
	}
	if st, code, _ := e.as("bob@example.com", "GET", "/api/audit", ""); st != 403 || code != serve.CodeForbidden {
		t.Fatalf("member audit: %d %s", st, code)
	}
	st, _, b := e.as("root@example.com", "GET", "/api/audit?actor=bob@example.com", "")
	var evs []team.AuditEvent
	if err := json.Unmarshal(b, &evs); st != 200 || err != nil || len(evs) == 0 || evs[0].Actor != "bob@example.com" || evs[0].Outcome != team.OutcomeRefused {
		t.Fatalf("admin audit: %d %s", st, b)
	}
	st, _, b = e.as("root@example.com", "GET", "/api/audit", "", "Accept", "application/x-ndjson")
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); st != 200 || len(lines) < len(evs) || !strings.HasPrefix(lines[0], "{") {
		t.Fatalf("admin audit JSONL: %d %s", st, b)
	}
	if st, code, _ := e.as("root@example.com", "GET", "/api/audit?since=yesterday", ""); st != 400 || code != serve.CodeBadRequest {
		t.Fatalf("bad since: %d %s", st, code)
	}
}

// A viewer starts nothing; a spent budget refuses starts and prompts
// with its message, and the refused prompt changes nothing; spend is
// shown.
func TestTeamPolicyRefusals(t *testing.T) {
	ctx := testCtx(t)
	e := newTeamEnv(t)
	vera := e.dial(ctx, "vera@example.com")
	wantRefused(t, "viewer start", vera.call(ctx, map[string]any{"type": "start"}), serve.CodeForbidden)
	alice := e.dial(ctx, "alice@example.com")
	wantRefused(t, "disk sessions outside the workspace", alice.call(ctx, map[string]any{"type": "disk_sessions", "cwd": "/"}), serve.CodeForbidden)
	id := alice.start(ctx, "")
	alice.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	an := 0
	turn(t, ctx, alice, id, "hello", &an)
	before := snapshotAs(t, e, "alice@example.com", id)
	e.authz.mu.Lock()
	e.authz.spent["alice@example.com"] = true
	e.authz.mu.Unlock()
	f := alice.do(ctx, id, map[string]any{"type": "send", "text": "one more"})
	wantRefused(t, "send past the budget", f, serve.CodeForbidden)
	if !strings.Contains(f.Error.Message, "daily budget of $5.00 spent") {
		t.Fatalf("budget message %q", f.Error.Message)
	}
	wantRefused(t, "start past the budget", alice.call(ctx, map[string]any{"type": "start"}), serve.CodeForbidden)
	after := snapshotAs(t, e, "alice@example.com", id)
	if after.Seq != before.Seq || len(after.Deliveries) != 0 || len(sessionsOf(t, alice, ctx)) != 1 {
		t.Fatalf("the refused prompt changed the session: seq %d → %d, %+v", before.Seq, after.Seq, after.Deliveries)
	}
	st, _, b := e.as("alice@example.com", "GET", "/api/spend", "")
	var sp []serve.PersonSpend
	if err := json.Unmarshal(b, &sp); st != 200 || err != nil || len(sp) != 1 || sp[0].Person != "alice@example.com" || sp[0].BudgetUSD != 5 {
		t.Fatalf("/api/spend: %d %s", st, b)
	}
	if errors.Is(nil, team.ErrBudget) {
		t.Fatal("unreachable")
	}
}
