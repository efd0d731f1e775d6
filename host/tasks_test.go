package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// nextTasks returns the list of the session's next EventTasks after
// *after, and moves *after past it.
func nextTasks(t *testing.T, ctx context.Context, s *host.Session, after *uint64) []host.TaskInfo {
	t.Helper()
	for e, err := range s.Events(ctx, *after) {
		if err != nil {
			t.Fatal(err)
		}
		*after = e.Seq
		if e.Kind != host.EventTasks {
			continue
		}
		var list []host.TaskInfo
		if err := json.Unmarshal(e.Data, &list); err != nil || list == nil {
			t.Fatalf("tasks event %s: %v", e.Data, err)
		}
		return list
	}
	t.Fatal("the journal ended before the next tasks event")
	return nil
}

// taskOf reads the tasks events after *after until one lists the task
// the tool call toolUseID started, and returns it.
func taskOf(t *testing.T, ctx context.Context, s *host.Session, after *uint64, toolUseID string) host.TaskInfo {
	t.Helper()
	for {
		for _, ti := range nextTasks(t, ctx, s, after) {
			if ti.ToolUseID == toolUseID {
				return ti
			}
		}
	}
}

// waitNoTasks reads the tasks events after *after until one lists none.
func waitNoTasks(t *testing.T, ctx context.Context, s *host.Session, after *uint64) {
	t.Helper()
	for len(nextTasks(t, ctx, s, after)) != 0 {
	}
}

// taskIDs names each task "id:description".
func taskIDs(list []host.TaskInfo) []string {
	ids := []string{}
	for _, ti := range list {
		ids = append(ids, ti.ID+":"+ti.Description)
	}
	return ids
}

// TestTasks: the background tasks the CLI reports are listed as they
// start, change and end (EventTasks, Tasks, Snapshot.Tasks), and
// stop_task asks the CLI to stop the one it names, refusing an id no
// task has.
func TestTasks(t *testing.T) {
	ctx := testCtx(t)
	stopAsked := make(chan string, 1)
	s, l := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		sys := func(subtype string, fields claudetest.Msg) claudetest.Msg {
			m := claudetest.Msg{"type": "system", "subtype": subtype, "session_id": c.SessionID(), "uuid": subtype + "-" + fields["task_id"].(string)}
			for k, v := range fields {
				m[k] = v
			}
			return m
		}
		c.Write(c.SystemInit(),
			sys("task_started", claudetest.Msg{"task_id": "bg1", "tool_use_id": "toolu_bg", "description": "Long review", "task_type": "local_agent", "subagent_type": "general-purpose"}),
			sys("task_started", claudetest.Msg{"task_id": "bg2", "description": "tail -f app.log", "task_type": "local_bash"}),
			sys("task_updated", claudetest.Msg{"task_id": "bg2", "patch": claudetest.Msg{"description": "Follow the log"}}),
			c.AssistantText("both running"), c.ResultSuccess("both running"))
		l, err := c.Expect(ctx, "control_request", "stop_task")
		if err != nil {
			return err
		}
		var req struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(l.Request, &req)
		stopAsked <- req.TaskID
		if err := c.Respond(l.RequestID, claudetest.Msg{}); err != nil {
			return err
		}
		c.Write(sys("task_notification", claudetest.Msg{"task_id": req.TaskID, "status": "stopped", "output_file": "", "summary": ""}))
		_, err = c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if _, err := s.Send(ctx, "start two"); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	for _, want := range [][]string{{"bg1:Long review"}, {"bg1:Long review", "bg2:tail -f app.log"}, {"bg1:Long review", "bg2:Follow the log"}} {
		if got := taskIDs(nextTasks(t, ctx, s, &seq)); !slices.Equal(got, want) {
			t.Fatalf("tasks %q, want %q", got, want)
		}
	}
	l.waitState(t, ctx, host.StateIdle)
	list := s.Tasks()
	if len(list) != 2 || list[0].ToolUseID != "toolu_bg" || list[0].Type != "local_agent" || list[0].SubagentType != "general-purpose" ||
		list[1].Type != "local_bash" || list[0].Started.IsZero() {
		t.Errorf("Tasks() = %+v", list)
	}
	if snap := s.Snapshot(); !slices.Equal(taskIDs(snap.Tasks), []string{"bg1:Long review", "bg2:Follow the log"}) {
		t.Errorf("Snapshot().Tasks = %+v", snap.Tasks)
	}

	// Refusals: no id, an id no task has.
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandStopTask}); host.ErrorCode(err) != host.CodeBadRequest {
		t.Errorf("stop_task without task_id: %v", err)
	}
	_, err := s.Do(ctx, &host.Command{Type: host.CommandStopTask, TaskID: "bg9"})
	if !errors.Is(err, host.ErrNoTask) || host.ErrorCode(err) != host.CodeNoTask {
		t.Errorf("stop_task of no task: %v (code %q)", err, host.ErrorCode(err))
	}
	if c := (&host.Command{Type: host.CommandStopTask}); c.Lane() != host.LaneQuick {
		t.Error("stop_task is not in the quick lane: it would wait behind a send")
	}

	if _, err := s.Do(ctx, &host.Command{Type: host.CommandStopTask, TaskID: "bg1"}); err != nil {
		t.Fatalf("stop_task: %v", err)
	}
	if id := <-stopAsked; id != "bg1" {
		t.Errorf("the CLI was asked to stop %q", id)
	}
	if got := taskIDs(nextTasks(t, ctx, s, &seq)); !slices.Equal(got, []string{"bg2:Follow the log"}) {
		t.Errorf("tasks after the stop %q", got)
	}
}

// TestTasksFollowSet: once the CLI sends its set whole, the set decides
// what is listed; a bookend for a task in it only fills in its tool
// call, and one for a task outside it adds nothing.
func TestTasksFollowSet(t *testing.T) {
	ctx := testCtx(t)
	release := make(chan struct{})
	s, _ := start(t, nil, func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		set := func(uuid string, tasks ...claudetest.Msg) claudetest.Msg {
			return claudetest.Msg{"type": "system", "subtype": "background_tasks_changed", "tasks": append([]claudetest.Msg{}, tasks...), "session_id": c.SessionID(), "uuid": uuid}
		}
		watch := claudetest.Msg{"task_id": "w1", "task_type": "monitor", "description": "Watch the build", "ambient": true}
		review := claudetest.Msg{"task_id": "bg1", "task_type": "local_agent", "description": "Review"}
		c.Write(c.SystemInit(), set("s1", watch),
			set("s2", watch, review),
			claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "bg1", "tool_use_id": "toolu_bg", "description": "Review", "session_id": c.SessionID(), "uuid": "t1"},
			claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "late", "description": "late", "session_id": c.SessionID(), "uuid": "t2"},
			c.AssistantText("started"), c.ResultSuccess("started"))
		<-release
		c.Write(set("s3", watch))
		_, err := c.ReadUser(ctx)
		return ignoreEOF(err)
	})
	if _, err := s.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	if got := nextTasks(t, ctx, s, &seq); len(got) != 1 || got[0].ID != "w1" || !got[0].Ambient || got[0].Type != "monitor" {
		t.Fatalf("first set %+v", got)
	}
	if got := taskIDs(nextTasks(t, ctx, s, &seq)); !slices.Equal(got, []string{"w1:Watch the build", "bg1:Review"}) {
		t.Fatalf("second set %q", got)
	}
	got := nextTasks(t, ctx, s, &seq) // task_started fills in the tool call
	if len(got) != 2 || got[1].ToolUseID != "toolu_bg" {
		t.Fatalf("after task_started %+v", got)
	}
	close(release)
	if got := taskIDs(nextTasks(t, ctx, s, &seq)); !slices.Equal(got, []string{"w1:Watch the build"}) {
		t.Fatalf("third set %q (a task_started outside the set was listed?)", got)
	}
}

// The host tells the CLI that it stops each task on its own
// (perTaskStopAffordance in initialize), so the turn's interrupt spares
// them, unless Options.InterruptStopsTasks or the CLI options say
// otherwise. (TestRealCLI/interrupt_spares_background_task: what the
// CLI does with it, and a CLI too old for it started without it.)
func TestPerTaskStopDeclared(t *testing.T) {
	for _, c := range []struct {
		name string
		o    *host.Options
		want bool
	}{
		{"default", nil, true},
		{"InterruptStopsTasks", &host.Options{InterruptStopsTasks: true}, false},
		{"CLI option", &host.Options{InterruptStopsTasks: true, CLI: &claude.Options{PerTaskStopAffordance: true}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := make(chan json.RawMessage, 1)
			start(t, c.o, func(ctx context.Context, c *claudetest.CLI) error {
				req, err := c.HandleInitialize(ctx)
				if err != nil {
					return err
				}
				got <- req
				_, err = c.ReadUser(ctx)
				return err
			})
			var req struct {
				PerTaskStopAffordance bool `json:"perTaskStopAffordance"`
			}
			if err := json.Unmarshal(<-got, &req); err != nil || req.PerTaskStopAffordance != c.want {
				t.Errorf("perTaskStopAffordance %v (%v), want %v", req.PerTaskStopAffordance, err, c.want)
			}
		})
	}
}
