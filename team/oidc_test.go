package team

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/internal/oidctest"
)

// oidcApp is a tiny server mounting the OIDC handler, as serve does: /
// shows who is signed in, /auth/ is the sign-in.
type oidcApp struct {
	op    *oidctest.Provider
	auth  *OIDC
	srv   *httptest.Server
	rec   *recorder
	clock *fakeClock
	store *MemoryLoginStore
}

const testTTL = time.Hour

func newOIDCApp(t testing.TB) *oidcApp {
	t.Helper()
	a := &oidcApp{rec: &recorder{}, clock: newFakeClock()}
	a.op = oidctest.New(t, &oidctest.Options{Users: []oidctest.User{
		{ID: "u-alice", Email: "Alice@Example.com", Name: "Alice Smith", Password: "alice-pw", Groups: []string{"eng", "ops"}},
		{ID: "u-mallory", Email: "mallory@example.com", Name: "Mallory", Password: "mallory-pw"},
		{ID: "u-eve", Email: "eve@example.com", Name: "Eve", Password: "eve-pw", EmailUnverified: true},
	}})
	a.srv = httptest.NewUnstartedServer(nil)
	base := "http://" + a.srv.Listener.Addr().String()
	a.op.AddRedirectURI(base + "/auth/callback")
	a.store = newMemoryLoginStore(100, a.clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	a.auth, err = NewOIDC(ctx, &OIDCOptions{
		Issuer: a.op.Issuer(), ClientID: a.op.ClientID, ClientSecret: a.op.ClientSecret,
		RedirectURL: base + "/auth/callback",
		Scopes:      []string{"openid", "email", "profile", "groups"},
		Resolve: func(id *Identity) (*Identity, error) {
			if id.Subject == "mallory@example.com" {
				return nil, fmt.Errorf("%w: %s is not listed", ErrUnauthenticated, id.Subject)
			}
			id.Role = RoleMember
			return id, nil
		},
		Logins:     a.store,
		SessionTTL: testTTL,
		Recorder:   a.rec,
		Now:        a.clock.Now,
	})
	if err != nil {
		a.srv.Close()
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/auth/", a.auth.Handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		id, err := a.auth.Identify(r)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `<!doctype html><title>Tether</title><p id="anon">not signed in</p><a id="signin" href="/auth/login?next=%s">Sign in</a>`,
				url.QueryEscape(r.URL.Path))
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>Tether</title><p id="me">%s · %s · %s · %s · %s</p><p id="path">%s</p>
<form method="post" action="/auth/logout"><button id="logout">Sign out</button></form>`,
			html.EscapeString(id.DisplayName()), html.EscapeString(id.Subject), html.EscapeString(id.Initials()),
			html.EscapeString(strings.Join(id.Groups, ",")), id.Role, html.EscapeString(r.URL.RequestURI()))
	})
	a.srv.Config.Handler = mux
	a.srv.Start()
	t.Cleanup(a.srv.Close)
	return a
}

// browser is an http.Client with a cookie jar that records every
// Set-Cookie it sees and can stop before a path.
type browser struct {
	*http.Client
	mu       sync.Mutex
	set      []*http.Cookie
	stopAt   string // a path not to follow a redirect to
	stoppedU *url.URL
}

func newBrowser(t testing.TB) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{}
	b.Client = &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: b}
	b.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if b.stopAt != "" && req.URL.Path == b.stopAt {
			b.stoppedU = req.URL
			return http.ErrUseLastResponse
		}
		if len(via) > 10 {
			return errors.New("too many redirects")
		}
		return nil
	}
	return b
}

func (b *browser) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		b.mu.Lock()
		b.set = append(b.set, resp.Cookies()...)
		b.mu.Unlock()
	}
	return resp, err
}

func (b *browser) setCookie(name string) *http.Cookie {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.set) - 1; i >= 0; i-- {
		if b.set[i].Name == name {
			return b.set[i]
		}
	}
	return nil
}

func get(t testing.TB, c *browser, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// signIn goes to /auth/login?next=..., follows to the provider's login
// page and posts the form; it returns the last response.
func (a *oidcApp) signIn(t testing.TB, b *browser, next, user, password string) (*http.Response, string) {
	t.Helper()
	u := a.srv.URL + "/auth/login"
	if next != "" {
		u += "?next=" + url.QueryEscape(next)
	}
	resp, body := get(t, b, u)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="username"`) {
		t.Fatalf("expected the provider's login page, got %d %s: %.300s", resp.StatusCode, resp.Request.URL, body)
	}
	if !strings.HasPrefix(resp.Request.URL.String(), a.op.Issuer()+"/login") {
		t.Fatalf("login page at %s, want the provider", resp.Request.URL)
	}
	resp, err := b.PostForm(a.op.Issuer()+"/login", url.Values{
		"id": {resp.Request.URL.Query().Get("id")}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(data)
}

func TestOIDCSignIn(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	resp, body := a.signIn(t, b, "/sessions/42?tab=log", "alice@example.com", "alice-pw")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="me">Alice Smith · alice@example.com · AS · eng,ops · member<`) {
		t.Fatalf("after sign-in: %d %.400s", resp.StatusCode, body)
	}
	if !strings.Contains(body, `id="path">/sessions/42?tab=log<`) {
		t.Fatalf("sign-in did not return to next: %.400s", body)
	}
	c := b.setCookie(SessionCookie)
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != int(testTTL/time.Second) || c.Secure {
		t.Fatalf("session cookie = %+v", c)
	}
	if len(c.Value) != 43 {
		t.Fatalf("cookie value %q: want 32 random bytes", c.Value)
	}
	// The store does not hold the cookie.
	a.store.mu.Lock()
	_, raw := a.store.logins[c.Value]
	a.store.mu.Unlock()
	if raw {
		t.Fatal("the login store is keyed by the cookie itself")
	}
	// Identify on a fresh request with the cookie.
	r := httptest.NewRequest("GET", "/api/me", nil)
	r.AddCookie(&http.Cookie{Name: SessionCookie, Value: c.Value})
	id, err := a.auth.Identify(r)
	if err != nil || id.Subject != "alice@example.com" || id.Email != "alice@example.com" || id.Role != RoleMember {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
	if evs := a.rec.actions(); len(evs) != 1 || evs[0].Action != ActionSignIn || evs[0].Actor != "alice@example.com" ||
		evs[0].Outcome != OutcomeOK || evs[0].Addr != "127.0.0.1" {
		t.Fatalf("audit = %+v", evs)
	}
	// No cookie, a wrong cookie: not signed in.
	for _, v := range []string{"", "nope", strings.Repeat("A", 43)} {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.AddCookie(&http.Cookie{Name: SessionCookie, Value: v})
		}
		if _, err := a.auth.Identify(r); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("cookie %q: %v", v, err)
		}
	}
}

func TestOIDCLogout(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	a.signIn(t, b, "", "alice@example.com", "alice-pw")
	old := b.setCookie(SessionCookie).Value

	post := func(origin string, cookie string) *http.Response {
		req, _ := http.NewRequest("POST", a.srv.URL+"/auth/logout", nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// A cross-site form post cannot sign anyone out.
	if resp := post("http://evil.example", old); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin logout: %d", resp.StatusCode)
	}
	if resp, _ := get(t, b, a.srv.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the cross-origin logout signed Alice out: %d", resp.StatusCode)
	}
	// GET does not sign out.
	if resp, _ := get(t, b, a.srv.URL+"/auth/logout"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /auth/logout: %d", resp.StatusCode)
	}

	resp := post(a.srv.URL, old)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	var cleared bool
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == SessionCookie && c.MaxAge < 0 && c.Value == "")
	}
	if !cleared {
		t.Fatalf("logout did not clear the cookie: %v", resp.Header["Set-Cookie"])
	}
	// The old cookie, replayed, is refused: the login is revoked server-side.
	req, _ := http.NewRequest("GET", a.srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: SessionCookie, Value: old})
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusUnauthorized {
		t.Fatalf("old cookie after logout: %d, want 401", r2.StatusCode)
	}
	evs := a.rec.actions()
	if last := evs[len(evs)-1]; last.Action != ActionSignOut || last.Actor != "alice@example.com" {
		t.Fatalf("audit = %+v", evs)
	}
}

func TestOIDCExpiredLogin(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	if resp, _ := a.signIn(t, b, "", "alice@example.com", "alice-pw"); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	a.clock.Add(testTTL - time.Minute)
	if resp, _ := get(t, b, a.srv.URL+"/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("before expiry: %d", resp.StatusCode)
	}
	a.clock.Add(2 * time.Minute)
	if resp, _ := get(t, b, a.srv.URL+"/"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after expiry: %d, want 401", resp.StatusCode)
	}
}

func TestOIDCTamperedState(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	b.stopAt = "/auth/callback"
	a.signIn(t, b, "", "alice@example.com", "alice-pw")
	cb := b.stoppedU
	if cb == nil || cb.Query().Get("code") == "" || cb.Query().Get("state") == "" {
		t.Fatalf("provider did not redirect to the callback: %v", cb)
	}
	b.stopAt = ""

	// The callback in another browser (no state cookie): login CSRF.
	other := newBrowser(t)
	if resp, body := get(t, other, cb.String()); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "Sign-in failed") {
		t.Fatalf("callback without the state cookie: %d %.200s", resp.StatusCode, body)
	}
	// A tampered state in the right browser.
	q := cb.Query()
	q.Set("state", q.Get("state")+"x")
	tampered := *cb
	tampered.RawQuery = q.Encode()
	if resp, _ := get(t, b, tampered.String()); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("tampered state: %d, want 400", resp.StatusCode)
	}
	if c := b.setCookie(SessionCookie); c != nil || other.setCookie(SessionCookie) != nil {
		t.Fatalf("a session cookie was set: %+v", c)
	}
	if resp, _ := get(t, b, a.srv.URL+"/"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("signed in after a tampered state: %d", resp.StatusCode)
	}
	for _, ev := range a.rec.actions() {
		if ev.Action != ActionSignInFailed {
			t.Fatalf("audit = %+v", ev)
		}
	}
}

func TestOIDCRefusedPerson(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	resp, body := a.signIn(t, b, "", "mallory@example.com", "mallory-pw")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not allowed") || !strings.Contains(body, "Mallory") {
		t.Fatalf("refused person: %d %.300s", resp.StatusCode, body)
	}
	if b.setCookie(SessionCookie) != nil {
		t.Fatal("a refused person got a session cookie")
	}
	// Not a dead end: the page offers to sign in as someone else, which
	// asks the provider for its account chooser.
	if !strings.Contains(body, `href="/auth/login?prompt=select_account"`) || !strings.Contains(body, "Sign in as someone else") {
		t.Fatalf("the refusal offers no other sign-in: %.600s", body)
	}
	other := newBrowser(t)
	other.stopAt = "/authorize"
	get(t, other, a.srv.URL+"/auth/login?prompt=select_account")
	if other.stoppedU == nil || other.stoppedU.Query().Get("prompt") != "select_account" {
		t.Fatalf("sign in as someone else: the provider was asked %v; want prompt=select_account", other.stoppedU)
	}
	if a.store.Len() != 0 {
		t.Fatal("a refused person got a login")
	}
	evs := a.rec.actions()
	if len(evs) != 1 || evs[0].Action != ActionSignInFailed || evs[0].Actor != "mallory@example.com" || evs[0].Outcome != OutcomeRefused {
		t.Fatalf("audit = %+v", evs)
	}
	// A wrong password never leaves the provider.
	resp, body = a.signIn(t, b, "", "alice@example.com", "wrong")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Wrong e-mail or password") {
		t.Fatalf("wrong password: %d %.200s", resp.StatusCode, body)
	}
}

func TestOIDCUnverifiedEmail(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	resp, body := a.signIn(t, b, "", "eve@example.com", "eve-pw")
	// Eve's unverified address is not her identity: the provider's subject is.
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Eve · u-eve ·") {
		t.Fatalf("unverified e-mail: %d %.300s", resp.StatusCode, body)
	}
}

func TestOIDCNextOpenRedirect(t *testing.T) {
	a := newOIDCApp(t)
	b := newBrowser(t)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "evil", "/\x00x", "javascript:alert(1)"} {
		resp, body := get(t, b, a.srv.URL+"/auth/login?next="+url.QueryEscape(next))
		if resp.StatusCode != http.StatusBadRequest || resp.Request.URL.Host != a.srv.Listener.Addr().String() {
			t.Fatalf("next=%q: %d at %s %.200s", next, resp.StatusCode, resp.Request.URL, body)
		}
	}
	if b.setCookie(stateCookie) != nil {
		t.Fatal("a refused login started a sign-in")
	}
	if got, ok := localPath("/a/b?c=d#e"); !ok || got != "/a/b?c=d#e" {
		t.Fatal("a local path was refused")
	}
}

func TestOIDCPendingBound(t *testing.T) {
	a := newOIDCApp(t)
	for range MaxPendingSignIns + 50 {
		a.auth.addPending(&pendingSignIn{state: randomToken(), expires: a.clock.Now().Add(pendingTTL)})
	}
	a.auth.mu.Lock()
	n, m := len(a.auth.pending), a.auth.order.Len()
	a.auth.mu.Unlock()
	if n != MaxPendingSignIns || m != n {
		t.Fatalf("pending = %d/%d, want the bound %d", n, m, MaxPendingSignIns)
	}
}

// chromiumPath finds Chromium, or returns "".
func chromiumPath() string {
	if p := os.Getenv("TETHER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// TestOIDCInChromium signs in the way a person does: headless Chromium
// follows the redirects, the provider's login page is filled in and
// submitted, and the page after sign-in shows who signed in; signing out
// through the page's form works (a same-origin POST). No CLI runs, so
// its name keeps it out of the pinned CLIs' passes (-run
// 'RealCLI|Browser').
func TestOIDCInChromium(t *testing.T) {
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium required under CI=true: install the Debian package chromium (scripts/test.sh does)")
		}
		t.Skip("chromium not found: install the Debian package chromium to run the browser tests")
	}
	a := newOIDCApp(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(string, ...any) {}))
	defer bcancel()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()

	dir := os.Getenv("TETHER_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "tether-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.CaptureScreenshot(&png).Do(ctx); err != nil {
				return err
			}
			p := filepath.Join(dir, name)
			t.Logf("screenshot %s", p)
			return os.WriteFile(p, png, 0o644)
		})
	}

	var anon, loginURL, me, path2, after string
	err := chromedp.Run(ctx,
		chromedp.Navigate(a.srv.URL+"/sessions/7"),
		chromedp.Text("#anon", &anon, chromedp.ByQuery),
		chromedp.Click("#signin", chromedp.ByQuery),
		chromedp.WaitVisible("#username", chromedp.ByQuery),
		chromedp.Location(&loginURL),
		shot("team-oidc-provider-login.png"),
		chromedp.SendKeys("#username", "alice@example.com", chromedp.ByQuery),
		chromedp.SendKeys("#password", "alice-pw", chromedp.ByQuery),
		chromedp.Click("#login", chromedp.ByQuery),
		chromedp.WaitVisible("#me", chromedp.ByQuery),
		chromedp.Text("#me", &me, chromedp.ByQuery),
		chromedp.Text("#path", &path2, chromedp.ByQuery),
		shot("team-oidc-signed-in.png"),
		chromedp.Click("#logout", chromedp.ByQuery),
		chromedp.WaitVisible("#anon", chromedp.ByQuery),
		chromedp.Text("#anon", &after, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if anon != "not signed in" || after != "not signed in" {
		t.Fatalf("before/after: %q / %q", anon, after)
	}
	if !strings.HasPrefix(loginURL, a.op.Issuer()+"/login") {
		t.Fatalf("login page at %s, want the provider's", loginURL)
	}
	if me != "Alice Smith · alice@example.com · AS · eng,ops · member" || path2 != "/sessions/7" {
		t.Fatalf("after sign-in: %q at %q", me, path2)
	}
	var kinds []string
	for _, ev := range a.rec.actions() {
		kinds = append(kinds, ev.Action)
	}
	if strings.Join(kinds, ",") != ActionSignIn+","+ActionSignOut {
		t.Fatalf("audit = %v", kinds)
	}
}
