package servetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server serves sessions of the fake CLI's echo until the test ends.
func server(t *testing.T) (*serve.Server, *httptest.Server) {
	t.Helper()
	m := host.NewManager(nil)
	b := serve.NewLocalBackend(m, &serve.LocalOptions{
		DefaultCwd: t.TempDir(),
		Session:    &host.Options{CLI: &claude.Options{Transport: &claudetest.FakeCLI{Script: claudetest.Echo}}},
	})
	srv := serve.NewServer(b, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		m.Close()
	})
	return srv, hs
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A whole exchange: the greeting, a start, a subscription, a prompt and
// its turn, as frames; a refused command is a reply with an error.
func TestClient(t *testing.T) {
	ctx := testCtx(t)
	srv, hs := server(t)
	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	hello, err := c.WaitFrame(ctx, &n, nil)
	if err != nil || hello.Type != "hello" || hello.Protocol != serve.ProtocolVersion || hello.DefaultCwd == "" {
		t.Fatalf("first frame %+v, %v", hello, err)
	}
	list, err := c.WaitFrame(ctx, &n, nil)
	if err != nil || list.Type != "sessions" || len(list.Sessions) != 0 {
		t.Fatalf("second frame %s, %v", list.Raw, err)
	}
	info, err := c.Start(ctx, nil)
	if err != nil || info.Cwd != hello.DefaultCwd {
		t.Fatalf("start: %+v, %v", info, err)
	}
	// Every client is told of the session.
	if f, err := c.WaitFrame(ctx, &n, func(f *servetest.Frame) bool { return f.Type == "session" }); err != nil || f.SessionID != info.ID || f.Session.Cwd != info.Cwd {
		t.Fatalf("session frame %+v, %v", f, err)
	}
	if _, err := c.OK(ctx, map[string]any{"type": "subscribe", "session": info.ID}); err != nil {
		t.Fatal(err)
	}
	if f, err := c.Do(ctx, info.ID, &host.Command{Type: host.CommandSend, Text: "hi"}); err != nil || f.Error != nil {
		t.Fatalf("send: %+v, %v", f, err)
	}
	if _, err := c.WaitFrame(ctx, &n, servetest.IsState(info.ID, "idle")); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	var text []string
	for _, f := range c.Frames() {
		if !servetest.IsEvent(info.ID, "")(f) {
			continue
		}
		if f.Event.Seq != seq+1 {
			t.Errorf("event %d after %d", f.Event.Seq, seq)
		}
		seq = f.Event.Seq
		var m struct{ Type, Result string }
		if f.Event.Kind == host.EventMessage && json.Unmarshal(f.Event.Data, &m) == nil && m.Type == "result" {
			text = append(text, m.Result)
		}
	}
	if strings.Join(text, "|") != "echo: hi" {
		t.Errorf("results %q", text)
	}
	// A refused request is a reply, and OK's error.
	f, err := c.Call(ctx, map[string]any{"type": "do", "session": "nope", "command": map[string]any{"type": "send", "text": "x"}})
	if err != nil || f.Type != "reply" || f.Error == nil || f.Error.Code != serve.CodeNoSession {
		t.Fatalf("a command to no session: %+v, %v", f, err)
	}
	var se *serve.Error
	if _, err := c.OK(ctx, map[string]any{"type": "list", "v": 2}); !errors.As(err, &se) || se.Code != serve.CodeUnsupportedVersion {
		t.Fatalf("v 2: %v", err)
	}
	// Send: no id, no version; its error frame is kept.
	if err := c.Send(ctx, []byte(`not json`)); err != nil {
		t.Fatal(err)
	}
	if f, err := c.WaitFrame(ctx, &n, func(f *servetest.Frame) bool { return f.Type == "error" }); err != nil || f.Error.Code != serve.CodeBadRequest {
		t.Fatalf("error frame %+v, %v", f, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctx, map[string]any{"type": "list"}); !errors.Is(err, servetest.ErrClosed) {
		t.Fatalf("call after close: %v", err)
	}
	if _, err := c.WaitFrame(ctx, &n, nil); !errors.Is(err, servetest.ErrClosed) {
		t.Fatalf("wait after close: %v", err)
	}
}

// A refused upgrade is a *DialError with the status and the server's
// code; a cookie from /auth opens the socket (with the server's own
// Origin, added as a browser adds it).
func TestDialCredentials(t *testing.T) {
	ctx := testCtx(t)
	srv, hs := server(t)
	var de *servetest.DialError
	if _, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: "wrong"}); !errors.As(err, &de) || de.StatusCode != http.StatusUnauthorized || de.Refusal == nil || de.Refusal.Code != serve.CodeUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token(), Header: http.Header{"Origin": {"https://elsewhere.example"}}}); !errors.As(err, &de) || de.StatusCode != http.StatusForbidden {
		t.Fatalf("another origin: %v", err)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/auth", strings.NewReader(`{"token":"`+srv.Token()+`"}`))
	req.Header.Set("Origin", hs.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %v %v", resp, err)
	}
	resp.Body.Close()
	c, err := servetest.Dial(ctx, srv.LoginURL(hs.URL), &servetest.DialOptions{Cookie: resp.Cookies()[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f, err := c.WaitFrame(ctx, nil, nil); err != nil || f.Type != "hello" {
		t.Fatalf("first frame %+v, %v", f, err)
	}
}

// Past the buffer's bound the oldest frames go, and a wait that had not
// looked at them says so instead of skipping them.
func TestBufferBound(t *testing.T) {
	ctx := testCtx(t)
	srv, hs := server(t)
	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token(), Buffer: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 3 { // replies to Send are frames: hello, sessions, then these
		if err := c.Send(ctx, map[string]any{"type": "list", "id": i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.WaitFrame(ctx, nil, func(f *servetest.Frame) bool { return string(f.ID) == "2" }); err != nil {
		t.Fatal(err)
	}
	n := 0
	if _, err := c.WaitFrame(ctx, &n, nil); !errors.Is(err, servetest.ErrDropped) {
		t.Fatalf("waiting from frame 0: %v; want frames dropped", err)
	}
	// Waiting from the oldest kept frame still works.
	if f, err := c.WaitFrame(ctx, nil, nil); err != nil || f == nil {
		t.Fatalf("from the oldest kept: %v", err)
	}
	if got := len(c.Frames()); got > 2 {
		t.Fatalf("%d frames kept, want at most 2", got)
	}
}

// A call whose ctx ends returns ctx's error; the client goes on.
func TestCallCancelled(t *testing.T) {
	ctx := testCtx(t)
	srv, hs := server(t)
	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Call(cctx, map[string]any{"type": "list"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if _, err := c.OK(ctx, map[string]any{"type": "list"}); err != nil {
		t.Fatal(err)
	}
}

// Keep chooses the frames kept: the others are not numbered.
func TestKeep(t *testing.T) {
	ctx := testCtx(t)
	srv, hs := server(t)
	c, err := servetest.Dial(ctx, hs.URL, &servetest.DialOptions{Token: srv.Token(), Keep: func(f *servetest.Frame) bool { return f.Type != "hello" }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	if f, err := c.WaitFrame(ctx, &n, nil); err != nil || f.Type != "sessions" || n != 1 {
		t.Fatalf("first frame kept: %+v, %v (n %d); want the list", f, err, n)
	}
}
