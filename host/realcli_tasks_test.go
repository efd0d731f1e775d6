package host_test

import (
	"strings"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

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
			var task host.TaskInfo
			for task.ID == "" {
				for _, ti := range nextTasks(t, h.Ctx, h.S, &seq) {
					if ti.ToolUseID == "toolu_bg" {
						task = ti
					}
				}
			}
			if task.Description != "Long review" || !strings.Contains(task.Type, "agent") {
				t.Errorf("the background agent's task %+v", task)
			}
			h.states.waitState(t, h.Ctx, host.StateIdle)
			if got := h.S.Tasks(); len(got) != 1 || got[0].ID != task.ID {
				t.Errorf("Tasks() while the agent runs = %+v", got)
			}
			if _, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandStopTask, TaskID: task.ID}); err != nil {
				t.Fatalf("stop_task: %v", err)
			}
			for {
				list := nextTasks(t, h.Ctx, h.S, &seq)
				if len(list) == 0 {
					break
				}
			}
			waitJournaled(t, h.Ctx, h.S, `"stopped"`)
			if got := h.S.Tasks(); len(got) != 0 {
				t.Errorf("Tasks() after stop_task = %+v", got)
			}
			if _, err := h.S.Do(h.Ctx, &host.Command{Type: host.CommandStopTask, TaskID: task.ID}); host.ErrorCode(err) != host.CodeNoTask {
				t.Errorf("stop_task of the stopped task: %v", err)
			}
		},
	})
}
