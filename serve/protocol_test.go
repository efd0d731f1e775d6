package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// turn sends a prompt and waits for its delivery to be answered.
func turn(t *testing.T, ctx context.Context, cl *wsClient, id, text string, from *int) {
	t.Helper()
	f := cl.do(ctx, id, map[string]any{"type": "send", "text": text})
	if f.Error != nil {
		t.Fatalf("send: %v", f.Error)
	}
	var r struct{ UUID string }
	json.Unmarshal(f.Result, &r)
	// The answer arrives as its delivery event, or, for a client that
	// fell out of the journal meanwhile (a busy machine, a small journal),
	// inside a snapshot: wait for the state, whichever way it comes.
	ans := cl.waitFrame(ctx, from, "the answer to "+text, func(f *frame) bool {
		return isKind(id, host.EventDelivery)(f) && strings.Contains(string(f.Event.Data), r.UUID) && strings.Contains(string(f.Event.Data), `"answered"`) ||
			answeredIn(f, id, r.UUID)
	})
	// The rest of the turn's end was journaled with the answer: wait for
	// the session's latest event.
	var l struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &l)
	for _, si := range l.Sessions {
		if si.ID == id {
			if ans.Type == "snapshot" && ans.Snapshot.Seq >= si.Seq {
				return // the snapshot that held the answer holds the rest too
			}
			cl.waitFrame(ctx, from, "the turn's last event", func(f *frame) bool {
				return f.Type == "event" && f.sessionID() == id && f.Event.Seq == si.Seq || f.Type == "snapshot" && f.Snapshot.Seq >= si.Seq
			})
		}
	}
}

// answeredIn reports whether f is a snapshot of session id in which the
// prompt uuid has been answered: its echo in the transcript with a
// result after it.
func answeredIn(f *frame, id, uuid string) bool {
	if f.Type != "snapshot" || f.sessionID() != id || f.Snapshot == nil {
		return false
	}
	echoed := false
	for _, l := range f.Snapshot.Transcript {
		echoed = echoed || strings.Contains(string(l), uuid)
		if echoed && strings.HasPrefix(string(l), `{"type":"result"`) {
			return true
		}
	}
	return false
}

// inOrder checks a subscriber's frames: a snapshot first, then events
// each one after the last seq seen, where another snapshot (the client
// fell behind again) may take up the count. It returns the snapshots.
func inOrder(t *testing.T, fs []*frame) int {
	t.Helper()
	if len(fs) == 0 || fs[0].Type != "snapshot" {
		t.Fatalf("first frame is not a snapshot: %d frames", len(fs))
	}
	snaps, last := 0, uint64(0)
	for _, f := range fs {
		switch f.Type {
		case "snapshot":
			if f.Snapshot.Seq < last {
				t.Fatalf("snapshot at seq %d after event %d", f.Snapshot.Seq, last)
			}
			snaps++
			last = f.Snapshot.Seq
		case "event":
			if f.Event.Seq != last+1 {
				t.Fatalf("event seq %d, want %d", f.Event.Seq, last+1)
			}
			last = f.Event.Seq
		}
	}
	return snaps
}

// seqs checks that frames are events numbered first, first+1, … and
// returns the last seq.
func seqs(t *testing.T, fs []*frame, first uint64) uint64 {
	t.Helper()
	want := first
	for _, f := range fs {
		if f.Type != "event" {
			t.Fatalf("frame %s where an event %d was due", f.Type, want)
		}
		if f.Event.Seq != want {
			t.Fatalf("event seq %d, want %d", f.Event.Seq, want)
		}
		want++
	}
	return want - 1
}

func TestHelloAndList(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	cl := e.dial(ctx)
	n := 0
	hello := cl.waitFrame(ctx, &n, "hello", func(f *frame) bool { return true })
	if hello.Type != "hello" || hello.Protocol != serve.ProtocolVersion {
		t.Fatalf("first frame %s", hello.raw)
	}
	if f := cl.waitFrame(ctx, &n, "sessions", func(f *frame) bool { return true }); f.Type != "sessions" || string(f.Sessions) != "[]" {
		t.Fatalf("second frame %s", f.raw)
	}
	id := cl.start(ctx, e.cwd)
	// Every client hears of the new session.
	cl.waitFrame(ctx, &n, "the session frame", func(f *frame) bool {
		var si serve.SessionInfo
		return f.Type == "session" && json.Unmarshal(f.Session, &si) == nil && si.ID == id
	})
	var r struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &r)
	if len(r.Sessions) != 1 || r.Sessions[0].ID != id || r.Sessions[0].Cwd != e.cwd {
		t.Fatalf("list %+v", r.Sessions)
	}
	// The server never adds a skip-permissions flag.
	for _, l := range e.fake.Launches() {
		if strings.Contains(strings.Join(l.Args, " "), "skip-permissions") || strings.Contains(strings.Join(l.Args, " "), "bypassPermissions") {
			t.Errorf("CLI started with %q", l.Args)
		}
	}
	// Nor lets a client choose it.
	f := cl.call(ctx, map[string]any{"type": "start", "cwd": e.cwd, "permission_mode": "bypassPermissions"})
	if f.Error == nil || f.Error.Code != serve.CodeForbidden {
		t.Errorf("bypassPermissions start: %s", f.raw)
	}
}

func TestSequenceAndResume(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	a := e.dial(ctx)
	id := a.start(ctx, e.cwd)
	a.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	n := 0
	turn(t, ctx, a, id, "one", &n)
	turn(t, ctx, a, id, "two", &n)
	all := a.eventsOf(id)
	last := seqs(t, all, 1)

	// A second client resumes from the middle: exactly the rest, then live.
	mid := last / 2
	b := e.dial(ctx)
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": mid})
	bn := 0
	b.waitFrame(ctx, &bn, "the catch-up", func(f *frame) bool { return f.Type == "event" && f.Event.Seq == last })
	got := b.eventsOf(id)
	seqs(t, got, mid+1)
	for i, f := range got {
		if string(f.Event.Data) != string(all[int(mid)+i].Event.Data) {
			t.Fatalf("event %d differs on resume", f.Event.Seq)
		}
	}
	turn(t, ctx, b, id, "three", &bn)
	seqs(t, b.eventsOf(id), mid+1)
	seqs(t, a.eventsOf(id), 1)

	// Resubscribing on the same socket replaces the subscription: no
	// duplicate follows the new reply.
	cur := uint64(len(b.eventsOf(id))) + mid
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": cur})
	turn(t, ctx, b, id, "four", &bn)
	seqs(t, b.eventsOf(id), mid+1)

	// A page with nothing asks for a snapshot and continues after it.
	c := e.dial(ctx)
	c.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0, "snapshot": true})
	cn := 0
	snap := c.waitFrame(ctx, &cn, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
	if snap.Snapshot.ID != id || snap.Snapshot.State.State != "idle" || len(snap.Snapshot.Transcript) == 0 || snap.Snapshot.Cost.Turns != 4 {
		t.Errorf("snapshot %+v", snap.Snapshot)
	}
	turn(t, ctx, c, id, "five", &cn)
	seqs(t, c.eventsOf(id)[1:], snap.Snapshot.Seq+1)
}

func TestSnapshotAfterGap(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, &envOptions{journal: &host.JournalOptions{MaxEvents: 32}})
	a := e.dial(ctx)
	id := a.start(ctx, e.cwd)
	n := 0
	a.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	turn(t, ctx, a, id, "burst 100 10", &n)
	// Too far behind: a snapshot, then every event after it.
	b := e.dial(ctx)
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 2})
	bn := 0
	snap := b.waitFrame(ctx, &bn, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
	if !strings.Contains(string(snap.raw), "burst done") {
		t.Errorf("snapshot lacks the turn: %.300s", snap.raw)
	}
	turn(t, ctx, b, id, "after", &bn)
	// Events follow the snapshot in order; on a busy machine b may fall
	// out of the 32-event journal again, and then a snapshot takes up.
	inOrder(t, b.eventsOf(id))
	// A seq the session never reached is a gap too.
	c := e.dial(ctx)
	c.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 1 << 40})
	cn := 0
	c.waitFrame(ctx, &cn, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
}

// TestSlowClientIsolation: a client that stops reading its socket never
// slows the session or another client; when it reads again it gets a
// snapshot and goes on, with no gap.
func TestSlowClientIsolation(t *testing.T) {
	ctx := testCtx(t)
	// A 2 MiB journal: the stalled client (a few MiB in socket buffers at
	// most) falls out of it during the 8 MiB burst, while the reading
	// client has ~500 events of room even on a loaded machine (64 events
	// were not always enough under -race in CI).
	e := newEnv(t, &envOptions{journal: &host.JournalOptions{MaxBytes: 2 << 20}, serve: &serve.Options{ClientQueue: 4}})
	fast := e.dial(ctx)
	id := fast.start(ctx, e.cwd)
	fast.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	// The stalled client: subscribed, then reads nothing.
	slow := e.dialRaw(ctx)
	defer slow.CloseNow()
	b, _ := json.Marshal(map[string]any{"type": "subscribe", "session": id, "after": 0})
	if err := slow.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	n := 0
	// ~8 MiB of events: far more than socket buffers hold.
	turn(t, ctx, fast, id, "burst 2000 4096", &n)
	turn(t, ctx, fast, id, "after", &n)
	seqs(t, fast.eventsOf(id), 1)
	// The stalled client reads now: events in order, then a snapshot
	// where it fell out of the journal, then in order again.
	var last uint64
	snaps := 0
	for {
		_, b, err := slow.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var f frame
		json.Unmarshal(b, &f)
		switch f.Type {
		case "snapshot":
			snaps++
			last = f.Snapshot.Seq
		case "event":
			if last != 0 && f.Event.Seq != last+1 {
				t.Fatalf("stalled client: seq %d after %d", f.Event.Seq, last)
			}
			last = f.Event.Seq
		}
		if f.Type == "event" && strings.Contains(string(f.Event.Data), "echo: after") || f.Type == "snapshot" && f.Snapshot.Cost.Turns == 2 {
			break
		}
	}
	if snaps == 0 {
		t.Error("the stalled client never got a snapshot")
	}
}

func TestApprovalFromTwoClients(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	a, b := e.dial(ctx), e.dial(ctx)
	id := a.start(ctx, e.cwd)
	an, bn := 0, 0
	a.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	if f := a.do(ctx, id, map[string]any{"type": "send", "text": "tool rm -rf build"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	ev := a.waitFrame(ctx, &an, "the approval", isKind(id, host.EventApproval))
	b.waitFrame(ctx, &bn, "the approval", isKind(id, host.EventApproval))
	var ai host.ApprovalInfo
	json.Unmarshal(ev.Event.Data, &ai)
	if ai.ToolName != "Bash" || !strings.Contains(string(ai.Input), "rm -rf build") {
		t.Fatalf("approval %+v", ai)
	}
	var wg sync.WaitGroup
	replies := make([]*frame, 2)
	for i, cl := range []*wsClient{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			behavior := []string{"allow", "deny"}[i]
			replies[i] = cl.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": behavior, "message": "no"})
		}()
	}
	wg.Wait()
	wins := 0
	for _, r := range replies {
		switch {
		case r.Error == nil:
			wins++
		case r.Error.Code != serve.CodeAlreadyAnswered:
			t.Errorf("second answer: %v", r.Error)
		}
	}
	if wins != 1 {
		t.Fatalf("%d answers taken", wins)
	}
	for _, cl := range []*wsClient{a, b} {
		from := 0
		cl.waitFrame(ctx, &from, "approval_resolved", isKind(id, host.EventApprovalResolved))
		cl.waitFrame(ctx, &from, "idle", isState(id, "idle"))
	}
	// Answering again, or an approval that never was: typed errors.
	if f := a.do(ctx, id, map[string]any{"type": "answer", "approval": ai.ID, "behavior": "allow"}); f.Error == nil || f.Error.Code != serve.CodeNoApproval && f.Error.Code != serve.CodeAlreadyAnswered {
		t.Errorf("late answer: %s", f.raw)
	}
	if f := a.do(ctx, id, map[string]any{"type": "answer", "approval": "nope", "behavior": "allow"}); f.Error == nil || f.Error.Code != serve.CodeNoApproval {
		t.Errorf("unknown approval: %s", f.raw)
	}
}

func TestMalformedFrames(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, &envOptions{serve: &serve.Options{MaxFrameBytes: 1 << 16}})
	cl := e.dial(ctx)
	id := cl.start(ctx, e.cwd)
	n := 0
	bad := func(raw string, code string) {
		t.Helper()
		if err := cl.c.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
			t.Fatal(err)
		}
		f := cl.waitFrame(ctx, &n, "an error for "+raw, func(f *frame) bool { return f.Type == "error" })
		if f.Error == nil || f.Error.Code != code {
			t.Errorf("%s: got %s, want %s", raw, f.raw, code)
		}
	}
	bad(`not json`, serve.CodeBadRequest)
	bad(`{"type":"subscribe","session":5}`, serve.CodeBadRequest)
	bad(`{"type":"list","id":{"x":1}}`, serve.CodeBadRequest)
	bad(`[1,2]`, serve.CodeBadRequest)
	bad(`{"type":"nope"}`, serve.CodeUnknownType)
	bad(`{}`, serve.CodeBadRequest)
	for _, c := range []struct {
		req  map[string]any
		code string
	}{
		{map[string]any{"type": "list", "v": 2}, serve.CodeUnsupportedVersion},
		{map[string]any{"type": "subscribe"}, serve.CodeBadRequest},
		{map[string]any{"type": "subscribe", "session": "nope"}, serve.CodeNoSession},
		{map[string]any{"type": "do", "session": id}, serve.CodeBadRequest},
		{map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "fly"}}, serve.CodeUnknownType},
		{map[string]any{"type": "do", "session": "nope", "command": map[string]any{"type": "interrupt"}}, serve.CodeNoSession},
		{map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send"}}, serve.CodeBadRequest},
		{map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "send", "text": "x", "images": []any{map[string]any{"media_type": "text/html", "data": "PGI+"}}}}, serve.CodeBadRequest},
		{map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "cancel", "uuid": "nope"}}, serve.CodeNotQueued},
		{map[string]any{"type": "do", "session": id, "command": map[string]any{"type": "set_mode", "mode": "bypassPermissions"}}, serve.CodeForbidden},
		{map[string]any{"type": "start", "cwd": "relative/dir"}, serve.CodeBadRequest},
		{map[string]any{"type": "start", "cwd": "/does/not/exist"}, serve.CodeBadRequest},
		{map[string]any{"type": "disk_sessions", "cwd": ""}, serve.CodeBadRequest},
	} {
		f := cl.call(ctx, c.req)
		if f.Error == nil || f.Error.Code != c.code {
			t.Errorf("%v: got %s, want %s", c.req, f.raw, c.code)
		}
	}
	// None of it changed anything: one session, no prompt sent.
	var r struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &r)
	if len(r.Sessions) != 1 || r.Sessions[0].Seq != 2 {
		t.Errorf("after bad requests: %+v", r.Sessions)
	}
	// A binary frame closes the socket with 1003, an oversized one with 1009.
	b := e.dialRaw(ctx)
	b.Write(ctx, websocket.MessageBinary, []byte{1, 2})
	if _, _, err := readUntilClose(ctx, b); websocket.CloseStatus(err) != websocket.StatusUnsupportedData {
		t.Errorf("binary frame: %v", err)
	}
	c := e.dialRaw(ctx)
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"list","pad":"`+strings.Repeat("x", 1<<17)+`"}`))
	if _, _, err := readUntilClose(ctx, c); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized frame: %v", err)
	}
}

func readUntilClose(ctx context.Context, c *websocket.Conn) (websocket.MessageType, []byte, error) {
	defer c.CloseNow()
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			return typ, b, err
		}
	}
}

func TestCommands(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	cl := e.dial(ctx)
	id := cl.start(ctx, e.cwd)
	n := 0
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "tool ls -la"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	cl.waitFrame(ctx, &n, "awaiting_approval", isState(id, "awaiting_approval"))
	f := cl.do(ctx, id, map[string]any{"type": "force_interrupt"})
	if f.Error != nil {
		t.Fatalf("force_interrupt: %v", f.Error)
	}
	cl.waitFrame(ctx, &n, "the approval withdrawn", func(f *frame) bool {
		return isKind(id, host.EventApprovalResolved)(f) && strings.Contains(string(f.Event.Data), "withdrawn")
	})
	if f := cl.do(ctx, id, map[string]any{"type": "close"}); f.Error != nil {
		t.Fatalf("close: %v", f.Error)
	}
	cl.waitFrame(ctx, &n, "closed", isKind(id, host.EventClosed))
	cl.waitFrame(ctx, &n, "removed", func(f *frame) bool { return f.Type == "removed" && f.sessionID() == id })
	if f := cl.do(ctx, id, map[string]any{"type": "send", "text": "x"}); f.Error == nil || f.Error.Code != serve.CodeNoSession {
		t.Errorf("send after close: %s", f.raw)
	}
}

var _ = errors.Is

// TestSessionOutlivesClients: a session waiting for approval keeps
// waiting when its only client goes; a new client finds it in the list,
// gets the pending approval in a snapshot and answers it.
func TestSessionOutlivesClients(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, nil)
	a := e.dial(ctx)
	id := a.start(ctx, e.cwd)
	an := 0
	a.ok(ctx, map[string]any{"type": "subscribe", "session": id})
	if f := a.do(ctx, id, map[string]any{"type": "send", "text": "tool make deploy"}); f.Error != nil {
		t.Fatal(f.Error)
	}
	a.waitFrame(ctx, &an, "awaiting_approval", isState(id, "awaiting_approval"))
	a.close()

	b := e.dial(ctx)
	bn := 0
	f := b.waitFrame(ctx, &bn, "the sessions list", func(f *frame) bool { return f.Type == "sessions" })
	var list []serve.SessionInfo
	json.Unmarshal(f.Sessions, &list)
	if len(list) != 1 || list[0].ID != id || list[0].State != "awaiting_approval" {
		t.Fatalf("list on reconnect: %+v", list)
	}
	b.ok(ctx, map[string]any{"type": "subscribe", "session": id, "snapshot": true})
	snap := b.waitFrame(ctx, &bn, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
	if len(snap.Snapshot.Approvals) != 1 || snap.Snapshot.Approvals[0].ToolName != "Bash" || len(snap.Snapshot.Deliveries) != 1 {
		t.Fatalf("snapshot approvals %+v deliveries %+v", snap.Snapshot.Approvals, snap.Snapshot.Deliveries)
	}
	if r := b.do(ctx, id, map[string]any{"type": "answer", "approval": snap.Snapshot.Approvals[0].ID, "behavior": "deny", "message": "not today"}); r.Error != nil {
		t.Fatal(r.Error)
	}
	b.waitFrame(ctx, &bn, "the denial", func(f *frame) bool {
		return isKind(id, host.EventApprovalResolved)(f) && strings.Contains(string(f.Event.Data), `"not today"`)
	})
	b.waitFrame(ctx, &bn, "idle", isState(id, "idle"))
	seqs(t, b.eventsOf(id)[1:], snap.Snapshot.Seq+1)
}

// TestHelloDefaultCwd: the hello frame names the backend's default
// working directory, where a start without cwd runs.
func TestHelloDefaultCwd(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	e := newEnv(t, &envOptions{local: &serve.LocalOptions{DefaultCwd: dir}})
	cl := e.dial(ctx)
	n := 0
	hello := cl.waitFrame(ctx, &n, "hello", func(f *frame) bool { return f.Type == "hello" })
	var h struct {
		DefaultCwd string `json:"default_cwd"`
	}
	json.Unmarshal(hello.raw, &h)
	if h.DefaultCwd != dir {
		t.Errorf("hello %s: default_cwd %q, want %q", hello.raw, h.DefaultCwd, dir)
	}
	// None configured: no field.
	e2 := newEnv(t, nil)
	cl2 := e2.dial(ctx)
	n = 0
	hello = cl2.waitFrame(ctx, &n, "hello", func(f *frame) bool { return f.Type == "hello" })
	if strings.Contains(string(hello.raw), "default_cwd") {
		t.Errorf("hello without a default: %s", hello.raw)
	}
}
