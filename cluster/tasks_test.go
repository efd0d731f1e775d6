package cluster_test

import (
	"testing"
)

// TestRecordCountsWorkingTasks: a session's registry entry (what the
// sessions list shows) counts the background work its CLI reports and
// leaves a watcher out, as a list on one machine does (host.WorkingTasks).
func TestRecordCountsWorkingTasks(t *testing.T) {
	ctx := testCtx(t)
	ns := newNATS(t, nil)
	newAgent(t, ns.URL(), "a1", 1)
	c := newClient(t, ns.URL())
	info := mustStart(ctx, t, c, nil)
	f := follow(t, c, info.ID, 0)
	turn := func(prompt, reply string) {
		t.Helper()
		send(t, c, info.ID, prompt)
		f.wait(t, "the reply to "+prompt, result(reply))
	}
	// tasks is the entry's count once it has seen every turn so far: an
	// entry that names the next prompt was taken after them.
	tasks := func(mark string) int {
		t.Helper()
		turn(mark, "echo: "+mark)
		var n int
		waitFor(t, "an entry after "+mark, func() bool {
			si, err := c.Session(ctx, info.ID)
			n = si.Tasks
			return err == nil && si.LastPrompt == mark
		})
		return n
	}
	turn("watch", "watching")
	turn("background", "started")
	if n := tasks("mark 1"); n != 1 {
		t.Errorf("a watcher and a background agent: the entry counts %d tasks, want 1", n)
	}
	turn("background-done", "reviewed")
	if n := tasks("mark 2"); n != 0 {
		t.Errorf("a watcher alone: the entry counts %d tasks, want 0", n)
	}
}
