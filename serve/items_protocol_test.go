package serve_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// itemsOf is an items frame's seq and items (nil for another frame).
type itemsFrame struct {
	Type  string       `json:"type"`
	Seq   uint64       `json:"seq"`
	Items []serve.Item `json:"items"`
}

// applyItems applies f, if it is an items frame, to what a client keeps
// of the items (by id; a growth added to the text it has) and returns
// its items as they were sent.
func applyItems(kept map[string]serve.Item, f *frame) []serve.Item {
	if f.Type != "items" {
		return nil
	}
	var x itemsFrame
	json.Unmarshal(f.raw, &x)
	for _, it := range x.Items {
		if it.Append {
			it.Text, it.Append = kept[it.ID].Text+it.Text, false
		}
		kept[it.ID] = it
	}
	return x.Items
}

// seqOf is the seq a session frame stands for: an event's, or an items
// frame's; 0 for other frames.
func seqOf(f *frame) uint64 {
	switch f.Type {
	case "event":
		return f.Event.Seq
	case "items":
		var x itemsFrame
		json.Unmarshal(f.raw, &x)
		return x.Seq
	}
	return 0
}

// TestItemsOptIn: a client that subscribes with items gets, for each of
// the session's events in order, exactly one frame: an items frame for a
// message event, the event frame for the others; a client that does not
// ask gets the event frames of today, never an items frame. A client
// that comes back after=N gets exactly the frames after N, the same as
// the first one got; one that asks for a snapshot gets the items so far
// in it. Over a lone server and over the cluster backend.
func TestItemsOptIn(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprintf("cluster=%v", cluster), func(t *testing.T) {
			ctx := testCtx(t)
			e := newEnv(t, &envOptions{cluster: cluster})
			plain, withItems := e.dial(ctx), e.dial(ctx)
			id := plain.start(ctx, e.cwd)
			plain.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
			withItems.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0, "items": true})
			plain.do(ctx, id, map[string]any{"type": "send", "text": "tool touch hello.txt"})
			n := 0
			ev := plain.waitFrame(ctx, &n, "the approval", isKind(id, host.EventApproval))
			var a host.ApprovalInfo
			json.Unmarshal(ev.Event.Data, &a)
			plain.do(ctx, id, map[string]any{"type": "answer", "approval": a.ID, "behavior": "allow"})
			plain.waitFrame(ctx, &n, "idle", isState(id, "idle"))
			// The turn is over; what came last by now is where we compare.
			evs := plain.eventsOf(id)
			last := evs[len(evs)-1].Event.Seq
			upTo := func(cl *wsClient, what string) {
				m := 0
				cl.waitFrame(ctx, &m, what, func(f *frame) bool { return f.sessionID() == id && seqOf(f) >= last })
			}
			upTo(withItems, "the items client's last frame")

			// The plain client: event frames only, as before.
			for _, f := range plain.framesFrom(0) {
				if f.Type == "items" {
					t.Fatalf("a client that did not ask got an items frame: %s", f.raw)
				}
			}
			// The items client: one frame per seq, in order.
			byPlain := map[uint64]*frame{}
			for _, f := range plain.eventsOf(id) {
				byPlain[f.Event.Seq] = f
			}
			frames := sessionFrames(withItems, id)[:last]
			if len(frames) != int(last) {
				t.Fatalf("items client got %d frames for %d events", len(frames), last)
			}
			all := map[string]serve.Item{}
			for i, f := range frames {
				seq := seqOf(f)
				if seq != uint64(i+1) {
					t.Fatalf("frame %d has seq %d: %s", i, seq, f.raw)
				}
				p := byPlain[seq]
				switch {
				case p.Event.Kind == host.EventMessage && f.Type != "items":
					t.Fatalf("message event %d came as %s", seq, f.raw)
				case p.Event.Kind != host.EventMessage && string(f.raw) != string(p.raw):
					t.Fatalf("event %d differs:\n%s\n%s", seq, f.raw, p.raw)
				}
				applyItems(all, f)
			}
			tool, ok := all["toolu_1"]
			if !ok || tool.Kind != serve.ItemToolUse || tool.Name != "Bash" || string(tool.Input) != `{"command":"touch hello.txt"}` || tool.Status != serve.ItemDone {
				t.Errorf("tool item: %+v", tool)
			}
			if r := all["result/toolu_1"]; r.Kind != serve.ItemToolResult || r.IsError {
				t.Errorf("tool result item: %+v", r)
			}
			var kinds []serve.ItemKind
			for _, it := range all {
				kinds = append(kinds, it.Kind)
			}
			for _, k := range []serve.ItemKind{serve.ItemSystem, serve.ItemPrompt, serve.ItemText, serve.ItemResult} {
				found := false
				for _, g := range kinds {
					found = found || g == k
				}
				if !found {
					t.Errorf("no %s item among %v", k, kinds)
				}
			}

			// Back after N: exactly the rest, the same frames.
			for _, after := range []uint64{1, last / 2, last - 1} {
				again := e.dial(ctx)
				again.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": after, "items": true})
				upTo(again, "the rest")
				rest := sessionFrames(again, id)[:last-after]
				if len(rest) != int(last-after) {
					t.Fatalf("after %d: %d frames, want %d", after, len(rest), last-after)
				}
				for i, f := range rest {
					if want := frames[int(after)+i]; string(f.raw) != string(want.raw) {
						t.Fatalf("after %d, seq %d:\n got %s\nwant %s", after, seqOf(f), f.raw, want.raw)
					}
				}
				again.close()
			}

			// A snapshot: the items so far, no CLI lines.
			snapper := e.dial(ctx)
			snapper.ok(ctx, map[string]any{"type": "subscribe", "session": id, "snapshot": true, "items": true})
			m := 0
			sf := snapper.waitFrame(ctx, &m, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
			var sn struct {
				Snapshot struct {
					Seq        uint64            `json:"seq"`
					Transcript []json.RawMessage `json:"transcript"`
					Items      []serve.Item      `json:"items"`
				} `json:"snapshot"`
			}
			json.Unmarshal(sf.raw, &sn)
			if sn.Snapshot.Seq < last || len(sn.Snapshot.Transcript) != 0 {
				t.Fatalf("snapshot at %d with %d lines", sn.Snapshot.Seq, len(sn.Snapshot.Transcript))
			}
			got := map[string]serve.Item{}
			for _, it := range sn.Snapshot.Items {
				got[it.ID] = it
			}
			if !reflect.DeepEqual(got, all) {
				t.Errorf("snapshot items differ from the frames'\n got %+v\nwant %+v", got, all)
			}
			// The same over HTTP, without a socket: GET …/snapshot?items=true.
			st, body := e.req("GET", "/api/sessions/"+id+"/snapshot?items=true", "")
			var hs struct {
				Transcript []json.RawMessage `json:"transcript"`
				Items      []serve.Item      `json:"items"`
			}
			if err := json.Unmarshal(body, &hs); st != 200 || err != nil || len(hs.Transcript) != 0 {
				t.Fatalf("GET snapshot?items=true: %d %s", st, body)
			}
			got = map[string]serve.Item{}
			for _, it := range hs.Items {
				got[it.ID] = it
			}
			if !reflect.DeepEqual(got, all) {
				t.Errorf("GET snapshot?items=true items differ from the frames'\n got %+v\nwant %+v", got, all)
			}
			if st, body := e.req("GET", "/api/sessions/"+id+"/snapshot?items=maybe", ""); st != 400 || !strings.Contains(string(body), serve.CodeBadRequest) {
				t.Errorf("GET snapshot?items=maybe: %d %s", st, body)
			}
			// A plain snapshot still has the lines and no items.
			ps := e.dial(ctx)
			ps.ok(ctx, map[string]any{"type": "subscribe", "session": id, "snapshot": true})
			m = 0
			pf := ps.waitFrame(ctx, &m, "the snapshot", func(f *frame) bool { return f.Type == "snapshot" })
			if len(pf.Snapshot.Transcript) == 0 || json.Valid(pf.raw) && containsKey(pf.raw, "items") {
				t.Errorf("plain snapshot: %s", pf.raw)
			}
		})
	}
}

// sessionFrames are a client's event and items frames of the session.
func sessionFrames(cl *wsClient, id string) []*frame {
	var out []*frame
	for _, f := range cl.framesFrom(0) {
		if (f.Type == "event" || f.Type == "items") && f.sessionID() == id {
			out = append(out, f)
		}
	}
	return out
}

func containsKey(raw []byte, key string) bool {
	var m struct {
		Snapshot map[string]json.RawMessage `json:"snapshot"`
	}
	json.Unmarshal(raw, &m)
	_, ok := m.Snapshot[key]
	return ok
}

// TestItemsMidTurn: a client that comes back in the middle of a message
// being streamed (its text growing by appends, a tool input being typed
// as partial JSON) gets exactly the frames the client that stayed got
// after that point, whether the server derives where it stood from the
// journal (the client is behind) or from a snapshot (nothing happened
// since); the text the appends build is the message's text, and the
// tool's input is valid JSON at every step.
func TestItemsMidTurn(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(fmt.Sprintf("cluster=%v", cluster), func(t *testing.T) {
			ctx := testCtx(t)
			e := newEnv(t, &envOptions{cluster: cluster})
			stay := e.dial(ctx)
			id := stay.start(ctx, e.cwd)
			stay.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0, "items": true})
			stay.do(ctx, id, map[string]any{"type": "send", "text": "partial"})
			// Halfway: the fifth word is in.
			n := 0
			hasItem := func(pred func(serve.Item) bool) func(*frame) bool {
				return func(f *frame) bool {
					if f.Type != "items" || f.sessionID() != id {
						return false
					}
					var x itemsFrame
					json.Unmarshal(f.raw, &x)
					for _, it := range x.Items {
						if pred(it) {
							return true
						}
					}
					return false
				}
			}
			half := stay.waitFrame(ctx, &n, "the fifth word", hasItem(func(it serve.Item) bool { return it.Append && it.Text == "the " }))
			mid := seqOf(half)
			var firstAppend uint64
			for _, f := range sessionFrames(stay, id) {
				if hasItem(func(it serve.Item) bool { return it.Append })(f) {
					firstAppend = seqOf(f)
					break
				}
			}
			// The CLI waits; the session's latest event, once the items
			// client has it too.
			st, body := e.req("GET", "/api/sessions/"+id+"/snapshot", "")
			var sn struct{ Seq uint64 }
			if json.Unmarshal(body, &sn); st != 200 || sn.Seq < mid {
				t.Fatalf("snapshot: %d %s", st, body)
			}
			latest := sn.Seq
			stay.waitFrame(ctx, new(int), "the latest event", func(f *frame) bool { return f.sessionID() == id && seqOf(f) >= latest })
			// A snapshot taken now holds the text streamed so far whole,
			// as the frames built it, not its last growth.
			st, body = e.req("GET", "/api/sessions/"+id+"/snapshot?items=true", "")
			var ms struct {
				Seq   uint64       `json:"seq"`
				Items []serve.Item `json:"items"`
			}
			if err := json.Unmarshal(body, &ms); st != 200 || err != nil || ms.Seq != latest {
				t.Fatalf("snapshot mid-turn: %d %s", st, body)
			}
			built := map[string]serve.Item{}
			for _, f := range sessionFrames(stay, id)[:latest] {
				applyItems(built, f)
			}
			i := slices.IndexFunc(ms.Items, func(it serve.Item) bool { return it.ID == "msg_partial/0" })
			if i < 0 || ms.Items[i].Append || ms.Items[i].Text != built["msg_partial/0"].Text || !strings.HasSuffix(ms.Items[i].Text, "the ") {
				t.Errorf("snapshot mid-turn: items %+v, the frames built %+v", ms.Items, built["msg_partial/0"])
			}
			// One that is behind (after the first word), one that is not
			// (its place is the snapshot's).
			behind, current := e.dial(ctx), e.dial(ctx)
			behind.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": firstAppend, "items": true})
			current.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": latest, "items": true})
			stay.do(ctx, id, map[string]any{"type": "send", "text": "go on"})
			done := hasItem(func(it serve.Item) bool { return it.Kind == serve.ItemResult })
			for _, cl := range []*wsClient{stay, behind, current} {
				m := 0
				cl.waitFrame(ctx, &m, "the turn's end", done)
			}
			all := sessionFrames(stay, id)
			var last uint64
			for i, f := range all {
				if done(f) {
					last = uint64(i + 1)
					break
				}
			}
			for _, c := range []struct {
				name  string
				cl    *wsClient
				after uint64
			}{{"behind", behind, firstAppend}, {"current", current, latest}} {
				got := sessionFrames(c.cl, id)
				if uint64(len(got)) < last-c.after {
					t.Fatalf("%s: %d frames, want at least %d", c.name, len(got), last-c.after)
				}
				for i, f := range got[:last-c.after] {
					if want := all[int(c.after)+i]; string(f.raw) != string(want.raw) {
						t.Fatalf("%s, seq %d:\n got %s\nwant %s", c.name, seqOf(f), f.raw, want.raw)
					}
				}
			}
			// What the frames build.
			items := map[string]serve.Item{}
			for _, f := range all[:last] {
				for _, it := range applyItems(items, f) {
					if it.Kind == serve.ItemToolUse && !json.Valid(it.Input) {
						t.Errorf("seq %d: tool input %s", seqOf(f), it.Input)
					}
				}
			}
			if txt := items["msg_partial/0"]; txt.Text != "Let me look at the files." || txt.Status != serve.ItemDone {
				t.Errorf("text item: %+v", txt)
			}
			var input map[string]string
			tool := items["toolu_partial"]
			json.Unmarshal(tool.Input, &input)
			if input["command"] != "ls -la /some/where/far/away" || tool.Status != serve.ItemDone {
				t.Errorf("tool item: %+v", tool)
			}
			// The tool input was seen being typed, completed.
			typed := false
			for _, f := range all[:last] {
				typed = typed || hasItem(func(it serve.Item) bool {
					return it.ID == "toolu_partial" && it.Status == serve.ItemStreaming && strings.HasPrefix(string(it.Input), `{"command":"ls -la /some/`)
				})(f)
			}
			if !typed {
				t.Error("no frame shows the tool input while it was typed")
			}
		})
	}
}

// TestItemsJournalGone: a client with items coming back after N when
// the journal no longer holds the events before N that the items need
// gets a snapshot with items, as a client without items gets one when
// the events after N are gone.
func TestItemsJournalGone(t *testing.T) {
	ctx := testCtx(t)
	e := newEnv(t, &envOptions{journal: &host.JournalOptions{MaxEvents: 8}})
	cl := e.dial(ctx)
	id := cl.start(ctx, e.cwd)
	cl.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": 0})
	n := 0
	var last uint64
	for _, p := range []string{"one", "two", "three"} {
		cl.do(ctx, id, map[string]any{"type": "send", "text": p})
		// The turn's end: its idle event, or a snapshot after it (this
		// client may fall behind so short a journal too).
		f := cl.waitFrame(ctx, &n, "idle", func(f *frame) bool {
			if f.Type == "snapshot" && f.sessionID() == id && f.Snapshot.State.State == "idle" {
				for _, l := range f.Snapshot.Transcript {
					if strings.Contains(string(l), `"echo: `+p+`"`) {
						return true
					}
				}
			}
			return isState(id, "idle")(f)
		})
		if f.Type == "snapshot" {
			last = f.Snapshot.Seq
		} else {
			last = f.Event.Seq
		}
	}
	if last <= 8 {
		t.Fatalf("only %d events", last)
	}
	// The events after last-2 are kept, those from 1 are not.
	back := e.dial(ctx)
	back.ok(ctx, map[string]any{"type": "subscribe", "session": id, "after": last - 2, "items": true})
	sf := back.waitFrame(ctx, new(int), "a snapshot", func(f *frame) bool { return f.Type == "snapshot" || f.Type == "items" || f.Type == "event" })
	if sf.Type != "snapshot" {
		t.Fatalf("got %s, want a snapshot", sf.raw)
	}
	var sn struct {
		Snapshot struct {
			Items []serve.Item `json:"items"`
		} `json:"snapshot"`
	}
	json.Unmarshal(sf.raw, &sn)
	var prompts []string
	for _, it := range sn.Snapshot.Items {
		if it.Kind == serve.ItemPrompt {
			prompts = append(prompts, it.Texts...)
		}
	}
	if !reflect.DeepEqual(prompts, []string{"one", "two", "three"}) {
		t.Errorf("snapshot items' prompts: %q", prompts)
	}
}
