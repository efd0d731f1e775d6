package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/host"
)

// TestRealCLIRunBackgroundTask: a run whose turn starts an agent in the
// background does not end at the turn's result, nor (with -i) when the
// person ends the input at the prompt, which would kill the agent: it
// says the agent runs on and that it waits for it, waits, and shows the
// turn the CLI starts for its report before it exits 0. The agent's
// request is held until the terminal shows that the run waits, so the
// agent ends after that.
func TestRealCLIRunBackgroundTask(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	for _, interactive := range []bool{false, true} {
		t.Run(map[bool]string{false: "OneShot", true: "InteractiveEOF"}[interactive], func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			var once sync.Once
			let := func() { once.Do(func() { close(release) }) }
			t.Cleanup(let)
			var mains atomic.Int32
			ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{
				Respond: func(q *claudetest.Request) *claudetest.Reply {
					if q.Subagent() {
						<-release
						return claudetest.TextReply("Nothing to fix.")
					}
					switch mains.Add(1) {
					case 1:
						return claudetest.BackgroundAgentReply("toolu_bg", "Long review", "Review everything")
					case 2:
						return claudetest.TextReply("Started the review.")
					}
					return claudetest.TextReply("The review found nothing to fix.")
				},
			})
			args := []string{"review everything in the background"}
			if interactive {
				args = append([]string{"-i"}, args...)
			}
			term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, args...)...)
			term.waitFor(`in the background: agent "Long review"`)
			term.waitFor("Started the review.")
			if interactive {
				term.waitFor("> ")
				term.send("\x04") // Ctrl-D: the person is done typing
			}
			term.waitFor("waiting for 1 background task to end (Ctrl-C stops it and quits)")
			let()
			term.waitFor(`ended in the background: agent "Long review"`)
			term.waitFor("The review found nothing to fix.")
			// The run's last line: the exit can be seen before the
			// terminal's last bytes are read.
			term.waitFor("cost: $")
			if code := term.exitCode(); code != 0 {
				t.Errorf("exit code %d\n%s", code, term.text())
			}
			if strings.Count(term.text(), "cost: $") != 1 {
				t.Errorf("the run's cost line: %q", term.text())
			}
			if n := len(api.Unexpected()); n != 0 {
				t.Errorf("%d unscripted requests", n)
			}
			noProcessIn(t, cli.Dir)
		})
	}
}

// TestRealCLIRunStopTask: in tether run -i, /tasks lists the background
// tasks and /tasks stop N stops one (a wrong N refused); the agent ends,
// stopped, and the session goes on.
func TestRealCLIRunStopTask(t *testing.T) {
	t.Parallel()
	requireCLI(t)
	ctx, api, cli := realCLI(t, &claudetest.MessagesOptions{
		Respond: claudetest.BackgroundAgentScript("toolu_bg", "Long review", "Review everything",
			claudetest.TextReply("Started the review."),
			claudetest.TextReply("The review was stopped.")), // newer CLIs report the stop in a turn of their own
	})
	term := startTerminal(t, ctx, cli.Environ(), cli.Dir, runArgs(cli, "-i", "review everything in the background")...)
	term.waitFor(`in the background: agent "Long review"`)
	term.waitFor("Started the review.")
	term.waitFor("> ")
	term.typeLine("/tasks")
	term.waitFor(`1. agent "Long review", for `)
	term.typeLine("/tasks stop 2")
	term.waitFor(`/tasks stop: "2": not the number of a running task`)
	term.typeLine("/tasks stop 1")
	term.waitFor(`stopping agent "Long review"`)
	term.waitFor(`ended in the background: agent "Long review"`)
	term.typeLine("/tasks")
	term.waitFor("no background task runs")
	term.send("\x04") // Ctrl-D: stdin ends, and with it the session
	if code := term.exitCode(); code != 0 {
		t.Errorf("exit code %d\n%s", code, term.text())
	}
	if n := len(api.Unexpected()); n != 0 {
		t.Errorf("%d unscripted requests", n)
	}
	noProcessIn(t, cli.Dir)
}

// TestRunDoesNotWaitForWatchers: a one-shot run whose turn leaves only a
// watcher running (a task the CLI marks ambient) ends at the idle state,
// exit 0, instead of waiting the ten minutes for it; it names the watcher
// as one, and says that it ends with the run. The fake CLI stands in for the real one, which starts no
// watcher offline.
func TestRunDoesNotWaitForWatchers(t *testing.T) {
	t.Parallel()
	fake := &claudetest.FakeCLI{Script: func(ctx context.Context, c *claudetest.CLI) error {
		if _, err := c.HandleInitialize(ctx); err != nil {
			return err
		}
		if _, err := c.ReadUser(ctx); err != nil {
			return err
		}
		c.Write(c.SessionState("running"), c.SystemInit(),
			c.WatcherStarted("w1", "toolu_w", "watch the build"),
			c.AssistantText("Watching the build."), c.ResultSuccess("Watching the build."), c.SessionState("idle"))
		<-ctx.Done() // the CLI stays until it is closed
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code := runSession(ctx, loopConfig{
		opts:   host.Options{CLI: &claude.Options{Transport: fake}},
		prompt: "watch the build",
	}, strings.NewReader(""), &out, &errOut)
	if code != 0 || ctx.Err() != nil {
		t.Fatalf("exit code %d (ctx: %v)\n%s%s", code, ctx.Err(), out.String(), errOut.String())
	}
	if got := out.String() + errOut.String(); !strings.Contains(got, `in the background: watcher "watch the build"`) ||
		!strings.Contains(got, `ends with the run: watcher "watch the build"`) || strings.Contains(got, "waiting for") {
		t.Errorf("the run's output:\n%s", got)
	}
}
