package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tetherhq/tether/claude"
)

// TaskInfo is a background task the session's CLI runs: an agent the
// model started in the background, or a shell command it backgrounded.
// Such a task outlives the turn that started it, so a session can be
// idle while work goes on: a UI lists them (Session.Tasks,
// Snapshot.Tasks, EventTasks) and stops one with CommandStopTask.
type TaskInfo struct {
	// ID is the CLI's task id, what CommandStopTask names.
	ID string `json:"id"`
	// ToolUseID is the tool call that started it, when the CLI said.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Description is the CLI's one line about it (the Agent tool's
	// description, the Bash tool's).
	Description string `json:"description,omitempty"`
	// Type is the CLI's task type, e.g. "local_agent" or "local_bash";
	// SubagentType the agent's type, e.g. "general-purpose".
	Type         string `json:"type,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	// Ambient marks a task that is no activity (a watcher): a UI leaves
	// it out of what says the agent is working, but may still stop it.
	Ambient bool `json:"ambient,omitempty"`
	// Started is when the host first heard of it.
	Started time.Time `json:"started"`
}

// WorkingTasks returns the tasks that are work: all but the Ambient ones
// (watchers, which the CLI says are no activity and which may run as long
// as it does). It is what a UI counts when it says the agent is still at
// work, and what a run that must end waits for. A session keeps awake for
// watchers too (Session.Tasks): closing its CLI would end one the user
// asked for.
func WorkingTasks(tasks []TaskInfo) []TaskInfo {
	return slices.DeleteFunc(slices.Clone(tasks), func(t TaskInfo) bool { return t.Ambient })
}

// ErrNoTask: no background task of the session has that id (it ended,
// or never ran). Matched by the *CommandError of code no_task.
var ErrNoTask = errors.New("host: no such background task")

// CodeNoTask is the code of a stop_task naming no running task.
const CodeNoTask = "no_task"

// maxTasks bounds the tasks a session follows; a CLI runs a handful.
// Past it, a new task is not listed (nor stoppable from here), and the
// session does not sleep while it runs only if others do.
const maxTasks = 256

// Tasks returns the background tasks the CLI reports running, oldest
// first (nil: none). A session asleep or whose CLI is gone has none.
func (s *Session) Tasks() []TaskInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tasks)
}

// stopTask asks the CLI to stop the task; its end then comes as the
// CLI reports it (a task notification "stopped"), and with it an
// EventTasks without the task.
func (s *Session) stopTask(ctx context.Context, id string) error {
	s.mu.Lock()
	cs := s.cs
	running := slices.ContainsFunc(s.tasks, func(t TaskInfo) bool { return t.ID == id })
	s.mu.Unlock()
	if !running {
		return &CommandError{Code: CodeNoTask, Message: fmt.Sprintf("no background task %q is running", id), Err: ErrNoTask}
	}
	if cs == nil {
		return &CommandError{Code: CodeSessionClosed, Message: "the session's CLI is gone", Err: ErrSessionClosed}
	}
	return cs.StopTask(ctx, id)
}

// noteTask follows the background tasks the CLI reports (s.mu held): a
// session with one running does not sleep, and a UI lists them. The set
// the CLI sends whole (background_tasks_changed) replaces it; once a CLI
// process has sent one, its task_* bookends only fill in what the set
// lacks (the tool call, a new description): a task can leave the set
// with no bookend (its process ended), and a bookend can come after the
// set it changed, so pairing them could keep a session awake for ever.
// A CLI that never sends the set (an older one) is followed by its
// bookends.
func (s *Session) noteTask(m claude.Message) {
	tasks := slices.Clone(s.tasks)
	find := func(id string) int {
		return slices.IndexFunc(tasks, func(t TaskInfo) bool { return t.ID == id })
	}
	switch m := m.(type) {
	case *claude.BackgroundTasksChangedMessage:
		s.tasksLevel = true
		next := make([]TaskInfo, 0, len(m.Tasks))
		for _, bt := range m.Tasks {
			if bt.TaskID == "" || len(next) >= maxTasks {
				continue
			}
			t := TaskInfo{ID: bt.TaskID, Started: time.Now()}
			if i := find(bt.TaskID); i >= 0 {
				t = tasks[i] // keeps its tool call and start
			}
			t.Description = cmpOr(bt.Description, t.Description)
			t.Type = cmpOr(bt.TaskType, t.Type)
			t.SubagentType = cmpOr(bt.SubagentType, t.SubagentType)
			t.Ambient = bt.Ambient
			next = append(next, t)
		}
		tasks = next
	case *claude.TaskStartedMessage:
		if i := find(m.TaskID); i >= 0 {
			tasks[i].ToolUseID = cmpOr(tasks[i].ToolUseID, m.ToolUseID)
			break
		}
		if s.tasksLevel || m.TaskID == "" || len(tasks) >= maxTasks {
			break
		}
		tasks = append(tasks, TaskInfo{ID: m.TaskID, ToolUseID: m.ToolUseID, Description: m.Description,
			Type: m.TaskType, SubagentType: m.SubagentType, Ambient: m.Ambient, Started: time.Now()})
	case *claude.TaskUpdatedMessage:
		i := find(m.TaskID)
		if i < 0 {
			break
		}
		if m.Patch.Description != "" {
			tasks[i].Description = m.Patch.Description
		}
		if !s.tasksLevel {
			switch m.Patch.Status {
			case "completed", "failed", "stopped", "killed":
				tasks = slices.Delete(tasks, i, i+1)
			}
		}
	case *claude.TaskNotificationMessage:
		if i := find(m.TaskID); i >= 0 && !s.tasksLevel {
			tasks = slices.Delete(tasks, i, i+1)
		}
	}
	s.setTasks(tasks)
}

// setTasks replaces the list, journalling EventTasks when it changed
// (s.mu held).
func (s *Session) setTasks(tasks []TaskInfo) {
	if slices.Equal(tasks, s.tasks) {
		return
	}
	if len(tasks) == 0 {
		tasks = nil
	}
	s.tasks = tasks
	s.record(EventTasks, tasksPayload(tasks))
}

// tasksPayload is EventTasks' data: the list, [] rather than null.
func tasksPayload(tasks []TaskInfo) []TaskInfo {
	if tasks == nil {
		return []TaskInfo{}
	}
	return tasks
}
