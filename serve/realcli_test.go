package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// TestRealCLIResumeFromDisk: a session run with the real CLI and closed
// is listed by disk_sessions (title, last prompt, time) and resumed, and
// the resumed conversation has the earlier turn.
func TestRealCLIResumeFromDisk(t *testing.T) {
	ctx := testCtx(t)
	e, api, cli, cl, id, n := rememberTangerine(t, ctx)
	var list struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &list)
	sid := list.Sessions[0].SessionID
	if f := cl.do(ctx, id, map[string]any{"type": "close"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	var disk struct{ Sessions []serve.DiskSession }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "disk_sessions", "cwd": cli.Dir}), &disk)
	if len(disk.Sessions) != 1 || disk.Sessions[0].SessionID != sid || disk.Sessions[0].LastPrompt != "remember the word tangerine" || disk.Sessions[0].Modified.IsZero() {
		t.Fatalf("disk sessions %+v, want %s", disk.Sessions, sid)
	}
	var r struct{ Session serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "start", "cwd": cli.Dir, "resume": sid}), &r)
	id2 := r.Session.ID
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id2, "snapshot": true})
	// The snapshot has the earlier conversation, read from the session
	// file, as stream-json lines the UI renders like live ones.
	f := cl.waitFrame(ctx, &n, "the resumed session's snapshot", func(f *frame) bool {
		return f.Type == "snapshot" && f.sessionID() == id2
	})
	var sf struct {
		Snapshot struct{ History *serve.History }
	}
	if err := json.Unmarshal(f.raw, &sf); err != nil || sf.Snapshot.History == nil {
		t.Fatalf("snapshot of a resumed session without history: %s", f.raw)
	}
	h := sf.Snapshot.History
	var kinds []string
	for _, raw := range h.Messages {
		var m struct {
			Type    string
			Message struct{ Role string }
		}
		json.Unmarshal(raw, &m)
		kinds = append(kinds, m.Type+"/"+m.Message.Role)
	}
	all := fmt.Sprintf("%s", h.Messages)
	if h.Source != sid || len(h.Messages) < 2 || kinds[0] != "user/user" || kinds[len(kinds)-1] != "assistant/assistant" ||
		!strings.Contains(all, "remember the word tangerine") || !strings.Contains(all, "Noted: the word is tangerine.") {
		t.Fatalf("history %v (source %s), want the earlier prompt and answer of %s: %s", kinds, h.Source, sid, all)
	}
	// The HTTP snapshot has it too.
	req, _ := http.NewRequest("GET", e.http.URL+"/api/sessions/"+id2+"/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "remember the word tangerine") {
		t.Errorf("GET snapshot lacks the history: %.300s", b)
	}
	turn(t, ctx, cl, id2, "which word?", &n)
	// The model got the earlier turn as context.
	reqs := api.Requests()
	last := reqs[len(reqs)-1]
	b, _ = json.Marshal(last.Params.Messages)
	if !strings.Contains(string(b), "tangerine") {
		t.Errorf("the resumed session's request lacks the earlier turn: %.500s", b)
	}
}

// TestRealCLIResumeDisconnected: a session whose CLI died shows
// disconnected; the resume command brings it back with --resume on its
// conversation (the local backend: a new session in the old one's place),
// with the earlier conversation in its snapshot. A running session is
// not resumed.
func TestRealCLIResumeDisconnected(t *testing.T) {
	ctx := testCtx(t)
	e, api, cli, cl, id, n := rememberTangerine(t, ctx)
	if f := cl.do(ctx, id, map[string]any{"type": "resume"}); f.Error == nil || f.Error.Code != serve.CodeBadRequest {
		t.Fatalf("resume of a running session: %+v, want bad_request", f.Error)
	}
	// The CLI writes its session file behind the turn: kill it once the
	// answer is on disk, as --resume needs it.
	hs0 := e.m.Get(id)
	waitSessionFile(t, ctx, cli.Options(), cli.Dir, hs0.SessionID(), "Noted: the word is tangerine.")
	if err := syscall.Kill(hs0.Claude().PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cl.waitFrame(ctx, &n, "the session disconnected", func(f *frame) bool {
		return isKind(id, host.EventState)(f) && strings.Contains(string(f.Event.Data), `"disconnected"`)
	})
	f := cl.do(ctx, id, map[string]any{"type": "resume"})
	if f.Error != nil {
		t.Fatalf("resume: %v", f.Error)
	}
	var rr serve.Result
	json.Unmarshal(f.Result, &rr)
	id2 := rr.Session.ID
	if id2 == "" || rr.Session.Title != "remember the word tangerine" {
		t.Fatalf("resume result %s", f.Result)
	}
	// The list has the resumed session in the old one's place.
	var list struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id2 {
		t.Fatalf("sessions after resume %+v, want only %s", list.Sessions, id2)
	}
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id2, "snapshot": true})
	f = cl.waitFrame(ctx, &n, "the resumed session's snapshot", func(f *frame) bool {
		return f.Type == "snapshot" && f.sessionID() == id2
	})
	if !strings.Contains(string(f.raw), "remember the word tangerine") {
		t.Errorf("the resumed session's snapshot lacks the earlier conversation: %.500s", f.raw)
	}
	turn(t, ctx, cl, id2, "which word?", &n)
	reqs := api.Requests()
	b, _ := json.Marshal(reqs[len(reqs)-1].Params.Messages)
	if !strings.Contains(string(b), "tangerine") {
		t.Errorf("the resumed session's request lacks the earlier turn: %.500s", b)
	}
}

// waitSessionFile waits until the CLI's session file of sid holds want.
// The CLI gives no signal for it: poll, bounded by ctx.
func waitSessionFile(t *testing.T, ctx context.Context, o *claude.Options, cwd, sid, want string) {
	t.Helper()
	dir := o.Env[claude.EnvConfigDir]
	if dir == "" {
		dir = filepath.Join(o.Env["HOME"], ".claude")
	}
	path := claude.SessionFilePath(dir, cwd, sid)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the session file %s never held %q", path, want)
		case <-tick.C:
		}
	}
}

// rememberTangerine starts a server over the real CLI (the fake API
// answers two turns), a session on it, and runs its first turn, which
// the second turn of each resume test must remember.
// n is the frame cursor of cl after that turn.
func rememberTangerine(t *testing.T, ctx context.Context) (e *env, api *claudetest.MessagesServer, cli *claudetest.RealCLI, cl *wsClient, id string, n int) {
	t.Helper()
	api = claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("Noted: the word is tangerine."),
		claudetest.TextReply("It was tangerine."),
	}})
	t.Cleanup(api.Close)
	cli = claudetest.NewRealCLI(t, api)
	m := host.NewManager(nil)
	srv := serve.NewServer(serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: cli.Options()}}), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); m.Close() })
	e = &env{t: t, srv: srv, http: hs, m: m, origin: hs.URL, cwd: cli.Dir}
	e.cookie = e.login()
	cl = e.dial(ctx)
	id = cl.start(ctx, cli.Dir)
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	turn(t, ctx, cl, id, "remember the word tangerine", &n)
	return e, api, cli, cl, id, n
}
