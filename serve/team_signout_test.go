package serve_test

import (
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
	"github.com/tetherhq/tether/team"
)

// loginAuth signs people in by login id (the X-Test-Login header names
// one); POST /auth/logout revokes the request's login, as the OpenID
// Connect sign-in does with its cookie.
type loginAuth struct {
	mu     sync.Mutex
	logins map[string]string // login id -> subject
}

func (a *loginAuth) Identify(r *http.Request) (*team.Identity, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sub, ok := a.logins[r.Header.Get("X-Test-Login")]
	if !ok {
		return nil, team.ErrUnauthenticated
	}
	return &team.Identity{Subject: sub, Email: sub}, nil
}

func (a *loginAuth) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/auth/logout" && r.Method == http.MethodPost {
			a.mu.Lock()
			delete(a.logins, r.Header.Get("X-Test-Login"))
			a.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// TestTeamSignOutClosesSockets: signing out closes, at once, every socket
// of that login (every tab of that browser) with close code 4401
// "signed out", long before the periodic recheck (an hour here); the
// same person's other login (a phone) stays connected.
func TestTeamSignOutClosesSockets(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir()
	cfg := &fakeConfig{root: root}
	if err := os.MkdirAll(cfg.Workspace(&me_alice), 0o755); err != nil {
		t.Fatal(err)
	}
	auth := &loginAuth{logins: map[string]string{"laptop": "alice@example.com", "phone": "alice@example.com", "bobs": "bob@example.com"}}
	authz := newFakeAuthz()
	to := &serve.TeamOptions{Auth: auth, Config: cfg, Authorizer: authz, RecheckInterval: time.Hour}
	e := teamServer(t, to, cfg, authz, fakeCLI, nil)

	dial := func(login string) *servetest.Client {
		t.Helper()
		c, err := servetest.Dial(ctx, e.http.URL, &servetest.DialOptions{Header: http.Header{"X-Test-Login": {login}}})
		if err != nil {
			t.Fatalf("dial as %s: %v", login, err)
		}
		t.Cleanup(func() { c.Close() })
		// The hello and the list: the socket is up.
		n := 0
		for range 2 {
			if _, err := c.WaitFrame(ctx, &n, nil); err != nil {
				t.Fatalf("%s: %v", login, err)
			}
		}
		return c
	}
	tab1, tab2, phone, bob := dial("laptop"), dial("laptop"), dial("phone"), dial("bobs")

	// closed waits until the socket ends and returns its close status.
	closed := func(c *servetest.Client, within time.Duration) (websocket.StatusCode, string) {
		select {
		case <-c.Done():
		case <-time.After(within):
			return -1, "still open"
		}
		var ce websocket.CloseError
		if !errors.As(c.Err(), &ce) {
			return -1, c.Err().Error()
		}
		return ce.Code, ce.Reason
	}

	start := time.Now()
	if st, _, body := e.as("", "POST", "/auth/logout", "", "X-Test-Login", "laptop"); st != http.StatusNoContent {
		t.Fatalf("logout: %d %s", st, body)
	}
	for name, c := range map[string]*servetest.Client{"tab 1": tab1, "tab 2": tab2} {
		if code, reason := closed(c, 10*time.Second); code != 4401 || reason != "signed out" {
			t.Errorf("%s of the login signed out: closed with %d %q; want 4401 \"signed out\"", name, code, reason)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the tabs closed after %v", d)
	}
	// The phone's login and Bob are untouched: their sockets still answer.
	for name, c := range map[string]*servetest.Client{"the phone": phone, "bob": bob} {
		if _, err := c.OK(ctx, map[string]any{"type": "list"}); err != nil {
			t.Errorf("%s after Alice's laptop signed out: %v; want its reply", name, err)
		}
	}
}
