package claude

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"time"
)

// Query runs one prompt in a new CLI and yields its messages, ending with
// the *ResultMessage of the last turn (yielded together with a
// *ResultError when that turn failed). The CLI is closed when the loop
// ends, however it ends.
//
// Query ends when the CLI has nothing left running, not at the first
// result: background tasks (the Agent tool runs in the background by
// default on 2.1.330, and Bash can run commands in the background) are
// tracked from task_started, task_updated and task_notification, and
// while one runs, Query keeps going: the task's report, and the turn the
// CLI starts to handle it, reach the caller. A task the CLI marks ambient
// (a watcher: no activity, and it may never end) does not hold Query; it
// ends with the CLI. Query has the CLI report its
// session state (CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1) and ends when it
// goes idle with no task left; a CLI that does not report states ends it
// at a result with no task left. Options.QueryTaskTimeout
// (10 minutes by default) bounds that wait; past it, Query yields an error
// and closes the CLI, which ends the tasks.
//
// The CLI's stdin stays open to the end, so permission, hook and MCP
// requests can be answered throughout. The iterator is single-use.
//
// When the loop ends on its own or the caller stops early, the CLI is
// closed (Session.Close) before the iterator returns, so its session file
// is complete by then. Cancelling ctx interrupts the turn and closes the
// CLI too, but the iterator does not wait for a CLI that takes its time:
// it returns once the CLI is gone or after half a second,
// whichever comes first, whatever the CLI does (stopped, ignoring its
// closed stdin and SIGTERM). The rest of the shutdown (the interrupt,
// the CLI's grace period, SIGTERM, SIGKILL, reaping; see Session.Close)
// goes on in the background and ends within Options.CloseTimeout plus
// about 1 s: the process is reaped and its process group killed, nothing
// is left running.
func Query(ctx context.Context, prompt string, opts *Options) iter.Seq2[Message, error] {
	return QueryMessage(ctx, NewUserMessage(prompt), opts)
}

// QueryMessage is Query with a full user message (images, documents).
func QueryMessage(ctx context.Context, m *UserMessage, opts *Options) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		var o Options
		if opts != nil {
			o = *opts
		}
		// Ask for session_state_changed: "idle" is how the CLI says it has
		// nothing left, including a turn it will start on its own for a
		// background task that finished before the result.
		o.Env = maps.Clone(o.Env)
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		if _, set := o.Env[envStateEvents]; !set {
			o.Env[envStateEvents] = "1"
		}
		s, err := Connect(ctx, &o)
		if err != nil {
			yield(nil, err)
			return
		}
		defer closeQuery(ctx, s)
		if err := s.SendMessage(ctx, m); err != nil {
			yield(nil, err)
			return
		}
		wait := cmp.Or(o.QueryTaskTimeout, DefaultQueryTaskTimeout)
		var (
			states  bool // the CLI reports session states
			results int
		)
		rctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		tasks := workTasks{running: map[string]bool{}}
		var ceiling *time.Timer
		defer func() {
			if ceiling != nil {
				ceiling.Stop()
			}
		}()
		for msg, err := range s.Receive(rctx) {
			if msg == nil && err != nil && context.Cause(rctx) == errTasksTimeout && ctx.Err() == nil {
				yield(nil, fmt.Errorf("claude: Query: %d background task(s) still running %v after the result (Options.QueryTaskTimeout)", tasks.len(), wait))
				return
			}
			if m, ok := msg.(*SessionStateChangedMessage); ok {
				states = true
				if m.State == "idle" && results > 0 && tasks.len() == 0 {
					return // the last result has been yielded: done
				}
			}
			tasks.note(msg)
			if !yield(msg, err) {
				return
			}
			if _, ok := msg.(*ResultMessage); ok {
				results++
				if tasks.len() == 0 && !states {
					return // a CLI without state events: the result ends it
				}
				// Bound the wait for tasks and for the idle state alike.
				if ceiling == nil {
					ceiling = time.AfterFunc(wait, func() { cancel(errTasksTimeout) })
				}
			}
		}
		if results == 0 && ctx.Err() == nil {
			// The CLI exited cleanly without a result: the turn is lost.
			yield(nil, s.endedErr())
		}
		// Close (deferred) interrupts a turn still running before the CLI
		// goes, whether ctx was cancelled or the caller stopped early.
	}
}

// workTasks follows the background tasks that hold a Query open: those
// the CLI reports running, less the ambient ones. The CLI marks a task
// ambient when it is no activity (a watcher, requested or started on its
// own), and such a task may run as long as the CLI does, so waiting for it
// would end every such Query in QueryTaskTimeout's error; closing the CLI
// ends it with the rest.
//
// Once the CLI has sent its whole set (background_tasks_changed, which
// also says when a task becomes ambient), the set decides what runs, so a
// task whose process ended without a bookend does not hold the Query; a
// CLI that never sends it is followed by its task_* bookends. A task's end
// (task_notification, or task_updated to a final status) removes it
// either way, as the set that drops it can come after.
type workTasks struct {
	running map[string]bool // by task id
	level   bool            // the CLI sends its whole set
}

func (w *workTasks) len() int { return len(w.running) }

func (w *workTasks) note(msg Message) {
	switch m := msg.(type) {
	case *BackgroundTasksChangedMessage:
		w.level = true
		clear(w.running)
		for _, t := range m.Tasks {
			if !t.Ambient {
				w.running[t.TaskID] = true
			}
		}
	case *TaskStartedMessage:
		if !w.level && !m.Ambient {
			w.running[m.TaskID] = true
		}
	case *TaskNotificationMessage:
		delete(w.running, m.TaskID)
	case *TaskUpdatedMessage:
		switch m.Patch.Status {
		case "completed", "failed", "stopped", "killed":
			delete(w.running, m.TaskID)
		}
	}
}

// queryCancelWait bounds how long Query waits for the CLI's shutdown once
// its ctx is cancelled: a real CLI is gone in a few tens of milliseconds;
// one that ignores its closed stdin and SIGTERM is left to finish closing
// in the background.
const queryCancelWait = 500 * time.Millisecond

// closeQuery closes Query's session: at once when ctx is live, in the
// background past queryCancelWait when the caller has cancelled it.
func closeQuery(ctx context.Context, s *Session) {
	if ctx.Err() == nil {
		s.Close()
		return
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close() // bounded: CloseTimeout plus about 1 s
	}()
	t := time.NewTimer(queryCancelWait)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		s.log.Debug("claude: Query cancelled; the CLI is still closing, in the background")
	}
}

// envStateEvents makes the CLI write system/session_state_changed.
const envStateEvents = "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"

// errTasksTimeout is the cause Query cancels its receive with when
// background tasks outlast Options.QueryTaskTimeout.
var errTasksTimeout = fmt.Errorf("claude: background tasks outlasted Options.QueryTaskTimeout")
