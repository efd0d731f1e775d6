package serve_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// TestRealCLIResumeFromDisk: a session run with the real CLI and closed
// is listed by disk_sessions (title, last prompt, time) and resumed, and
// the resumed conversation has the earlier turn.
func TestRealCLIResumeFromDisk(t *testing.T) {
	ctx := testCtx(t)
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{
		claudetest.TextReply("Noted: the word is tangerine."),
		claudetest.TextReply("It was tangerine."),
	}})
	t.Cleanup(api.Close)
	cli := claudetest.NewRealCLI(t, api)
	m := host.NewManager(nil)
	srv := serve.NewServer(serve.NewLocalBackend(m, &serve.LocalOptions{Session: &host.Options{CLI: cli.Options()}}), nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); m.Close() })
	e := &env{t: t, srv: srv, http: hs, m: m, origin: hs.URL, cwd: cli.Dir}
	e.cookie = e.login()
	cl := e.dial(ctx)
	id := cl.start(ctx, cli.Dir)
	n := 0
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	turn(t, ctx, cl, id, "remember the word tangerine", &n)
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
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id2})
	turn(t, ctx, cl, id2, "which word?", &n)
	// The model got the earlier turn as context.
	reqs := api.Requests()
	last := reqs[len(reqs)-1]
	b, _ := json.Marshal(last.Params.Messages)
	if !strings.Contains(string(b), "tangerine") {
		t.Errorf("the resumed session's request lacks the earlier turn: %.500s", b)
	}
}
