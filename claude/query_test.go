package claude_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// backgroundTask plays a CLI that runs a task in the background: the first
// turn ends while it runs; when it finishes (after the host has seen the
// first result, signalled by finish), the CLI reports it and runs a turn of
// its own for the report. states adds session_state_changed lines as the
// real CLI writes them with CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1.
func backgroundTask(states bool, finish <-chan struct{}) claudetest.Script {
	return func(ctx context.Context, c *claudetest.CLI) error {
		state := c.SessionState
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		if states {
			c.Write(state("running"))
		}
		c.Write(c.SystemInit(),
			claudetest.Msg{"type": "system", "subtype": "task_started", "task_id": "t1", "description": "review", "session_id": c.SessionID(), "uuid": "u1"},
			c.AssistantText("started a reviewer"), c.ResultSuccess("started a reviewer"))
		if finish == nil {
			<-ctx.Done() // the task never finishes
			return nil
		}
		<-finish
		c.Write(claudetest.Msg{"type": "system", "subtype": "task_notification", "task_id": "t1", "status": "completed", "summary": "REPORT", "session_id": c.SessionID(), "uuid": "u2"})
		if states {
			c.Write(state("running"))
		}
		c.Write(c.SystemInit(), c.AssistantText("the reviewer says REPORT"), c.ResultSuccess("the reviewer says REPORT"))
		if states {
			c.Write(state("idle"))
		}
		_, err := c.ReadUser(ctx) // until stdin closes
		return claudeIgnoreEOF(err)
	}
}

func claudeIgnoreEOF(err error) error {
	if err != nil && (strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed")) {
		return nil
	}
	return err
}

// Query does not end at a result while a background task runs: the task's
// report and the turn the CLI runs for it reach the caller, with or without
// session states.
func TestQueryWaitsForBackgroundTasks(t *testing.T) {
	for _, states := range []bool{false, true} {
		t.Run(map[bool]string{false: "no states", true: "states"}[states], func(t *testing.T) {
			finish := make(chan struct{})
			fake := &claudetest.FakeCLI{Script: backgroundTask(states, finish)}
			var results []string
			for m, err := range claude.Query(testCtx(t), "review", &claude.Options{Transport: fake}) {
				if err != nil {
					t.Fatal(err)
				}
				if r, ok := m.(*claude.ResultMessage); ok {
					results = append(results, r.Result)
					if len(results) == 1 {
						close(finish)
					}
				}
			}
			if len(results) != 2 || results[1] != "the reviewer says REPORT" {
				t.Errorf("results = %q, want the first turn's and the report's", results)
			}
			if env := fake.Launches()[0].Env; !containsEnv(env, "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1") {
				t.Error("Query did not ask for session states")
			}
		})
	}
}

func containsEnv(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

// A task that never finishes: Query gives up after QueryTaskTimeout with
// an error saying so, and closes the CLI.
func TestQueryTaskTimeout(t *testing.T) {
	fake := &claudetest.FakeCLI{Script: backgroundTask(false, nil)}
	var (
		results int
		last    error
	)
	for m, err := range claude.Query(testCtx(t), "review", &claude.Options{Transport: fake, QueryTaskTimeout: 200 * time.Millisecond}) {
		if _, ok := m.(*claude.ResultMessage); ok {
			results++
		}
		if err != nil {
			last = err
		}
	}
	if results != 1 || last == nil || !strings.Contains(last.Error(), "QueryTaskTimeout") {
		t.Errorf("%d results, last error %v; want one result, then the timeout", results, last)
	}
}

// A watcher is no work: Query ends at the idle state however the CLI
// says a task is ambient (on its task_started, or in its whole set of
// tasks later), and a task that leaves the set with no bookend holds it
// no longer either. Each case would otherwise end in QueryTaskTimeout's
// error.
func TestQueryDoesNotWaitForWatchers(t *testing.T) {
	level := func(c *claudetest.CLI, ambient bool, ids ...string) claudetest.Msg {
		var tasks []any
		for _, id := range ids {
			tasks = append(tasks, map[string]any{"task_id": id, "task_type": "monitor", "description": "watch the build", "ambient": ambient})
		}
		return claudetest.Msg{"type": "system", "subtype": "background_tasks_changed", "tasks": tasks, "session_id": c.SessionID(), "uuid": "u-level"}
	}
	cases := map[string]func(c *claudetest.CLI) []any{
		"ambient on task_started": func(c *claudetest.CLI) []any {
			return []any{c.WatcherStarted("w1", "", "watch the build")}
		},
		"ambient in the set": func(c *claudetest.CLI) []any {
			return []any{level(c, false, "w1"), c.TaskStarted("w1", "toolu_1", "watch the build", "monitor"), level(c, true, "w1")}
		},
		"gone from the set": func(c *claudetest.CLI) []any {
			return []any{level(c, false, "t1"), c.TaskStarted("t1", "toolu_1", "review", "local_agent"), level(c, false)}
		},
	}
	for name, tasks := range cases {
		t.Run(name, func(t *testing.T) {
			fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
				if _, err := c.HandleInitialize(ctx); err != nil {
					return err
				}
				if _, err := c.ReadUser(ctx); err != nil {
					return err
				}
				c.Write(c.SessionState("running"), c.SystemInit())
				c.Write(tasks(c)...)
				c.Write(c.AssistantText("watching"), c.ResultSuccess("watching"), c.SessionState("idle"))
				_, err := c.ReadUser(ctx) // until stdin closes
				return claudeIgnoreEOF(err)
			}}
			var results int
			for m, err := range claude.Query(testCtx(t), "watch", &claude.Options{Transport: fake, QueryTaskTimeout: time.Minute}) {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := m.(*claude.ResultMessage); ok {
					results++
				}
			}
			if results != 1 {
				t.Errorf("%d results, want 1", results)
			}
		})
	}
}
