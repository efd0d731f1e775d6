package serve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	req, _ := http.NewRequest("GET", hs.URL+"/api/sessions/"+id2+"/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+srv.Token())
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
