package serve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

// httpDo sends a request to the test server with the given headers and
// returns the status, the error code of a JSON error body, and the
// response.
func (e *env) httpDo(method, path, body string, hdr map[string]string) (int, string, *http.Response) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.http.URL+path, strings.NewReader(body))
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var eb struct{ Error *serve.Error }
	json.Unmarshal(b, &eb)
	code := ""
	if eb.Error != nil {
		code = eb.Error.Code
	}
	return resp.StatusCode, code, resp
}

func TestRefusals(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	good := e.origin
	cookie := e.cookie.String()
	upgrade := map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"ws without cookie", "GET", "/ws", "", with(upgrade, "Origin", good), 401, serve.CodeUnauthorized},
		{"ws with a wrong cookie", "GET", "/ws", "", with(upgrade, "Origin", good, "Cookie", "tether_auth=00"), 401, serve.CodeUnauthorized},
		{"ws with the token in the query", "GET", "/ws?token=" + e.srv.Token(), "", with(upgrade, "Origin", good), 401, serve.CodeUnauthorized},
		{"ws from another site", "GET", "/ws", "", with(upgrade, "Origin", "http://evil.example", "Cookie", cookie), 403, serve.CodeForbiddenOrigin},
		{"ws from another port", "GET", "/ws", "", with(upgrade, "Origin", "http://127.0.0.1:1", "Cookie", cookie), 403, serve.CodeForbiddenOrigin},
		{"ws with a null origin", "GET", "/ws", "", with(upgrade, "Origin", "null", "Cookie", cookie), 403, serve.CodeForbiddenOrigin},
		{"ws with a cookie and no origin", "GET", "/ws", "", with(upgrade, "Cookie", cookie), 403, serve.CodeForbiddenOrigin},
		{"ws by DNS rebinding", "GET", "/ws", "", with(upgrade, "Host", "evil.example:80", "Origin", "http://evil.example:80", "Cookie", cookie), 403, serve.CodeForbiddenHost},
		{"ws with a wrong bearer", "GET", "/ws", "", with(upgrade, "Authorization", "Bearer nope"), 401, serve.CodeUnauthorized},
		{"auth with a wrong token", "POST", "/auth", `{"token":"nope"}`, map[string]string{"Origin": good}, 401, serve.CodeUnauthorized},
		{"auth from another site", "POST", "/auth", `{"token":"` + e.srv.Token() + `"}`, map[string]string{"Origin": "http://evil.example"}, 403, serve.CodeForbiddenOrigin},
		{"auth with a bad host", "POST", "/auth", `{"token":"` + e.srv.Token() + `"}`, map[string]string{"Host": "evil.example"}, 403, serve.CodeForbiddenHost},
		{"auth by GET", "GET", "/auth", "", nil, 405, serve.CodeMethodNotAllowed},
		{"auth without JSON", "POST", "/auth", `token=x`, map[string]string{"Origin": good}, 400, serve.CodeBadRequest},
		{"auth too big", "POST", "/auth", `{"token":"` + strings.Repeat("x", 70000) + `"}`, map[string]string{"Origin": good}, 413, serve.CodeTooLarge},
		{"api without credentials", "GET", "/api/sessions", "", nil, 401, serve.CodeUnauthorized},
		{"api snapshot of nothing", "GET", "/api/sessions/nope/snapshot", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()}, 404, serve.CodeNoSession},
		{"unknown api", "GET", "/api/nope", "", nil, 404, serve.CodeNotFound},
		{"post to the UI", "POST", "/", "", map[string]string{"Origin": good}, 405, serve.CodeMethodNotAllowed},
		{"logout without origin", "POST", "/logout", "", map[string]string{"Cookie": cookie}, 403, serve.CodeForbiddenOrigin},
		{"healthz by POST", "POST", "/healthz", "", map[string]string{"Origin": good}, 405, serve.CodeMethodNotAllowed},
		{"readyz by POST", "POST", "/readyz", "", map[string]string{"Origin": good}, 405, serve.CodeMethodNotAllowed},
		{"api list by POST", "POST", "/api/sessions", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()}, 405, serve.CodeMethodNotAllowed},
		{"snapshot by DELETE", "DELETE", "/api/sessions/x/snapshot", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()}, 405, serve.CodeMethodNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, code, resp := e.httpDo(c.method, c.path, c.body, c.hdr)
			if status != c.status || code != c.code {
				t.Errorf("got %d %q, want %d %q", status, code, c.status, c.code)
			}
			if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
				t.Errorf("CORS header %q", v)
			}
			if sc := resp.Header.Get("Set-Cookie"); sc != "" {
				t.Errorf("a refused request set a cookie: %q", sc)
			}
		})
	}
	// None of it changed anything.
	_, _, resp := e.httpDo("GET", "/api/sessions", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()})
	if resp.StatusCode != 200 {
		t.Fatalf("api with the bearer: %s", resp.Status)
	}
	cl := e.dial(ctx)
	var r struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &r)
	if len(r.Sessions) != 0 {
		t.Errorf("sessions after refusals: %+v", r.Sessions)
	}
}

func TestCookie(t *testing.T) {
	e := newEnv(t, nil)
	c := e.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || strings.Contains(c.Value, e.srv.Token()) {
		t.Errorf("cookie %v", c)
	}
	if !strings.HasPrefix(e.srv.LoginURL("http://127.0.0.1:1"), "http://127.0.0.1:1/#token=") {
		t.Errorf("login URL %q", e.srv.LoginURL("http://127.0.0.1:1"))
	}
	// The UI's pages carry a strict CSP; static files need no login.
	status, _, resp := e.httpDo("GET", "/", "", nil)
	if status != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Errorf("GET / = %d, CSP %q", status, resp.Header.Get("Content-Security-Policy"))
	}
}

// TestLoginRateLimited: wrong tokens are refused with 429 after ten
// from one client, but the right token and a valid bearer still work:
// the limiter only ever judges failures.
func TestLoginRateLimited(t *testing.T) {
	e := newEnv(t, nil)
	origin := map[string]string{"Origin": e.origin}
	for i := range 20 {
		s, code, resp := e.httpDo("POST", "/auth", `{"token":"guess"}`, origin)
		switch {
		case i < 10 && s != 401:
			t.Fatalf("wrong token %d: %d", i, s)
		case i >= 10 && (s != 429 || code != serve.CodeRateLimited || resp.Header.Get("Retry-After") == ""):
			t.Fatalf("wrong token %d: %d %q Retry-After %q; want 429 with Retry-After", i, s, code, resp.Header.Get("Retry-After"))
		}
	}
	if s, _, _ := e.httpDo("GET", "/api/sessions", "", map[string]string{"Authorization": "Bearer nope"}); s != 429 {
		t.Errorf("a wrong bearer while limited: %d", s)
	}
	// The right token after 20 wrong ones: in.
	if s, code, _ := e.httpDo("POST", "/auth", `{"token":"`+e.srv.Token()+`"}`, origin); s != 204 {
		t.Errorf("the right token after 20 wrong ones: %d %q", s, code)
	}
	if s, _, _ := e.httpDo("GET", "/api/sessions", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()}); s != 200 {
		t.Errorf("the right bearer while limited: %d", s)
	}
	if s, _, _ := e.httpDo("GET", "/api/sessions", "", map[string]string{"Cookie": e.cookie.String()}); s != 200 {
		t.Errorf("the cookie while limited: %d", s)
	}
}

// TestLoginLimitedPerClientBehindProxy: behind a trusted proxy the
// client is the X-Forwarded-For hop the proxy added; one client's
// failures do not lock out another.
func TestLoginLimitedPerClientBehindProxy(t *testing.T) {
	e := newEnv(t, &envOptions{serve: &serve.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	from := func(xff string) map[string]string {
		return map[string]string{"Origin": e.origin, "X-Forwarded-For": xff}
	}
	// A client that forges a left-most hop is still the hop the proxy saw.
	for i := range 10 {
		if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, from(fmt.Sprintf("10.9.9.%d, 203.0.113.7", i))); s != 401 {
			t.Fatalf("wrong token %d: %d", i, s)
		}
	}
	if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, from("203.0.113.7")); s != 429 {
		t.Errorf("the guessing client after 10 failures: %d, want 429", s)
	}
	// A second proxy hop (trusted) in between changes nothing.
	if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, from("203.0.113.7, 127.0.0.2")); s != 429 {
		t.Errorf("the guessing client through two proxies: %d, want 429", s)
	}
	if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, from("203.0.113.8")); s != 401 {
		t.Errorf("another client's wrong token: %d, want 401 (not locked out)", s)
	}
	if s, _, _ := e.httpDo("POST", "/auth", `{"token":"`+e.srv.Token()+`"}`, from("203.0.113.7")); s != 204 {
		t.Errorf("the right token from the locked-out client: %d", s)
	}
}

// TestForwardedForFromUntrustedPeer: without trusted proxies the header
// is ignored, so a guesser cannot escape the limit by varying it.
func TestForwardedForFromUntrustedPeer(t *testing.T) {
	for _, c := range []struct {
		name    string
		trusted []netip.Prefix
	}{
		{"none trusted", nil},
		{"another proxy trusted", []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, &envOptions{serve: &serve.Options{TrustedProxies: c.trusted}})
			for i := range 10 {
				hdr := map[string]string{"Origin": e.origin, "X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i)}
				if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, hdr); s != 401 {
					t.Fatalf("wrong token %d: %d", i, s)
				}
			}
			hdr := map[string]string{"Origin": e.origin, "X-Forwarded-For": "198.51.100.99"}
			if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, hdr); s != 429 {
				t.Errorf("a forged X-Forwarded-For escaped the limit: %d, want 429", s)
			}
		})
	}
}

// A program that is not a browser sends the token as a bearer, and no
// Origin.
func TestWebSocketWithBearer(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	c, err := servetest.Dial(ctx, e.http.URL, &servetest.DialOptions{Token: e.srv.Token(), Header: http.Header{"Origin": nil}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f, err := c.WaitFrame(ctx, nil, nil); err != nil || f.Type != "hello" {
		t.Fatalf("first frame %+v, %v", f, err)
	}
}

// /healthz says the process is alive; /readyz whether the backend can
// serve: for a local backend, whether its CLI is there.
func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t, nil)
	if status, _, _ := e.httpDo("GET", "/healthz", "", nil); status != 200 {
		t.Fatalf("/healthz: %d", status)
	}
	if status, code, _ := e.httpDo("GET", "/readyz", "", nil); status != 200 {
		t.Fatalf("/readyz with a CLI: %d %s", status, code)
	}
	m := host.NewManager(nil)
	defer m.Close()
	missing := serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: &claude.Options{CLIPath: filepath.Join(t.TempDir(), "no-claude")}}})
	srv := serve.NewServer(missing, nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	req, _ := http.NewRequest("GET", hs.URL+"/readyz", nil)
	req.Host = "localhost"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error *serve.Error }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 503 || body.Error == nil || body.Error.Code != serve.CodeUnavailable || !strings.Contains(body.Error.Message, "CLI") {
		t.Fatalf("/readyz without a CLI: %d %+v", resp.StatusCode, body.Error)
	}
}
