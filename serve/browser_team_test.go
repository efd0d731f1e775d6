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
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/oidctest"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
	"github.com/tetherhq/tether/team"
)

// The browser suite of teams (issue 18): people sign in through a real
// OpenID Provider's login page (internal/oidctest) in headless Chromium,
// each in their own browser context (their own cookies), against tether
// serve with the real team packages (Config, Authorizer and Store on
// JetStream, the audit log) and the real CLI on the fake Messages API.
// The same scenarios run over the cluster: an embedded NATS server, an
// agent that checks every request with the identity that came with it.

func TestBrowserTeam(t *testing.T) {
	b := newBrowser(t)
	t.Run("Local", func(t *testing.T) { testTeamScenarios(t, b, false) })
	t.Run("Cluster", func(t *testing.T) { testTeamScenarios(t, b, true) })
}

// The team of the tests. Alice and Bob and Carol are members, Ada the
// admin; each has a workspace under the world's root.
var teamPeople = []oidctest.User{
	{Email: "alice@example.com", Name: "Alice Example", Password: "alice-pw"},
	{Email: "bob@example.com", Name: "Bob Builder", Password: "bob-pw"},
	{Email: "carol@example.com", Name: "Carol Jones", Password: "carol-pw", Groups: []string{"ops"}},
	{Email: "ada@example.com", Name: "Ada Admin", Password: "ada-pw", Groups: []string{"admins"}},
	// Mallory can sign in at the provider, but the team file does not
	// admit her.
	{Email: "mallory@example.com", Name: "Mallory Outsider", Password: "mallory-pw"},
}

func teamPassword(email string) string {
	for _, u := range teamPeople {
		if u.Email == email {
			return u.Password
		}
	}
	return ""
}

// teamWorld is one scenario's world: the provider, tether serve with
// teams (and a second one behind a trusted-proxy sign-in), the store
// and the audit log they keep in JetStream, the fake API.
type teamWorld struct {
	origin      string // the OIDC server
	proxyOrigin string // the same backend, signing in by a proxy's header
	op          *oidctest.Provider
	api         *claudetest.MessagesServer
	store       *team.Store
	audit       *team.Audit
	root        string
}

func (w *teamWorld) workspace(email string) string {
	return filepath.Join(w.root, strings.SplitN(email, "@", 2)[0])
}

// newTeamWorld builds it. Over the cluster the sessions run on an agent
// with its own Authorizer (the same configuration and store), as a
// separate machine would.
func newTeamWorld(t *testing.T, clustered bool, replies ...*claudetest.Reply) *teamWorld {
	t.Helper()
	return newTeamWorldWith(t, clustered, 300*time.Millisecond, replies...)
}

// newTeamWorldWith is newTeamWorld with the interval at which open
// sockets' sign-ins are checked again.
func newTeamWorldWith(t *testing.T, clustered bool, recheck time.Duration, replies ...*claudetest.Reply) *teamWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: replies})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &teamWorld{api: api, root: root}
	for _, u := range teamPeople {
		if err := os.MkdirAll(w.workspace(u.Email), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := team.ParseConfig([]byte(fmt.Sprintf(`
default_role: ""
people:
  - {email: alice@example.com, name: Alice Example, role: member}
  - {email: bob@example.com, name: Bob Builder, role: member}
  - {email: carol@example.com, name: Carol Jones, role: member}
  - {email: ada@example.com, name: Ada Admin, role: admin}
policies:
  member: {cwd_roots: [%q], daily_budget_usd: 5}
  admin: {cwd_roots: [%q]}
isolation: "off"
`, root+"/{user}", root)))
	if err != nil {
		t.Fatal(err)
	}

	// JetStream: the one a serve keeps on one machine, or the cluster's.
	ns, err := natsserver.NewServer(&natsserver.Options{ServerName: "teamtest", Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats: not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if w.store, err = team.OpenStore(ctx, js, &team.StoreOptions{Memory: true}); err != nil {
		t.Fatal(err)
	}
	if w.audit, err = team.OpenAudit(ctx, js, &team.AuditOptions{Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	authz := team.NewAuthorizer(cfg, w.store, &team.AuthorizerOptions{Recorder: w.audit})
	auditQ := serve.AuditFunc(func(ctx context.Context, q *serve.AuditQuery) iter.Seq2[*team.AuditEvent, error] {
		return w.audit.Query(ctx, &team.AuditQuery{Since: q.Since, Until: q.Until, Actor: q.Actor, Session: q.Session, Action: q.Action, Limit: q.Limit})
	})

	// The server's address must be known before the provider (its
	// redirect URI) and the sign-in (the callback): serve behind a
	// handler set afterwards.
	var h atomic.Pointer[http.Handler]
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(rw, r) }))
	w.origin = hs.URL
	w.op = oidctest.New(t, &oidctest.Options{ClientID: "tether", ClientSecret: "tether-secret", RedirectURIs: []string{hs.URL + "/auth/callback"}, Users: teamPeople})
	auth, err := team.NewOIDC(ctx, &team.OIDCOptions{Issuer: w.op.Issuer(), ClientID: w.op.ClientID, ClientSecret: w.op.ClientSecret,
		RedirectURL: hs.URL + "/auth/callback", Resolve: cfg.Resolve, Recorder: w.audit})
	if err != nil {
		t.Fatal(err)
	}
	to := &serve.TeamOptions{Auth: auth, Config: cfg, Authorizer: serve.NewTeamAuthorizer(authz, w.store), Audit: auditQ, Recorder: w.audit,
		RecheckInterval: recheck}

	var (
		backend serve.Backend
		closeB  = func() {}
	)
	sess := &host.Options{CLI: cli.Options()}
	if clustered {
		agentAuthz := team.NewAuthorizer(cfg, w.store, &team.AuthorizerOptions{Recorder: w.audit, SessionID: cluster.HostSessionID})
		a, err := cluster.NewAgent(ctx, &cluster.AgentOptions{URL: ns.ClientURL(), ID: "agent1", Capacity: 4,
			Limits: &cluster.Limits{Heartbeat: 250 * time.Millisecond}, Session: sess, Team: agentAuthz})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cluster.NewClient(ctx, &cluster.ClientOptions{URL: ns.ClientURL(), Limits: &cluster.Limits{Heartbeat: 250 * time.Millisecond}})
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		backend = cluster.NewBackend(c, nil)
		closeB = func() {
			c.Close()
			a.Close()
		}
	} else {
		m := host.NewManager(nil)
		backend = serve.NewLocalBackend(m, &serve.LocalOptions{Session: sess, Team: to})
		closeB = func() { m.Close() }
	}
	srv := serve.NewServer(backend, &serve.Options{Team: to})
	var sh http.Handler = srv
	h.Store(&sh)

	// The same backend behind a trusted-proxy sign-in that trusts one
	// address the tests never come from.
	proxyAuth, err := team.NewProxyAuth(&team.ProxyOptions{Header: "X-Forwarded-Email", Trusted: []netip.Prefix{netip.MustParsePrefix("10.9.8.7/32")},
		Resolve: cfg.Resolve, Recorder: w.audit})
	if err != nil {
		t.Fatal(err)
	}
	pto := *to
	pto.Auth = proxyAuth
	psrv := serve.NewServer(backend, &serve.Options{Team: &pto})
	phs := httptest.NewServer(psrv)
	w.proxyOrigin = phs.URL
	t.Cleanup(func() {
		phs.Close()
		psrv.Close()
		hs.Close()
		srv.Close()
		closeB()
	})
	return w
}

// personTab opens a tab in a browser context of its own: a person with
// their own cookies. Like newTab, it fails the test on errors in the
// page and on requests anywhere but the server and the provider.
func (b *browser) personTab(t *testing.T, w *teamWorld, name string) *tab {
	return b.tabIn(t, w, name, "")
}

// browserContexts remembers each person's browser context, by tab, for
// a second tab of the same person (sameBrowser).
var browserContexts sync.Map // *tab -> cdp.BrowserContextID

// sameBrowser opens another tab of the person of tb: same cookies.
func (b *browser) sameBrowser(t *testing.T, w *teamWorld, tb *tab, name string) *tab {
	bcid, _ := browserContexts.Load(tb)
	return b.tabIn(t, w, name, bcid.(cdp.BrowserContextID))
}

// tabIn opens a tab in browser context bcid ("" = a new one, disposed
// of when t ends).
func (b *browser) tabIn(t *testing.T, w *teamWorld, name string, bcid cdp.BrowserContextID) *tab {
	t.Helper()
	// chromedp's WithNewBrowserContext opens its tab without a window,
	// which headless Chromium refuses: open it here.
	owned := bcid == ""
	var tid target.ID
	if err := chromedp.Run(b.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		bx := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		var err error
		if owned {
			if bcid, err = target.CreateBrowserContext().Do(bx); err != nil {
				return err
			}
		}
		tid, err = target.CreateTarget("about:blank").WithBrowserContextID(bcid).WithNewWindow(true).Do(bx)
		return err
	})); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tid))
	tb := &tab{t: t, b: b, ctx: ctx, origin: w.origin, name: name}
	browserContexts.Store(tb, bcid)
	tb.watch(cancel, []string{w.origin, w.op.Issuer(), w.proxyOrigin}, func() {
		browserContexts.Delete(tb)
		if owned {
			_ = chromedp.Run(b.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
				return target.DisposeBrowserContext(bcid).Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
			}))
		}
	})
	return tb
}

// signIn goes from the sign-in page through the provider's login page
// back to the UI, signed in as email.
func (tb *tab) signIn(w *teamWorld, email string) {
	tb.t.Helper()
	tb.run(chromedp.Navigate(w.origin + "/"))
	tb.waitJS("the sign-in page", `!document.querySelector("#signin").hidden && document.querySelector("#signin-btn").offsetParent !== null`)
	tb.run(chromedp.Click("#signin-btn", chromedp.ByID))
	tb.atProvider(w, email)
	tb.waitAcross("signed in as "+email, `location.origin === `+jsString(w.origin)+` && document.querySelector("#conn")?.classList.contains("live") && !document.querySelector("#me").hidden`)
}

// atProvider waits for the provider's login page and signs in there as
// email.
func (tb *tab) atProvider(w *teamWorld, email string) {
	tb.t.Helper()
	tb.waitAcross("the provider's login page", `location.origin === `+jsString(w.op.Issuer())+` && !!document.querySelector("#username")`)
	tb.run(
		chromedp.SetValue("#username", email, chromedp.ByID),
		chromedp.SetValue("#password", teamPassword(email), chromedp.ByID),
		chromedp.Click("#login", chromedp.ByID),
	)
}

// waitAcross is waitJS across navigations: a poll whose page goes away
// (a redirect) starts again on the next one.
func (tb *tab) waitAcross(what, js string) {
	tb.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(tb.ctx, deadline)
		err := chromedp.Run(ctx, chromedp.Poll(js, nil, chromedp.WithPollingInterval(25*time.Millisecond)))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || tb.ctx.Err() != nil {
			tb.capture("failure-" + slug(what))
			tb.t.Fatalf("%s: waiting for %s: %v", tb.name, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// evalJSON evaluates js (awaiting a promise) and decodes its JSON.
func (tb *tab) evalJSON(js string, out any) {
	tb.t.Helper()
	var s string
	tb.eval(`(async () => JSON.stringify(await (async () => { `+js+` })()))()`, &s)
	if err := json.Unmarshal([]byte(s), out); err != nil {
		tb.t.Fatalf("%s: decode %q: %v", tb.name, s, err)
	}
}

// handMade is what a page gets for a request the UI would never make.
type handMade struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Body   string `json:"body"`
}

// fetchAs makes an HTTP request from the page, with its cookies.
func (tb *tab) fetchAs(method, path, body string, hdr map[string]string) handMade {
	tb.t.Helper()
	h, _ := json.Marshal(hdr)
	var r handMade
	tb.evalJSON(fmt.Sprintf(`
		const init = { method: %q, headers: { "Content-Type": "application/json", ...%s }, credentials: "same-origin" };
		if (%q) init.body = %q;
		const r = await fetch(%q, init);
		const body = await r.text();
		let code = "";
		try { code = JSON.parse(body).error?.code || ""; } catch {}
		return { status: r.status, code, body };`, method, h, body, body, path), &r)
	return r
}

// wsFrames opens a WebSocket of its own from the page, sends frames
// (each with an id) and returns the replies by id.
func (tb *tab) wsFrames(frames ...map[string]any) map[string]json.RawMessage {
	tb.t.Helper()
	for i, f := range frames {
		f["id"] = i + 1
	}
	fj, _ := json.Marshal(frames)
	var out map[string]json.RawMessage
	tb.evalJSON(fmt.Sprintf(`
		const frames = %s;
		return await new Promise((resolve) => {
			const u = new URL("ws", location.href);
			u.protocol = "ws:";
			const ws = new WebSocket(u.href);
			const got = {};
			const done = () => { ws.close(); resolve(got); };
			const timer = setTimeout(() => { got.timeout = true; done(); }, 20000);
			ws.onmessage = (e) => {
				const m = JSON.parse(e.data);
				if (m.id == null) return;
				got[m.id] = m;
				if (Object.keys(got).length === frames.length) { clearTimeout(timer); done(); }
			};
			ws.onopen = () => { for (const f of frames) ws.send(JSON.stringify(f)); };
			ws.onerror = () => { clearTimeout(timer); got.refused = true; resolve(got); };
		});`, fj), &out)
	return out
}

// replyCode is the error code of a reply frame ("" = it succeeded).
func replyCode(raw json.RawMessage) string {
	var f struct {
		Error *struct{ Code string } `json:"error"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Error == nil {
		return ""
	}
	return f.Error.Code
}

// auditHas reports whether the audit log holds an event matching ok.
func (w *teamWorld) auditHas(t *testing.T, ok func(*team.AuditEvent) bool) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev, err := range w.audit.Query(ctx, &team.AuditQuery{Since: time.Now().Add(-time.Hour)}) {
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		if ok(ev) {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: timed out", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// plain makes an HTTP request from the test itself (not a browser).
func plain(t *testing.T, method, u string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// testTeamScenarios: the scenarios of issue 18, in one world, in order.
func testTeamScenarios(t *testing.T, b *browser, clustered bool) {
	// Alice's turn: a Bash call that needs her approval, then an answer
	// whose usage costs more than a member's daily budget ($5): 2M
	// input tokens.
	w := newTeamWorld(t, clustered,
		claudetest.ToolUseReply("toolu_team", "Bash", map[string]string{"command": "echo shared > shared.txt", "description": "Write shared.txt"}),
		&claudetest.Reply{Content: []claudetest.ContentBlock{claudetest.TextBlock("wrote it")}, Usage: claudetest.Usage{InputTokens: 2_000_000, OutputTokens: 10}},
	)
	shots := !clustered // the same pages; once is enough to look at

	// ---- Alice signs in at the provider and starts a session ----
	alice := b.personTab(t, w, "alice")
	if shots {
		alice.run(chromedp.Navigate(w.origin + "/"))
		alice.waitJS("the sign-in page", `!document.querySelector("#signin").hidden`)
		alice.shots("signin")
	}
	alice.signIn(w, "alice@example.com")
	if s := alice.text("#me-name"); s != "Alice Example" {
		t.Errorf("header name %q; want Alice Example", s)
	}
	if s := alice.text("#me-initials"); s != "AE" {
		t.Errorf("header initials %q; want AE", s)
	}
	id := alice.newSession(w.workspace("alice@example.com"))
	alice.prompt("write shared.txt")
	alice.waitJS("Alice's approval card", `document.querySelector(".approval:not(.answered) .allow")`)
	var approvalID string
	alice.eval(`[...window.tether.view.approvals.keys()][0]`, &approvalID)

	// ---- Alice shares it read-only with Bob ----
	alice.run(chromedp.Click("#share-btn", chromedp.ByID), chromedp.WaitVisible("#share-dlg", chromedp.ByID))
	alice.waitJS("the share dialog read", `document.querySelector("#share-dlg").dataset.loaded === "yes" && !document.querySelector("#share-none").hidden`)
	alice.run(
		chromedp.SetValue("#share-who", "bob@example.com", chromedp.ByID),
		chromedp.SetValue("#share-level", "viewer", chromedp.ByID),
		chromedp.Click("#share-add", chromedp.ByID),
	)
	alice.waitJS("Bob in the list", `document.querySelector('#share-list li[data-who="bob@example.com"]')`)
	if shots {
		alice.shots("share-dialog")
	}
	alice.run(chromedp.Click("#share-save", chromedp.ByID))
	alice.waitJS("the dialog closed", `!document.querySelector("#share-dlg").open`)

	// ---- Bob sees it, read-only ----
	bob := b.personTab(t, w, "bob")
	bob.signIn(w, "bob@example.com")
	bob.waitJS("the shared session listed", fmt.Sprintf(`document.querySelector('#sessions li.group[data-group="shared"]') && document.querySelector('#sessions li[data-id=%q] .access.viewer')`, id))
	bob.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, id), chromedp.ByQuery))
	bob.waitJS("the approval, watch-only", `document.querySelector(".approval.watch-only")`)
	var offered []string
	bob.eval(`["#prompt-form", "#prompt", "#send-btn", "#stop-btn", "#s-mode", "#s-model", "#close-btn", "#share-btn", ".approval button", ".approval .allow", ".approval .deny", ".approval input.reason"].filter((s) => {
		const e = document.querySelector(s);
		return e && e.offsetParent !== null;
	})`, &offered)
	if len(offered) > 0 {
		t.Errorf("a viewer is offered %v", offered)
	}
	if bob.hidden("#watch-note") {
		t.Error("the viewer is not told they are watching")
	}
	if shots {
		bob.run(chromedp.Evaluate(`document.body.classList.add("nav-open")`, nil))
		bob.shots("viewer")
		bob.run(chromedp.Evaluate(`document.body.classList.remove("nav-open")`, nil))
	}
	// Keys a person would press on a card do nothing either.
	bob.key("\r")
	bob.key("\x1b")

	// Hand-made requests from Bob's page: all refused.
	r := bob.fetchAs("POST", "api/sessions/"+id+"/share", `{"grants":[{"person":"bob@example.com","level":"collaborator"},{"person":"carol@example.com","level":"viewer"}]}`, nil)
	if r.Status != http.StatusForbidden {
		t.Errorf("Bob's share of Alice's session: %d %s; want 403", r.Status, r.Body)
	}
	replies := bob.wsFrames(
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "answer", "approval": approvalID, "behavior": "allow"}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send", "text": "bob was here"}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "interrupt"}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "set_mode", "mode": "acceptEdits"}},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "close"}},
	)
	for i := 1; i <= 5; i++ {
		if c := replyCode(replies[fmt.Sprint(i)]); c != "forbidden" {
			t.Errorf("Bob's hand-made frame %d: reply %s; want forbidden", i, replies[fmt.Sprint(i)])
		}
	}

	// ---- Carol sees nothing of it ----
	carol := b.personTab(t, w, "carol")
	carol.signIn(w, "carol@example.com")
	carol.waitJS("Carol's sessions list", `window.tether.listed > 0`)
	var n int
	carol.eval(`window.tether.sessions.size`, &n)
	if n != 0 {
		t.Errorf("Carol sees %d sessions; want none", n)
	}
	if r := carol.fetchAs("GET", "api/sessions/"+id+"/snapshot", "", nil); r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
		t.Errorf("Carol's snapshot of Alice's session: %d; want 403 or 404", r.Status)
	}
	if r := carol.fetchAs("GET", "api/sessions/"+id+"/share", "", nil); r.Status != http.StatusForbidden && r.Status != http.StatusNotFound {
		t.Errorf("Carol's read of Alice's shares: %d; want 403 or 404", r.Status)
	}
	replies = carol.wsFrames(
		map[string]any{"type": "subscribe", "v": 1, "session": id, "snapshot": true},
		map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "answer", "approval": approvalID, "behavior": "allow"}},
	)
	for i := 1; i <= 2; i++ {
		if c := replyCode(replies[fmt.Sprint(i)]); c != "forbidden" && c != "no_session" {
			t.Errorf("Carol's hand-made frame %d: reply %s; want refused", i, replies[fmt.Sprint(i)])
		}
	}
	carol.eval(`window.tether.sessions.size`, &n)
	if n != 0 {
		t.Errorf("after her attempts Carol sees %d sessions; want none", n)
	}

	// ---- Each refusal changed nothing ----
	if requestsContain(w.api, "bob was here") {
		t.Error("Bob's refused prompt reached the model")
	}
	var pending bool
	alice.eval(fmt.Sprintf(`window.tether.view.approvals.has(%q) && !document.querySelector(".approval.answered")`, approvalID), &pending)
	if !pending {
		t.Error("Alice's approval is no longer pending after the refused answers")
	}
	if s := alice.attr("#s-state", "state"); s != "awaiting_approval" {
		t.Errorf("the session is %q after the refusals; want awaiting_approval", s)
	}
	var grants struct{ Grants []team.Grant }
	if r := alice.fetchAs("GET", "api/sessions/"+id+"/share", "", nil); r.Status != 200 || json.Unmarshal([]byte(r.Body), &grants) != nil ||
		len(grants.Grants) != 1 || grants.Grants[0].Person != "bob@example.com" || grants.Grants[0].Level != team.ShareViewer {
		t.Errorf("the shares after the refusals: %d %s; want Bob as viewer only", r.Status, r.Body)
	}
	if _, err := os.Stat(filepath.Join(w.workspace("alice@example.com"), "shared.txt")); err == nil {
		t.Error("the command ran before Alice answered")
	}

	// ---- Alice answers; both pages say who did ----
	alice.run(chromedp.Click(".approval .allow", chromedp.ByQuery))
	alice.waitJS("answered by Alice on the card or the tool", `[...document.querySelectorAll(".approval .outcome, .tool-by")].some((e) => e.innerText.includes("Alice Example"))`)
	bob.waitJS("answered by Alice on Bob's page", `[...document.querySelectorAll(".approval .outcome, .tool-by")].some((e) => e.innerText.includes("Alice Example"))`)
	alice.waitText("wrote it")
	alice.waitTurns(1)
	if b, err := os.ReadFile(filepath.Join(w.workspace("alice@example.com"), "shared.txt")); err != nil || strings.TrimSpace(string(b)) != "shared" {
		t.Errorf("shared.txt: %q, %v", b, err)
	}

	// ---- Ada, an admin: every session, and the audit log ----
	ada := b.personTab(t, w, "ada")
	ada.signIn(w, "ada@example.com")
	ada.waitJS("Alice's session under All", fmt.Sprintf(`document.querySelector('#sessions li.group[data-group="all"]') && document.querySelector('#sessions li[data-id=%q] .by')?.innerText.includes("Alice Example")`, id))
	if shots {
		ada.run(chromedp.Evaluate(`document.body.classList.add("nav-open")`, nil))
		ada.shots("sessions-grouped")
		ada.run(chromedp.Evaluate(`document.body.classList.remove("nav-open")`, nil))
	}
	ada.run(chromedp.Click("#me > summary", chromedp.ByQuery), chromedp.Click("#audit-btn", chromedp.ByID))
	ada.waitJS("the audit page", `!document.querySelector("#audit").hidden && document.querySelectorAll("#audit-table tbody tr").length > 0`)
	ada.waitJS("Alice's approval in the audit log", `[...document.querySelectorAll('#audit-table tbody tr[data-action="approval"]')].some((tr) => tr.innerText.includes("Alice Example") && tr.innerText.includes("Bash"))`)
	ada.waitJS("Bob's refusals in the audit log", `[...document.querySelectorAll('#audit-table tbody tr[data-outcome="refused"]')].some((tr) => tr.innerText.includes("Bob Builder"))`)
	if shots {
		ada.shots("audit")
	}
	// The filters ask the server.
	ada.run(chromedp.SetValue(`#audit-form select[name="action"]`, "approval", chromedp.ByQuery), chromedp.Click("#audit-apply", chromedp.ByID))
	ada.waitJS("only approvals", `(() => { const rows = [...document.querySelectorAll("#audit-table tbody tr")]; return rows.length > 0 && rows.every((tr) => tr.dataset.action === "approval"); })()`)
	// A member may not read it.
	if r := bob.fetchAs("GET", "api/audit", "", nil); r.Status != http.StatusForbidden {
		t.Errorf("Bob's read of the audit log: %d; want 403", r.Status)
	}
	var auditShown bool
	bob.eval(`!document.querySelector("#audit-btn").hidden`, &auditShown)
	if auditShown {
		t.Error("a member is offered the audit log")
	}

	// ---- The budget: Alice's turn cost more than $5; the next is refused ----
	var spent []serve.PersonSpend
	waitFor(t, "Alice's spend to pass her budget", func() bool {
		r := alice.fetchAs("GET", "api/spend", "", nil)
		spent = nil
		_ = json.Unmarshal([]byte(r.Body), &spent)
		return len(spent) == 1 && spent[0].USD >= 5
	})
	if spent[0].BudgetUSD != 5 {
		t.Errorf("spend %+v; want a budget of $5", spent[0])
	}
	before := len(w.api.MessagesRequests())
	alice.prompt("one more thing")
	alice.waitJS("the budget refusal", `[...document.querySelectorAll("#transcript .note.refused")].some((e) => /daily budget of \$5\.00 spent/.test(e.innerText))`)
	if got := len(w.api.MessagesRequests()); got != before || requestsContain(w.api, "one more thing") {
		t.Errorf("the refused prompt reached the model (%d requests, were %d)", got, before)
	}
	var kept string
	alice.eval(`document.querySelector("#prompt").value`, &kept)
	if kept != "one more thing" {
		t.Errorf("the refused prompt's text was not given back: %q", kept)
	}
	alice.run(chromedp.Click("#me > summary", chromedp.ByQuery), chromedp.Click("#spend-btn", chromedp.ByID))
	alice.waitJS("the spend panel", `document.querySelector('#spend-table tr[data-person="alice@example.com"].over')`)
	if shots {
		alice.shots("spend")
	}
	alice.run(chromedp.Evaluate(`document.querySelector("#spend-dlg").close()`, nil))

	// ---- Sign out: the old cookie is refused ----
	var cookies []*network.Cookie
	alice.run(chromedp.ActionFunc(func(ctx context.Context) error {
		var err error
		cookies, err = network.GetCookies().WithURLs([]string{w.origin}).Do(ctx)
		return err
	}))
	var old string
	for _, c := range cookies {
		if c.Name == "tether_session" {
			old = c.Value
		}
	}
	if old == "" {
		t.Fatalf("no tether_session cookie in Alice's browser: %+v", cookies)
	}
	cookie := map[string]string{"Cookie": "tether_session=" + old}
	if st, body := plain(t, "GET", w.origin+"/api/me", cookie); st != http.StatusOK {
		t.Fatalf("before signing out, the cookie is refused: %d %s", st, body)
	}
	// Another tab of Alice's, open while she signs out in the first.
	alice2 := b.sameBrowser(t, w, alice, "alice-2")
	alice2.run(chromedp.Navigate(w.origin + "/#s=" + id))
	alice2.waitJS("Alice's second tab live", `document.querySelector("#conn").classList.contains("live") && window.tether.view && !document.querySelector("#prompt-form").hidden`)
	alice.run(chromedp.Click("#me > summary", chromedp.ByQuery), chromedp.Click("#signout-btn", chromedp.ByID))
	alice.waitAcross("the sign-in page after signing out", `!document.querySelector("#signin").hidden`)
	// The server drops the other tab's socket; it shows the sign-in page.
	alice2.waitJS("the second tab signed out", `!document.querySelector("#signin").hidden && document.querySelector(".layout").offsetParent === null`)
	if st, body := plain(t, "GET", w.origin+"/api/me", cookie); st != http.StatusUnauthorized {
		t.Errorf("the old cookie after signing out: %d %s; want 401", st, body)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	var de *servetest.DialError
	if c, err := servetest.Dial(wctx, w.origin, &servetest.DialOptions{Cookie: &http.Cookie{Name: "tether_session", Value: old}}); err == nil {
		c.Close()
		t.Error("the old cookie still opens a WebSocket")
	} else if !errors.As(err, &de) || de.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old cookie's WebSocket: %v; want 401", err)
	}

	// ---- A forged proxy header from an untrusted address ----
	forger := b.personTab(t, w, "forger")
	forger.run(chromedp.Navigate(w.proxyOrigin + "/"))
	forger.waitJS("the sign-in page behind the proxy", `!document.querySelector("#signin").hidden`)
	for _, p := range []string{"api/me", "api/sessions", "api/audit"} {
		if r := forger.fetchAs("GET", p, "", map[string]string{"X-Forwarded-Email": "ada@example.com"}); r.Status != http.StatusUnauthorized {
			t.Errorf("forged header, %s: %d %s; want 401", p, r.Status, r.Body)
		}
	}
	if st, _ := plain(t, "GET", w.proxyOrigin+"/api/sessions", map[string]string{"X-Forwarded-Email": "ada@example.com"}); st != http.StatusUnauthorized {
		t.Errorf("forged header from the test: %d; want 401", st)
	}
	if !w.auditHas(t, func(ev *team.AuditEvent) bool {
		// The claimed name is not believed, so not recorded as the actor.
		return ev.Action == team.ActionSignInFailed && ev.Outcome == team.OutcomeRefused && strings.Contains(ev.Detail, "untrusted") && ev.Actor == ""
	}) {
		t.Error("the forged header is not in the audit log as a refused sign-in")
	}

	// ---- Nothing the refusals touched changed ----
	bob.eval(`window.tether.sessions.size`, &n)
	if n != 1 {
		t.Errorf("Bob sees %d sessions at the end; want Alice's one", n)
	}
	carol.eval(`window.tether.sessions.size`, &n)
	if n != 0 {
		t.Errorf("Carol sees %d sessions at the end; want none", n)
	}
	acl, err := w.store.ACL(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if acl.Owner != "alice@example.com" || len(acl.Grants) != 1 || acl.Grants[0] != (team.Grant{Person: "bob@example.com", Level: team.ShareViewer}) {
		t.Errorf("the session's ACL at the end: %+v; want Alice's, shared with Bob as viewer", acl)
	}
}

// testTeamHelpers: the UI's team logic on its own (team.js): the groups
// of the sessions list for a member and an admin, what each access
// allows, initials, the audit answer in each of its forms and the query
// the filters make.
func testTeamHelpers(t *testing.T, b *browser) {
	origin := staticUI(t)
	tb := b.newTab(t, origin, "team-helpers")
	tb.run(chromedp.Navigate(origin + "/"))
	var got map[string]string
	tb.evalJSON(`
		const tm = await import("./team.js");
		const list = [
			{ id: "1", person: "me@x", access: "owner" },
			{ id: "2", person: "bo@x", access: "viewer" },
			{ id: "3", person: "cy@x", access: "collaborator" },
			{ id: "4", person: "di@x", access: "owner" },
		];
		const g = () => tm.groups(list).map((x) => x.key + ":" + x.items.map((s) => s.id).join(",")).join(" ");
		const out = {};
		out.token = g();
		out.tokenAct = String(tm.canAct(list[1])) + tm.canOwn(list[1]);
		tm.team.on = true;
		tm.team.me = { sub: "me@x", role: "member" };
		out.member = g();
		out.viewerAct = String(tm.canAct(list[1])) + tm.canOwn(list[1]);
		out.collabAct = String(tm.canAct(list[2])) + tm.canOwn(list[2]);
		tm.team.me = { sub: "me@x", role: "admin" };
		list[1].access = list[2].access = "owner";
		out.admin = g();
		tm.team.on = false;
		tm.team.me = null;
		out.initials = [tm.initials("Alice Example"), tm.initials("bob@example.com"), tm.initials("Ödön van der Berg"), tm.initials("")].join(",");
		out.auditArray = tm.parseAudit('[{"action":"sign_in"},{"action":"prompt"}]').map((e) => e.action).join(",");
		out.auditJSONL = tm.parseAudit('{"action":"a"}\n{"action":"b"}\n').map((e) => e.action).join(",");
		out.auditOne = tm.parseAudit('{"action":"only"}').map((e) => e.action).join(",");
		out.auditEmpty = String(tm.parseAudit("  ").length);
		const f = document.querySelector("#audit-form");
		f.elements.since.value = "1h";
		f.elements.actor.value = " bob@example.com ";
		f.elements.action.value = "approval";
		f.elements.limit.value = "99999";
		const q = tm.auditQuery(f);
		out.query = ["actor", "session", "action", "limit"].map((k) => k + "=" + (q.get(k) ?? "")).join("&");
		const since = Date.parse(q.get("since"));
		out.sinceOK = String(Math.abs(Date.now() - 3600e3 - since) < 60e3);
		out.message = tm.message(new Error("team: daily budget of $5.00 spent"));
		return out;`, &got)
	want := map[string]string{
		"token":      ":1,2,3,4",
		"tokenAct":   "truetrue",
		"member":     "mine:1 shared:2,3,4",
		"viewerAct":  "falsefalse",
		"collabAct":  "truefalse",
		"admin":      "mine:1 all:2,3,4",
		"initials":   "AE,B,ÖB,?",
		"auditArray": "sign_in,prompt",
		"auditJSONL": "a,b",
		"auditOne":   "only",
		"auditEmpty": "0",
		"query":      "actor=bob@example.com&session=&action=approval&limit=10000",
		"sinceOK":    "true",
		"message":    "daily budget of $5.00 spent",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q; want %q", k, got[k], v)
		}
	}
}
