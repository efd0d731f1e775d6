package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/oidctest"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
	"github.com/tetherhq/tether/team"
)

// toolCLI plays the CLI: a prompt "tool <cmd>" asks to run Bash <cmd>
// and reports the answer; anything else is echoed.
func toolCLI(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		text := claudetest.UserText(u.Raw)
		c.Write(c.SystemInit())
		if cmd, ok := strings.CutPrefix(text, "tool "); ok {
			input := map[string]string{"command": cmd}
			c.Write(c.AssistantToolUse("toolu_1", "Bash", input))
			resp, err := c.CanUseTool(ctx, "toolu_1", "Bash", input)
			if err != nil {
				return err
			}
			var r struct{ Behavior string }
			_ = json.Unmarshal(resp, &r)
			c.Write(c.ToolResult("toolu_1", r.Behavior, r.Behavior != "allow"), c.AssistantText("tool "+r.Behavior), c.ResultSuccess("tool "+r.Behavior))
			continue
		}
		c.Write(c.AssistantText("echo: "+text), c.ResultSuccess("echo: "+text))
	}
}

// teamWire is tether serve --team as setupTeam builds it (the team file,
// the local JetStream, the audit log, OpenID Connect against a real
// provider), serving sessions of a fake CLI.
type teamWire struct {
	t    *testing.T
	op   *oidctest.Provider
	base string
	ts   *teamServe
}

// newTeamWire starts it; extra are more tether serve flags.
func newTeamWire(t *testing.T, ctx context.Context, extra ...string) *teamWire {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	for _, u := range []string{"alice", "bob", "eve"} {
		if err := os.MkdirAll(filepath.Join(ws, u), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "team.yaml")
	yaml := fmt.Sprintf(`people:
  - {email: alice@example.com, name: Alice Admin, role: admin}
  - {email: bob@example.com, name: Bob, role: member}
  - {email: eve@example.com, name: Eve, role: member}
policies:
  admin: {cwd_roots: ["%[1]s/{user}"]}
  member: {cwd_roots: ["%[1]s/{user}"]}
isolation: off
state_dir: %[2]s
audit: {retention: 24h}
`, ws, filepath.Join(dir, "state"))
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	op := oidctest.New(t, &oidctest.Options{Users: []oidctest.User{
		{Email: "alice@example.com", Name: "Alice Admin", Password: "pw-a"},
		{Email: "bob@example.com", Name: "Bob", Password: "pw-b"},
		{Email: "mallory@example.com", Name: "Mallory", Password: "pw-m"}, // not on the team
		{ID: "u-eve", Email: "eve@example.com", Name: "Eve", Password: "pw-e", EmailUnverified: true},
	}})
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	op.AddRedirectURI(base + "/auth/callback")
	t.Setenv(envOIDCSecret, op.ClientSecret)

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	sf := addServeFlags(fs)
	tf := addTeamFlags(fs)
	args := append([]string{"--team", file, "--oidc-issuer", op.Issuer(), "--oidc-client-id", op.ClientID, "--public-url", base}, extra...)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := tf.check(sf); err != nil {
		t.Fatal(err)
	}
	ts, err := setupTeam(ctx, tf, sf)
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	m := host.NewManager(nil)
	b := serve.NewLocalBackend(m, &serve.LocalOptions{
		Session: &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: toolCLI}}},
		Team:    ts.opts,
	})
	srv := serve.NewServer(b, &serve.Options{Team: ts.opts})
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		m.Close()
		ts.closer()
	})
	return &teamWire{t: t, op: op, base: base, ts: ts}
}

// signIn signs user in through the provider's login page; it returns
// the browser (its jar holds the sign-in) and the status of /api/me then.
func (w *teamWire) signIn(user, password string) (*http.Client, int) {
	w.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(w.base + "/auth/login")
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Request.URL.String(), w.op.Issuer()+"/login") {
		w.t.Fatalf("sign-in went to %s, want the provider's login page", resp.Request.URL)
	}
	resp, err = c.PostForm(w.op.Issuer()+"/login", url.Values{"id": {resp.Request.URL.Query().Get("id")}, "username": {user}, "password": {password}})
	if err != nil {
		w.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	st, _ := w.get(c, "/api/me", "")
	return c, st
}

func (w *teamWire) get(c *http.Client, path, accept string) (int, []byte) {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.base+path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// teamWS is a WebSocket of a signed-in person: serve/servetest's
// client, failing the test where it returns an error.
type teamWS struct {
	t *testing.T
	c *servetest.Client
	n int // the frames next has looked at
}

// dial opens a WebSocket with the sign-in that c's jar holds.
func (w *teamWire) dial(ctx context.Context, c *http.Client) *teamWS {
	w.t.Helper()
	return dialTeamWS(w.t, ctx, w.base, &servetest.DialOptions{HTTPClient: c})
}

func dialTeamWS(t *testing.T, ctx context.Context, base string, o *servetest.DialOptions) *teamWS {
	t.Helper()
	c, err := servetest.Dial(ctx, base, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &teamWS{t: t, c: c}
}

// next waits for a frame that ok says yes to, after those it looked at.
func (s *teamWS) next(ctx context.Context, what string, ok func(*servetest.Frame) bool) *servetest.Frame {
	s.t.Helper()
	f, err := s.c.WaitFrame(ctx, &s.n, ok)
	if err != nil {
		s.t.Fatalf("waiting for %s: %v", what, err)
	}
	return f
}

// call sends a request and returns its reply.
func (s *teamWS) call(ctx context.Context, req map[string]any) *servetest.Frame {
	s.t.Helper()
	f, err := s.c.Call(ctx, req)
	if err != nil {
		s.t.Fatalf("the reply to %s: %v", req["type"], err)
	}
	return f
}

func (s *teamWS) do(ctx context.Context, session string, cmd map[string]any) *servetest.Frame {
	s.t.Helper()
	return s.call(ctx, map[string]any{"type": "do", "session": session, "command": cmd})
}

// tether serve --team records into one audit log, which GET /api/audit
// reads: sign-ins and a refused one (OIDC), the session's start, a
// prompt and an approval (where the session runs: who, the tool, the
// SHA-256 of its input, the answer as rule, the address) each once, and
// a refused command (the front end).
func TestServeTeamAuditWired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newTeamWire(t, ctx)
	alice, st := w.signIn("alice@example.com", "pw-a")
	if st != 200 {
		t.Fatalf("alice's /api/me after sign-in: %d", st)
	}
	bob, st := w.signIn("bob@example.com", "pw-b")
	if st != 200 {
		t.Fatalf("bob's /api/me after sign-in: %d", st)
	}
	if _, st := w.signIn("mallory@example.com", "pw-m"); st != 401 {
		t.Fatalf("mallory, not on the team, signed in: /api/me %d", st)
	}

	a := w.dial(ctx, alice)
	var started struct{ Session serve.SessionInfo }
	if f := a.call(ctx, map[string]any{"type": "start"}); f.Error != nil {
		t.Fatalf("start: %+v", f.Error)
	} else {
		json.Unmarshal(f.Result, &started)
	}
	id := started.Session.ID
	if f := a.call(ctx, map[string]any{"type": "subscribe", "session": id}); f.Error != nil {
		t.Fatal(f.Error)
	}
	if f := a.do(ctx, id, map[string]any{"type": "send", "text": "tool ls -la"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	ev := a.next(ctx, "the approval", servetest.IsEvent(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	if f := a.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	a.next(ctx, "idle", servetest.IsState(id, "idle"))
	b := w.dial(ctx, bob)
	if f := b.do(ctx, id, map[string]any{"type": "send", "text": "not yours"}); f.Error == nil || f.Error.Code != serve.CodeForbidden {
		t.Fatalf("bob's send into alice's session: %+v", f.Error)
	}

	// A member may not read the log; the admin reads all of it.
	if st, _ := w.get(bob, "/api/audit", ""); st != 403 {
		t.Fatalf("bob's /api/audit: %d", st)
	}
	st, body := w.get(alice, "/api/audit", "")
	var evs []team.AuditEvent
	if err := json.Unmarshal(body, &evs); st != 200 || err != nil {
		t.Fatalf("/api/audit: %d %v %s", st, err, body)
	}
	count := map[string]int{}
	find := func(ok func(e *team.AuditEvent) bool) *team.AuditEvent {
		for i := range evs {
			if ok(&evs[i]) {
				return &evs[i]
			}
		}
		return nil
	}
	for _, e := range evs {
		count[e.Action+" "+e.Actor+" "+e.Session]++
		if e.Addr != "127.0.0.1" {
			t.Errorf("event without the client's address: %+v", e)
		}
	}
	sum := sha256.Sum256([]byte(`{"command":"ls -la"}`))
	for _, c := range []struct {
		what string
		ok   func(e *team.AuditEvent) bool
	}{
		{"alice's sign-in", func(e *team.AuditEvent) bool { return e.Action == team.ActionSignIn && e.Actor == "alice@example.com" }},
		{"mallory's refused sign-in", func(e *team.AuditEvent) bool {
			return e.Action == team.ActionSignInFailed && e.Outcome == team.OutcomeRefused && strings.Contains(e.Actor+e.Detail, "mallory@example.com")
		}},
		{"the start", func(e *team.AuditEvent) bool {
			return e.Action == team.ActionStart && e.Actor == "alice@example.com" && e.Session == id
		}},
		{"the prompt", func(e *team.AuditEvent) bool {
			return e.Action == team.ActionPrompt && e.Actor == "alice@example.com" && e.Session == id && e.Detail == "chars=11"
		}},
		{"the approval", func(e *team.AuditEvent) bool {
			return e.Action == team.ActionApproval && e.Actor == "alice@example.com" && e.ActorName == "Alice Admin" && e.Session == id &&
				e.Tool == "Bash" && e.InputDigest == hex.EncodeToString(sum[:]) && e.Rule == "allow"
		}},
		{"bob's refused send", func(e *team.AuditEvent) bool {
			return e.Action == team.ActionRefused && e.Outcome == team.OutcomeRefused && e.Actor == "bob@example.com" && e.Session == id && e.Rule == "access"
		}},
	} {
		if find(c.ok) == nil {
			t.Errorf("no audit event of %s in %s", c.what, body)
		}
	}
	for _, k := range []string{team.ActionStart, team.ActionPrompt, team.ActionApproval} {
		if n := count[k+" alice@example.com "+id]; n != 1 {
			t.Errorf("%s recorded %d times, want once: %s", k, n, body)
		}
	}
	if n := count[team.ActionRefused+" bob@example.com "+id]; n != 1 {
		t.Errorf("bob's refused send recorded %d times, want once: %s", n, body)
	}
	// JSON lines, filtered.
	st, body = w.get(alice, "/api/audit?action=approval", "application/x-ndjson")
	if lines := strings.Split(strings.TrimSpace(string(body)), "\n"); st != 200 || len(lines) != 1 || !strings.Contains(lines[0], `"tool":"Bash"`) {
		t.Fatalf("/api/audit?action=approval as JSONL: %d %s", st, body)
	}
	if st, _ := w.get(alice, "/api/audit?action=nonsense", ""); st != 400 {
		t.Fatalf("/api/audit?action=nonsense: %d, want 400", st)
	}
}

// --oidc-trust-unverified-email admits a person whose provider does not
// mark the address verified; without it they are refused.
func TestServeTeamTrustUnverifiedEmail(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, st := newTeamWire(t, ctx).signIn("eve@example.com", "pw-e"); st != 401 {
		t.Fatalf("an unverified address signed in without the flag: /api/me %d", st)
	}
	if _, st := newTeamWire(t, ctx, "--oidc-trust-unverified-email").signIn("eve@example.com", "pw-e"); st != 200 {
		t.Fatalf("with --oidc-trust-unverified-email: /api/me %d, want 200", st)
	}
}

// The team file's isolation decides: on (or auto with more than one
// person) confines sessions, off does not.
func TestServeTeamIsolationSetting(t *testing.T) {
	if err := exec.Command(team.DefaultBwrap, "--version").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("bubblewrap required under CI=true: %v", err)
		}
		t.Skipf("no bubblewrap: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []struct {
		people, isolation string
		on                bool
	}{
		{"[{email: a@example.com, role: admin}]", "auto", false},
		{"[{email: a@example.com, role: admin}, {email: b@example.com, role: member}]", "auto", true},
		{"[{email: a@example.com, role: admin}]", "on", true},
		{"[{email: a@example.com, role: admin}, {email: b@example.com, role: member}]", "off", false},
	} {
		dir := t.TempDir()
		file := filepath.Join(dir, "team.yaml")
		os.WriteFile(file, []byte("people: "+c.people+"\nisolation: "+c.isolation+"\nstate_dir: "+dir+"\n"), 0o600)
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		sf := addServeFlags(fs)
		tf := addTeamFlags(fs)
		if err := fs.Parse([]string{"--team", file, "--proxy-header", "X-Forwarded-Email", "--trusted-proxy", "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
		ts, err := setupTeam(ctx, tf, sf)
		if err != nil {
			t.Fatalf("%s, isolation %s: %v", c.people, c.isolation, err)
		}
		if on := ts.opts.Isolation != nil; on != c.on {
			t.Errorf("%s, isolation %s: isolated %v, want %v", c.people, c.isolation, on, c.on)
		}
		ts.closer()
	}
}
