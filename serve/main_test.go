package serve_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/cluster"
	"github.com/tetherhq/tether/cluster/clustertest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/testlog"
	"github.com/tetherhq/tether/serve"
	"github.com/tetherhq/tether/serve/servetest"
)

var update = flag.Bool("update", false, "rewrite serve/testdata golden files")

func TestMain(m *testing.M) {
	flag.Parse()
	goleak.VerifyTestMain(m)
	os.Exit(0)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fakeCLI plays the CLI for every session. Each prompt's text picks the
// turn: "tool <cmd>" asks to run Bash <cmd> and reports the answer;
// "burst <n> <size>" streams n text deltas of size bytes; "hold" streams
// one delta and waits for the next prompt's arrival before ending;
// "unchecked" ends as a turn whose calls auto mode could not check;
// "background <description>" starts an agent in the background (task
// bg1) and ends its turn while it runs, and "background-done" ends it
// and reports in a turn of its own; "watch <description>" starts a
// watcher (task w1, ambient) and ends its turn;
// "form" has the deploy server's tool ask for a form (an elicitation)
// and reports the action; anything else is echoed.
func fakeCLI(ctx context.Context, c *claudetest.CLI) error {
	if _, err := c.HandleInitialize(ctx); err != nil {
		return err
	}
	for {
		u, err := c.ReadUser(ctx)
		if err != nil {
			return err
		}
		text := claudetest.UserText(u.Raw)
		f := strings.Fields(text)
		c.Write(c.SystemInit(), replayOf(c, u))
		switch {
		case len(f) >= 2 && f[0] == "tool":
			input := map[string]string{"command": strings.Join(f[1:], " ")}
			c.Write(c.AssistantToolUse("toolu_1", "Bash", input))
			resp, err := c.CanUseTool(ctx, "toolu_1", "Bash", input)
			if err != nil {
				return err
			}
			var r struct {
				Behavior string `json:"behavior"`
			}
			_ = json.Unmarshal(resp, &r)
			c.Write(c.ToolResult("toolu_1", r.Behavior, r.Behavior != "allow"), c.AssistantText("tool "+r.Behavior), c.ResultSuccess("tool "+r.Behavior))
		case len(f) == 2 && f[0] == "stamp":
			// n deltas, each carrying the time it was written, for latency.
			n, _ := strconv.Atoi(f[1])
			for range n {
				c.Write(c.TextDelta(0, fmt.Sprintf("ts:%d;", time.Now().UnixNano())))
			}
			c.Write(c.AssistantText("stamped"), c.ResultSuccess("stamped"))
		case len(f) == 3 && f[0] == "burst":
			n, _ := strconv.Atoi(f[1])
			size, _ := strconv.Atoi(f[2])
			chunk := strings.Repeat("x", size)
			for i := range n {
				c.Write(c.TextDelta(0, fmt.Sprintf("%d:%s", i, chunk)))
			}
			c.Write(c.AssistantText("burst done"), c.ResultSuccess("burst done"))
		case len(f) == 3 && f[0] == "edit-file":
			// The Write tool writing f[2] into the file f[1], as the
			// CLI reports it (the original in the result).
			if err := c.WriteTool("toolu_w", f[1], f[2]+"\n"); err != nil {
				return err
			}
			c.Write(c.AssistantText("written"), c.ResultSuccess("written"))
		case text == "unchecked":
			// A turn whose call auto mode could not check (CLI 2.1.337):
			// it runs to its end, marked is_error, and its result is the
			// final text.
			r := c.ResultSuccess("done")
			r["is_error"], r["errors"] = true, []string{"Auto mode could not check some actions Claude tried, so they did not run: Bash. [auto_mode_unchecked]"}
			c.Write(c.AssistantText("done"), r)
		case text == "form":
			c.Write(c.AssistantToolUse("toolu_f", "mcp__deploy__pick", map[string]any{}))
			resp, err := c.Request(ctx, "elicitation", map[string]any{"mcp_server_name": "deploy", "message": "Which environment?", "mode": "form",
				"requested_schema": map[string]any{"type": "object", "properties": map[string]any{"env": map[string]any{"type": "string"}}}})
			if err != nil {
				return err
			}
			var r struct {
				Action string `json:"action"`
			}
			_ = json.Unmarshal(resp, &r)
			c.Write(c.ToolResult("toolu_f", r.Action, false), c.AssistantText("form "+r.Action), c.ResultSuccess("form "+r.Action))
		case len(f) >= 2 && f[0] == "background":
			c.StartBackgroundAgent("bg1", "toolu_bg", strings.Join(f[1:], " "))
			c.Write(c.AssistantText("started in the background"), c.ResultSuccess("started in the background"))
		case len(f) >= 2 && f[0] == "watch":
			c.Write(c.WatcherStarted("w1", "", strings.Join(f[1:], " ")),
				c.AssistantText("watching"), c.ResultSuccess("watching"))
		case text == "background-done":
			c.Write(c.TaskNotification("bg1", "completed"), c.AssistantText("the review is done"), c.ResultSuccess("the review is done"))
		case text == "exit-cli":
			return nil // the CLI ends on its own, as a crash would
		case text == "partial":
			// A message streamed as the API streams it (text, then a tool
			// call whose input is typed as partial JSON), paused halfway
			// until the next prompt arrives.
			first, rest := partialTurn(c)
			c.Write(first...)
			if _, err := c.ReadUser(ctx); err != nil {
				return err
			}
			c.Write(rest...)
		default:
			c.Write(c.AssistantText("echo: "+text), c.ResultSuccess("echo: "+text))
		}
	}
}

// partialTurn is the "partial" turn's lines: those before its pause and
// those after.
func partialTurn(c *claudetest.CLI) (first, rest []any) {
	ev := func(e map[string]any) any {
		return claudetest.Msg{"type": "stream_event", "event": e, "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": fmt.Sprintf("se-%v-%v", e["type"], len(first)+len(rest))}
	}
	delta := func(i int, d map[string]any) any {
		return ev(map[string]any{"type": "content_block_delta", "index": i, "delta": d})
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	assistant := func(block any) any {
		return claudetest.Msg{"type": "assistant", "message": map[string]any{"id": "msg_partial", "type": "message", "role": "assistant", "model": "claude-opus-4-8", "content": []any{block}, "usage": usage},
			"parent_tool_use_id": nil, "session_id": c.SessionID(), "uuid": fmt.Sprintf("as-%d", len(rest))}
	}
	first = append(first, ev(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_partial", "type": "message", "role": "assistant", "model": "claude-opus-4-8", "content": []any{}, "usage": usage}}))
	first = append(first, ev(map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}}))
	for _, w := range []string{"Let ", "me ", "look ", "at ", "the "} {
		first = append(first, delta(0, map[string]any{"type": "text_delta", "text": w}))
	}
	rest = append(rest, delta(0, map[string]any{"type": "text_delta", "text": "files."}))
	rest = append(rest, ev(map[string]any{"type": "content_block_stop", "index": 0}), assistant(map[string]any{"type": "text", "text": "Let me look at the files."}))
	rest = append(rest, ev(map[string]any{"type": "content_block_start", "index": 1, "content_block": map[string]any{"type": "tool_use", "id": "toolu_partial", "name": "Bash", "input": map[string]any{}}}))
	for _, p := range []string{`{"command": "ls -la /some/`, `where/far/away`, `", "description": "List the files in a folder far away"}`} {
		rest = append(rest, delta(1, map[string]any{"type": "input_json_delta", "partial_json": p}))
	}
	input := map[string]any{"command": "ls -la /some/where/far/away", "description": "List the files in a folder far away"}
	rest = append(rest, ev(map[string]any{"type": "content_block_stop", "index": 1}), assistant(map[string]any{"type": "tool_use", "id": "toolu_partial", "name": "Bash", "input": input}))
	rest = append(rest, ev(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "tool_use"}, "usage": map[string]any{"output_tokens": 20}}), ev(map[string]any{"type": "message_stop"}))
	rest = append(rest, c.ToolResult("toolu_partial", "a\nb", false), c.ResultSuccess("done"))
	return first, rest
}

// replayOf is the CLI's echo of a prompt (it acknowledges it).
func replayOf(c *claudetest.CLI, l *claudetest.Line) claudetest.Msg {
	var u struct {
		UUID    string `json:"uuid"`
		Message any    `json:"message"`
	}
	_ = json.Unmarshal(l.Raw, &u)
	return claudetest.Msg{"type": "user", "message": u.Message, "session_id": c.SessionID(), "parent_tool_use_id": nil, "uuid": u.UUID, "isReplay": true}
}

// env is a server on the fake CLI.
type env struct {
	t      testing.TB
	srv    *serve.Server
	http   *httptest.Server
	m      *host.Manager
	fake   *claudetest.FakeCLI
	origin string
	cookie *http.Cookie
	cwd    string
}

type envOptions struct {
	serve   *serve.Options
	journal *host.JournalOptions
	local   *serve.LocalOptions
	reg     *prometheus.Registry // the manager's metrics (serve.Options.Registerer is the server's)
	// cluster serves the sessions of an in-process cluster (NATS, an
	// agent on the same fake CLI) instead of a local manager: serve --nats.
	cluster bool
	// wrap, when set, wraps the backend the server uses.
	wrap func(serve.Backend) serve.Backend
	// cli, when set, is the sessions' CLI (a real one:
	// claudetest.RealCLI.Options) in place of the fake.
	cli *claude.Options
}

func newEnv(t testing.TB, eo *envOptions) *env {
	t.Helper()
	if eo == nil {
		eo = &envOptions{}
	}
	fake := &claudetest.FakeCLI{Script: fakeCLI}
	mo := &host.ManagerOptions{}
	if eo.reg != nil {
		mo.Registerer = eo.reg
	}
	m := host.NewManager(mo)
	lo := serve.LocalOptions{}
	if eo.local != nil {
		lo = *eo.local
	}
	cli := &claude.Options{Transport: fake}
	if eo.cli != nil {
		cli = eo.cli
	}
	lo.Session = &host.Options{CLI: cli, Journal: eo.journal}
	var b serve.Backend = serve.NewLocalBackend(m, &lo)
	if eo.cluster {
		// Elicitations on, as tether agent's template has them.
		c := clustertest.New(t, &clustertest.Options{Capacity: 64, Session: &host.Options{CLI: cli, Journal: eo.journal, Elicitations: true}})
		b = c.Backend(&cluster.BackendOptions{DefaultCwd: lo.DefaultCwd})
	}
	if eo.wrap != nil {
		b = eo.wrap(b)
	}
	so := &serve.Options{}
	if eo.serve != nil {
		so = eo.serve
	}
	if _, bench := t.(*testing.B); so.Logger == nil && !bench { // a benchmark measures the server alone
		c := *so
		c.Logger = testlog.New(t, slog.LevelDebug) // shown if the test fails
		so = &c
	}
	srv := serve.NewServer(b, so)
	hs := httptest.NewServer(srv)
	e := &env{t: t, srv: srv, http: hs, m: m, fake: fake, origin: hs.URL, cwd: t.TempDir()}
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		m.Close()
	})
	e.cookie = e.login()
	return e
}

// login posts the token and returns the cookie.
func (e *env) login() *http.Cookie {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.http.URL+"/auth", strings.NewReader(`{"token":"`+e.srv.Token()+`"}`))
	req.Header.Set("Origin", e.origin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		e.t.Fatalf("login: %s", resp.Status)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "tether_auth" {
			return c
		}
	}
	e.t.Fatal("login set no cookie")
	return nil
}

func (e *env) wsURL() string { return "ws" + strings.TrimPrefix(e.http.URL, "http") + "/ws" }

// dialRaw opens a WebSocket with the cookie and the right Origin.
func (e *env) dialRaw(ctx context.Context) *websocket.Conn {
	e.t.Helper()
	h := http.Header{"Origin": {e.origin}}
	h.Set("Cookie", e.cookie.String())
	c, resp, err := websocket.Dial(ctx, e.wsURL(), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		e.t.Fatalf("dial: %v (%v)", err, resp)
	}
	c.SetReadLimit(64 << 20)
	return c
}

// frame is any server frame: the serve test kit's, decoded as these tests
// read it (session and sessions raw).
type frame struct {
	Type     string          `json:"type"`
	ID       json.RawMessage `json:"id"`
	Result   json.RawMessage `json:"result"`
	Error    *serve.Error    `json:"error"`
	Session  json.RawMessage `json:"session"`
	Sessions json.RawMessage `json:"sessions"`
	Event    *host.Event     `json:"event"`
	Snapshot *host.Snapshot  `json:"snapshot"`
	Protocol int             `json:"protocol"`
	raw      []byte
	at       time.Time
}

func (f *frame) sessionID() string {
	var s string
	if json.Unmarshal(f.Session, &s) == nil {
		return s
	}
	return ""
}

// wsClient is a test client: serve/servetest's, failing the test where
// the kit returns an error.
type wsClient struct {
	t testing.TB
	k *servetest.Client
	c *websocket.Conn // the kit's socket, for raw writes

	mu    sync.Mutex
	next  int
	local map[*servetest.Frame]*frame
}

func (e *env) dial(ctx context.Context) *wsClient {
	e.t.Helper()
	return dialWS(e.t, ctx, e.http.URL, &servetest.DialOptions{Cookie: e.cookie})
}

// dialWS opens a test client to the server at url; it closes when the
// test ends.
func dialWS(t testing.TB, ctx context.Context, url string, o *servetest.DialOptions) *wsClient {
	t.Helper()
	k, err := servetest.Dial(ctx, url, o)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { k.Close() })
	return &wsClient{t: t, k: k, c: k.Conn(), local: map[*servetest.Frame]*frame{}}
}

func (cl *wsClient) close() { cl.k.Close() }

// frameOf is the kit's frame as these tests read it.
func (cl *wsClient) frameOf(kf *servetest.Frame) *frame {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if f, ok := cl.local[kf]; ok {
		return f
	}
	f := &frame{raw: kf.Raw, at: kf.Received}
	if err := json.Unmarshal(kf.Raw, f); err != nil {
		cl.t.Errorf("undecodable frame %s: %v", kf.Raw, err)
	}
	cl.local[kf] = f
	return f
}

// framesFrom returns the frames from number from on.
func (cl *wsClient) framesFrom(from int) []*frame {
	var out []*frame
	for _, kf := range cl.k.Frames()[from:] {
		out = append(out, cl.frameOf(kf))
	}
	return out
}

// send writes a frame as is.
func (cl *wsClient) send(ctx context.Context, v any) {
	cl.t.Helper()
	if err := cl.k.Send(ctx, v); err != nil {
		cl.t.Fatalf("write: %v", err)
	}
}

// call sends a request with a fresh id (set in req) and returns its reply.
func (cl *wsClient) call(ctx context.Context, req map[string]any) *frame {
	cl.t.Helper()
	cl.mu.Lock()
	cl.next++
	req["id"] = cl.next
	cl.mu.Unlock()
	f, err := cl.k.Call(ctx, req)
	if err != nil {
		cl.t.Fatalf("no reply to %v: %v", req, err)
	}
	return cl.frameOf(f)
}

// ok calls and fails the test on an error reply; it returns the result.
func (cl *wsClient) ok(ctx context.Context, req map[string]any) json.RawMessage {
	cl.t.Helper()
	f := cl.call(ctx, req)
	if f.Error != nil {
		cl.t.Fatalf("%v: %v", req, f.Error)
	}
	return f.Result
}

// start starts a session and returns its id.
func (cl *wsClient) start(ctx context.Context, cwd string) string {
	cl.t.Helper()
	var r struct {
		Session serve.SessionInfo `json:"session"`
	}
	if err := json.Unmarshal(cl.ok(ctx, map[string]any{"type": "start", "cwd": cwd}), &r); err != nil || r.Session.ID == "" {
		cl.t.Fatalf("start result: %v %+v", err, r)
	}
	return r.Session.ID
}

// do runs a command and returns the reply frame.
func (cl *wsClient) do(ctx context.Context, id string, cmd map[string]any) *frame {
	cl.t.Helper()
	return cl.call(ctx, map[string]any{"type": "do", "session": id, "command": cmd})
}

// waitFrame waits for a frame (from the first one not yet taken)
// satisfying ok and returns it; from counts frames taken.
func (cl *wsClient) waitFrame(ctx context.Context, from *int, what string, ok func(*frame) bool) *frame {
	cl.t.Helper()
	kf, err := cl.k.WaitFrame(ctx, from, func(kf *servetest.Frame) bool { return ok(cl.frameOf(kf)) })
	if err != nil {
		cl.t.Fatalf("waiting for %s: %v", what, err)
	}
	return cl.frameOf(kf)
}

// eventsOf returns the session's event (and snapshot) frames so far.
func (cl *wsClient) eventsOf(id string) []*frame {
	var out []*frame
	for _, f := range cl.framesFrom(0) {
		if (f.Type == "event" || f.Type == "snapshot") && f.sessionID() == id {
			out = append(out, f)
		}
	}
	return out
}

// isState matches an event frame of the session in the given state.
func isState(id, state string) func(*frame) bool {
	return func(f *frame) bool {
		if f.Type != "event" || f.sessionID() != id || f.Event.Kind != host.EventState {
			return false
		}
		var si host.StateInfo
		_ = json.Unmarshal(f.Event.Data, &si)
		return si.State == state
	}
}

func isKind(id string, kind host.EventKind) func(*frame) bool {
	return func(f *frame) bool {
		return f.Type == "event" && f.sessionID() == id && f.Event.Kind == kind
	}
}
