package host_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
	"github.com/tetherhq/tether/internal/proc"
)

// stopTaskAndWait stops the task with stop_task and waits until the list
// is empty and the CLI's "stopped" is journaled.
func stopTaskAndWait(t *testing.T, h *harness, id string, seq *uint64) {
	t.Helper()
	if _, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandStopTask, TaskID: id}); err != nil {
		t.Fatalf("stop_task: %v", err)
	}
	waitNoTasks(t, h.Ctx, h.S, seq)
	waitJournaled(t, h.Ctx, h.S, `"stopped"`)
}

func init() {
	addScenarios(scenario{
		name: "stop_background_task",
		guards: "An agent the model starts in the background is listed as a task (EventTasks, Tasks) while the " +
			"session is idle, with its description and tool call; stop_task ends it, and the list empties.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{
				Respond: claudetest.BackgroundAgentScript("toolu_bg", "Long review", "Review everything", claudetest.TextReply("started")),
			}
		},
		run: func(t *testing.T, h *harness) {
			d, err := h.S.Send(h.Ctx, "start a long review in the background")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.Wait(h.Ctx); err != nil {
				t.Fatalf("the turn: %v", err)
			}
			var seq uint64
			task := taskOf(t, h.Ctx, h.S, &seq, "toolu_bg")
			if task.Description != "Long review" || !strings.Contains(task.Type, "agent") {
				t.Errorf("the background agent's task %+v", task)
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
			if got := h.S.Tasks(); len(got) != 1 || got[0].ID != task.ID {
				t.Errorf("Tasks() while the agent runs = %+v", got)
			}
			stopTaskAndWait(t, h, task.ID, &seq)
			if got := h.S.Tasks(); len(got) != 0 {
				t.Errorf("Tasks() after stop_task = %+v", got)
			}
			if _, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandStopTask, TaskID: task.ID}); host.ErrorCode(err) != host.CodeNoTask {
				t.Errorf("stop_task of the stopped task: %v", err)
			}
		},
	}, scenario{
		name: "interrupt_spares_background_task",
		guards: "The turn's interrupt leaves an agent the model started in the background at work where the CLI " +
			"takes PerTaskStopAffordance (2.1.330 and later: the host declares it), and stop_task then ends it; " +
			"an older CLI stops the agent with the turn.",
		api: func() *claudetest.MessagesOptions {
			return &claudetest.MessagesOptions{
				Respond: claudetest.BackgroundAgentScript("toolu_bg", "Long review", "Review everything",
					claudetest.TextReply("started"),
					// The turn a person stops: its request is held open.
					&claudetest.Reply{Content: []claudetest.ContentBlock{claudetest.TextBlock("too late")}, Delay: 24 * time.Hour},
					claudetest.TextReply("noted")),
			}
		},
		run: func(t *testing.T, h *harness) {
			h.turn(t, "start a long review in the background")
			var seq uint64
			task := taskOf(t, h.Ctx, h.S, &seq, "toolu_bg")
			d, err := h.S.Send(h.Ctx, "wait for it")
			if err != nil {
				t.Fatal(err)
			}
			// Requests: the first step, the agent's (held), "started", the
			// held turn.
			if _, err := h.API.WaitMessages(h.Ctx, 4); err != nil {
				t.Fatal(err)
			}
			if _, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandInterrupt}); err != nil {
				t.Fatalf("interrupt: %v", err)
			}
			if _, err := d.Wait(h.Ctx); err != nil {
				t.Logf("the stopped turn: %v", err)
			}
			if proc.CompareVersions(claudetest.CLIVersion(), "2.1.330") < 0 {
				waitNoTasks(t, h.Ctx, h.S, &seq)
				waitJournaled(t, h.Ctx, h.S, `"stopped"`)
				return
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
			if got := h.S.Tasks(); len(got) != 1 || got[0].ID != task.ID {
				t.Fatalf("Tasks() after the turn's interrupt = %+v, want the agent still running", got)
			}
			stopTaskAndWait(t, h, task.ID, &seq)
		},
	})
}
