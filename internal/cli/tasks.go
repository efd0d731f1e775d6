package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/host"
)

// The REPL's command about background tasks (agents the model started in
// the background, shell commands it backgrounded), which run on after
// their turn: /tasks lists them, /tasks stop [N] stops the Nth (the only
// one, without N) through stop_task. The run names each as it starts and
// ends (noteTasks).

// noteTasks tells of the background tasks that started or ended since
// the list was, and returns the list now.
func noteTasks(v view, was, now []host.TaskInfo) []host.TaskInfo {
	has := func(list []host.TaskInfo, id string) bool {
		return slices.ContainsFunc(list, func(t host.TaskInfo) bool { return t.ID == id })
	}
	for _, t := range now {
		if !has(was, t.ID) {
			v.note(fmt.Sprintf("in the background: %s %q (it runs on after the turn)", taskKind(t), t.Description))
		}
	}
	for _, t := range was {
		if !has(now, t.ID) {
			v.note(fmt.Sprintf("ended in the background: %s %q", taskKind(t), t.Description))
		}
	}
	return now
}

// noteTasksEnd says which background tasks end with the run's CLI: the
// watchers the run did not wait for, or the work Ctrl-C or a quit gives
// up, so that none ends unsaid.
func noteTasksEnd(v view, tasks []host.TaskInfo) {
	for _, t := range tasks {
		v.note(fmt.Sprintf("ends with the run: %s %q", taskKind(t), t.Description))
	}
}

// taskKind names what a background task is, as a person reads it.
func taskKind(t host.TaskInfo) string {
	switch {
	case t.Ambient:
		return "watcher"
	case strings.Contains(t.Type, "agent"):
		return "agent"
	case strings.Contains(t.Type, "bash"), strings.Contains(t.Type, "shell"):
		return "shell command"
	}
	return "task"
}

// taskCommand runs /tasks with its arguments.
func taskCommand(ctx context.Context, s *host.Session, v view, args []string) {
	tasks := s.Tasks()
	if len(args) == 0 {
		if len(tasks) == 0 {
			v.note("no background task runs")
			return
		}
		for i, t := range tasks {
			v.note(fmt.Sprintf("  %d. %s %q, for %s", i+1, taskKind(t), t.Description, time.Since(t.Started).Round(time.Second)))
		}
		v.note("/tasks stop N stops one")
		return
	}
	if args[0] != "stop" || len(args) > 2 {
		v.failure(fmt.Errorf("/tasks: %q: type /tasks to list them, /tasks stop N to stop one", strings.Join(args, " ")))
		return
	}
	var t host.TaskInfo
	switch {
	case len(tasks) == 0:
		v.note("no background task runs")
		return
	case len(args) == 1 && len(tasks) == 1:
		t = tasks[0]
	case len(args) == 1:
		v.failure(fmt.Errorf("/tasks stop: %d background tasks run: say which (/tasks lists them)", len(tasks)))
		return
	default:
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > len(tasks) {
			v.failure(fmt.Errorf("/tasks stop: %q: not the number of a running task (/tasks lists them)", args[1]))
			return
		}
		t = tasks[n-1]
	}
	if _, err := s.Do(ctx, &host.Command{Type: host.CommandStopTask, TaskID: t.ID}); err != nil {
		v.failure(fmt.Errorf("/tasks stop: %w", err))
		return
	}
	v.note(fmt.Sprintf("stopping %s %q", taskKind(t), t.Description))
}
