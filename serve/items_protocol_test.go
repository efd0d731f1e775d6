package serve_test

import (
	"encoding/json"
	"fmt"
	"reflect"
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
				if f.Type == "items" {
					var x itemsFrame
					json.Unmarshal(f.raw, &x)
					for _, it := range x.Items {
						if it.Append {
							it.Text, it.Append = all[it.ID].Text+it.Text, false
						}
						all[it.ID] = it
					}
				}
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
