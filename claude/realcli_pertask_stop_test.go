package claude_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// TestRealCLIPerTaskStopAffordance: what a Stop does to an agent the
// model started in the background. Without Options.PerTaskStopAffordance
// an interrupt of a later turn stops the agent with the turn (every
// pinned CLI): the client is taken to have no stop of its own for each
// task. With it (2.1.330 and later), the interrupt ends the turn only,
// and the agent runs on to its end. The agent's API request is held
// open until the test lets it finish, so it is running at the Stop.
func TestRealCLIPerTaskStopAffordance(t *testing.T) {
	t.Parallel()
	for _, spare := range []bool{false, true} {
		name := map[bool]string{false: "Without", true: "With"}[spare]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if v := claudetest.CLIVersion(); spare && proc.CompareVersions(v, "2.1.330") < 0 {
				t.Skipf("CLI %s does not take PerTaskStopAffordance (TestRealCLINeedsNewerCLI)", v)
			}
			agentAsked, turnHeld := make(chan struct{}), make(chan struct{})
			// Each held request waits for its own release, closed once.
			agentGo, turnGo := make(chan struct{}), make(chan struct{})
			var onceAgent, onceHeld, onceAgentGo sync.Once
			letAgentGo := func() { onceAgentGo.Do(func() { close(agentGo) }) }
			var mains atomic.Int32
			r := newRealSession(t, &claudetest.MessagesOptions{
				Respond: func(q *claudetest.Request) *claudetest.Reply {
					if q.Subagent() {
						onceAgent.Do(func() { close(agentAsked) })
						<-agentGo
						return claudetest.TextReply("the review is done")
					}
					switch mains.Add(1) {
					case 1:
						return claudetest.BackgroundAgentReply("toolu_bg", "Long review", "Review everything")
					case 2:
						return claudetest.TextReply("started")
					case 3: // the turn a person stops
						onceHeld.Do(func() { close(turnHeld) })
						<-turnGo
						return claudetest.TextReply("too late")
					}
					return claudetest.TextReply("noted")
				},
			}, func(o *claude.Options) { o.PerTaskStopAffordance = spare })
			t.Cleanup(func() { letAgentGo(); close(turnGo) }) // before the session and the API close

			var task string
			for _, m := range turnOf(t, r.Ctx, r.S, "start a long review in the background") {
				if ts, ok := m.(*claude.TaskStartedMessage); ok && ts.ToolUseID == "toolu_bg" {
					task = ts.TaskID
				}
			}
			if task == "" {
				t.Fatal("no task_started for the background agent")
			}
			<-agentAsked
			if err := r.S.Send(r.Ctx, "wait for it"); err != nil {
				t.Fatalf("Send: %v", err)
			}
			<-turnHeld
			if err := r.S.Interrupt(r.Ctx); err != nil {
				t.Fatalf("Interrupt: %v", err)
			}
			// The task's end: told during the stopped turn on the pinned
			// CLIs when the Stop ends it too, else later.
			ended := ""
			for m, err := range r.S.ReceiveTurn(r.Ctx) {
				var re *claude.ResultError
				if err != nil && !errors.As(err, &re) {
					t.Fatalf("ReceiveTurn: %v", err)
				}
				if n, ok := m.(*claude.TaskNotificationMessage); ok && n.TaskID == task {
					ended = n.Status
				}
			}
			if spare {
				if ended != "" {
					t.Fatalf("the spared agent ended %q with the stopped turn", ended)
				}
				letAgentGo() // its request finishes: the agent can complete
			}
			if ended == "" {
				for m, err := range r.S.Receive(r.Ctx) {
					if err != nil {
						t.Fatalf("Receive: %v", err)
					}
					if n, ok := m.(*claude.TaskNotificationMessage); ok && n.TaskID == task {
						ended = n.Status
						break
					}
				}
			}
			if want := map[bool]string{false: "stopped", true: "completed"}[spare]; ended != want {
				t.Errorf("PerTaskStopAffordance %v: the agent ended %q, want %q", spare, ended, want)
			}
		})
	}
}
