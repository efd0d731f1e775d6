package host_test

import (
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// Sleep with the real CLI (the fake CLI covers the state machine in
// sleep_test.go): a session put to sleep before its first turn has
// nothing on disk to resume, and wakes under the same session id.
func init() {
	addScenarios(scenario{
		name:   "sleep_before_first_turn",
		guards: "A session asleep before its first turn wakes for a prompt under the same CLI session id and answers it.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{Replies: []*claudetest.Reply{claudetest.TextReply("Good morning.")}}
		},
		run: func(t *testing.T, h *harness) {
			sid := h.S.SessionID()
			pid := h.S.Claude().PID()
			if err := h.S.Sleep(h.Ctx); err != nil {
				t.Fatalf("Sleep: %v", err)
			}
			if h.S.State().State != host.StateAsleep || h.S.Claude() != nil {
				t.Fatalf("asleep: %v", h.S.State())
			}
			d := h.turn(t, "wake up")
			r, err := d.Wait(h.Ctx)
			if err != nil || r.Result != "Good morning." {
				t.Fatalf("the prompt that woke it: %v, %v", r, err)
			}
			if h.S.SessionID() != sid || h.S.Claude().PID() == pid {
				t.Errorf("woken as CLI session %s (pid %d), was %s (pid %d)", h.S.SessionID(), h.S.Claude().PID(), sid, pid)
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
			got := h.states.strings()
			if len(got) < 4 || got[0] != "ready" || got[1] != "asleep" || got[2] != "waking" || got[3] != "ready" {
				t.Errorf("states %q, want ready, asleep, waking, ready, …", got)
			}
		},
	})
}
