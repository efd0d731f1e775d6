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

// TestRealCLIItems: with the real CLI (its stream events, as the API
// streams a tool call's input in pieces of partial JSON), a subscriber
// with items sees the Bash call's input grow as valid JSON, then whole,
// its result with the command's output, the answer's text and the
// turn's end; never a raw message.
func TestRealCLIItems(t *testing.T) {
	ctx := testCtx(t)
	input := map[string]any{"command": "echo items-from-the-real-cli", "description": "Say it"}
	tool := claudetest.ToolUseReply("toolu_items_1", "Bash", input)
	tool.ChunkSize = 6
	answer := claudetest.TextReply("Done: the command said it.")
	answer.ChunkSize = 4
	api := claudetest.NewMessagesServer(&claudetest.MessagesOptions{Replies: []*claudetest.Reply{tool, answer}})
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
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id, "items": true})
	cl.do(ctx, id, map[string]any{"type": "send", "text": "say it"})
	n := 0
	isResult := func(f *frame) bool {
		return f.Type == "items" && f.sessionID() == id && strings.Contains(string(f.raw), `"kind":"result"`)
	}
	// The CLI may ask to run the command (or find it harmless): allow it.
	for {
		f := cl.waitFrame(ctx, &n, "the turn's end", func(f *frame) bool { return isResult(f) || isKind(id, host.EventApproval)(f) })
		if isResult(f) {
			break
		}
		var a host.ApprovalInfo
		json.Unmarshal(f.Event.Data, &a)
		cl.do(ctx, id, map[string]any{"type": "answer", "approval": a.ID, "behavior": "allow"})
	}

	items := map[string]serve.Item{}
	var typed []string // the tool input's versions while it streamed
	for _, f := range sessionFrames(cl, id) {
		if f.Type == "event" && f.Event.Kind == host.EventMessage {
			t.Fatalf("a raw message to an items subscriber: %s", f.raw)
		}
		for _, it := range applyItems(items, f) {
			if it.Kind == serve.ItemToolUse {
				if !json.Valid(it.Input) {
					t.Errorf("seq %d: tool input %s", seqOf(f), it.Input)
				}
				if it.Status == serve.ItemStreaming {
					typed = append(typed, string(it.Input))
				}
			}
		}
	}
	var in map[string]string
	tu := items["toolu_items_1"]
	json.Unmarshal(tu.Input, &in)
	if tu.Name != "Bash" || tu.Status != serve.ItemDone || in["command"] != "echo items-from-the-real-cli" {
		t.Errorf("tool item %+v", tu)
	}
	partial := false
	for _, v := range typed {
		partial = partial || strings.HasPrefix(v, `{"command":"echo items`) && !strings.Contains(v, "Say it")
	}
	if !partial {
		t.Errorf("the tool input never showed half typed: %q", typed)
	}
	res := items["result/toolu_items_1"]
	if res.Kind != serve.ItemToolResult || res.IsError || !strings.Contains(string(res.Structured), "items-from-the-real-cli") {
		t.Errorf("tool result item %+v (%s)", res, res.Structured)
	}
	var text, result bool
	for _, it := range items {
		text = text || it.Kind == serve.ItemText && it.Text == "Done: the command said it." && it.Status == serve.ItemDone
		result = result || it.Kind == serve.ItemResult && it.Turn != nil && !it.Turn.IsError
	}
	if !text || !result {
		t.Errorf("no final text (%v) or result (%v) among %+v", text, result, items)
	}
}
