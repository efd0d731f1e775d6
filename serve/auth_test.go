package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/serve"
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

func TestLoginRateLimited(t *testing.T) {
	e := newEnv(t, nil)
	for range 10 {
		if s, _, _ := e.httpDo("POST", "/auth", `{"token":"guess"}`, map[string]string{"Origin": e.origin}); s != 401 {
			t.Fatalf("wrong token: %d", s)
		}
	}
	// Now even the right token waits, and says for how long.
	s, code, resp := e.httpDo("POST", "/auth", `{"token":"`+e.srv.Token()+`"}`, map[string]string{"Origin": e.origin})
	if s != 429 || code != serve.CodeRateLimited || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after 10 failures: %d %q Retry-After %q", s, code, resp.Header.Get("Retry-After"))
	}
	if s, _, _ := e.httpDo("GET", "/api/sessions", "", map[string]string{"Authorization": "Bearer " + e.srv.Token()}); s != 429 {
		t.Errorf("bearer while limited: %d", s)
	}
}

func TestWebSocketWithBearer(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	c, _, err := websocket.Dial(ctx, e.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.srv.Token()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(ctx)
	if err != nil || !strings.Contains(string(b), `"hello"`) {
		t.Fatalf("first frame %s, %v", b, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	_ = context.Background
}
