package serve_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/serve"
)

// processesWith returns the pids of the processes whose command line
// holds s (read from /proc).
func processesWith(t *testing.T, s string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(s)) {
			continue // gone meanwhile, or another's
		}
		// A zombie has an empty cmdline: what holds s is alive.
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// TestRealCLISleepAndWake: a session of the real CLI put to sleep keeps
// its place in the list (asleep, with its cost) and no CLI process; the
// next prompt wakes it under the same id, the browser sees waking, the
// events' numbers go on, and the model gets the earlier turn.
func TestRealCLISleepAndWake(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	ctx := testCtx(t)
	e, api, _, cl, id, n := rememberTangerine(t, ctx)
	hs := e.m.Get(id)
	sid := hs.SessionID()
	if pids := processesWith(t, sid); len(pids) == 0 {
		t.Fatalf("no process has the CLI session id %s in its command line", sid)
	}
	var before struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &before)

	if err := hs.Sleep(ctx); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
	asleep := cl.waitFrame(ctx, &n, "the session asleep", isState(id, "asleep"))
	if pids := processesWith(t, sid); len(pids) != 0 {
		t.Fatalf("CLI processes left for the sleeping session: %v", pids)
	}
	var list struct{ Sessions []serve.SessionInfo }
	json.Unmarshal(cl.ok(ctx, map[string]any{"type": "list"}), &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != id || list.Sessions[0].State != "asleep" ||
		list.Sessions[0].CostUSD != before.Sessions[0].CostUSD || list.Sessions[0].Title != "remember the word tangerine" || list.Sessions[0].Ended {
		t.Fatalf("list while asleep %+v, before %+v", list.Sessions, before.Sessions)
	}

	from := n
	turn(t, ctx, cl, id, "which word?", &n)
	waking := cl.waitFrame(ctx, &from, "the session waking", isState(id, "waking"))
	if waking.Event.Seq <= asleep.Event.Seq {
		t.Errorf("waking is event %d, asleep %d", waking.Event.Seq, asleep.Event.Seq)
	}
	// One numbering, without gaps, across the sleep and the wake.
	var last uint64
	for _, f := range cl.eventsOf(id) {
		if f.Type != "event" {
			last = f.Snapshot.Seq
			continue
		}
		if last != 0 && f.Event.Seq != last+1 {
			t.Fatalf("event %d after %d", f.Event.Seq, last)
		}
		last = f.Event.Seq
	}
	if e.m.Get(id) != hs || hs.SessionID() != sid {
		t.Errorf("woken as another session: %s (CLI session %s, was %s)", hs.ID(), hs.SessionID(), sid)
	}
	reqs := api.Requests()
	b, _ := json.Marshal(reqs[len(reqs)-1].Params.Messages)
	if !strings.Contains(string(b), "tangerine") || !strings.Contains(string(b), "which word?") {
		t.Errorf("the woken session's request lacks the earlier turn: %.500s", b)
	}
	if st := hs.State().State; st != host.StateIdle {
		t.Errorf("after the turn: %v", hs.State())
	}
}
