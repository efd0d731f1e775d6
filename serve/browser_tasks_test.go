package serve_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/proc"
)

// testBackgroundTask: an agent the model starts in the background is
// listed under the transcript while the session is idle, with what it
// is and its own Stop, the card of the call that started it says "in
// the background", not "done", and the session's line in the sessions
// list says "idle" and "1 in the background"; a reload shows all three
// again (the snapshot, the backend's list); Close, asking first, names
// it as work that would end with the CLI; its Stop ends it (the CLI
// reports it stopped), the list and the line's count go, and the card
// says "stopped", after a reload too. The agent's API request is held
// open until the stop, so it is running throughout.
func testBackgroundTask(t *testing.T, b *browser) {
	e := newUIEnvOpts(t, b, &uiEnvOptions{API: &claudetest.MessagesOptions{
		Respond: claudetest.BackgroundAgentScript("toolu_bg", "Long review", "Review everything",
			claudetest.TextReply("Started the review in the background."),
			claudetest.TextReply("The review was stopped.")), // newer CLIs report the stop in a turn of their own
	}})
	tb := b.newTab(t, e.origin, "tasks")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("Review everything, in the background")
	tb.waitText("Started the review in the background.")
	tb.waitTurns(1)
	const listed = `(() => { const li = document.querySelector("#tasks li"); return !document.querySelector("#tasks").hidden && li !== null &&
		li.querySelector(".ttext").textContent === "Long review" && li.querySelector(".tkind").textContent === "agent" &&
		li.querySelector("button").textContent === "Stop" &&
		document.querySelector('#transcript details.tool[data-status="background"] .tool-status')?.textContent === "in the background" &&
		document.querySelector(".sessions li.current .bg")?.textContent === "1 in the background" &&
		document.querySelector('.sessions li.current .badge[data-state="idle"]') !== null; })()`
	tb.waitJS("the background agent listed", listed)
	tb.waitState("idle")
	tb.shots("running")

	// A reload lists it from the snapshot.
	tb.run(chromedp.Reload())
	tb.waitJS("a live connection", `document.querySelector("#conn").classList.contains("live")`)
	tb.waitJS("the background agent listed after a reload", listed)

	// Close asks first, naming the work that would end with the CLI;
	// declined, nothing happens.
	tb.eval(`window.confirm = (q) => { window.asked = q; return false; }`, nil)
	tb.run(chromedp.Click("#close-btn", chromedp.ByID))
	var asked string
	tb.eval(`window.asked || ""`, &asked)
	if want := "Close this session? Its CLI stops, and with it “Long review”, which runs in the background; you can resume it from disk later."; asked != want {
		t.Errorf("Close asked %q, want %q", asked, want)
	}
	tb.waitJS("the agent still listed", listed)

	tb.run(chromedp.Click("#tasks li button", chromedp.ByQuery))
	const stopped = `document.querySelector("#tasks").hidden && document.querySelector("#tasks li") === null &&
		document.querySelector('#transcript details.tool[data-status="background"]') === null &&
		document.querySelector('#transcript details.tool[data-status="stopped"] .tool-status')?.textContent === "stopped" &&
		document.querySelector(".sessions li.current") !== null && document.querySelector(".sessions li.current .bg") === null`
	tb.waitJS("the list gone once the agent stopped, and its card saying so", stopped)
	tb.shot("stopped")
	tb.run(chromedp.Reload())
	tb.waitJS("a live connection", `document.querySelector("#conn").classList.contains("live")`)
	tb.waitJS("the card saying the agent stopped after a reload", stopped)
	m := e.m
	if m == nil {
		m = e.agentM
	}
	waitFor(t, "the CLI reporting the agent stopped", func() bool {
		for _, s := range m.Sessions() {
			for _, l := range s.Snapshot().Transcript {
				if strings.Contains(string(l), `"task_notification"`) && strings.Contains(string(l), `"stopped"`) {
					return true
				}
			}
		}
		return false
	})
	for _, s := range m.Sessions() {
		if ts := s.Tasks(); len(ts) != 0 {
			t.Errorf("tasks after the stop: %+v", ts)
		}
	}
}

// testBackgroundTaskTurnStop: the Stop of a later turn stops that turn
// only, and the agent the model started in the background is still
// listed, with its own Stop, which ends it (CLI 2.1.330 and later, told
// by the host that each task has its stop; an older CLI stops the agent
// with the turn, as it always did).
func testBackgroundTaskTurnStop(t *testing.T, b *browser) {
	e := newUIEnvOpts(t, b, &uiEnvOptions{API: &claudetest.MessagesOptions{
		Respond: claudetest.BackgroundAgentScript("toolu_bg", "Long review", "Review everything",
			claudetest.TextReply("Started the review in the background."),
			&claudetest.Reply{Content: []claudetest.ContentBlock{claudetest.TextBlock("I will write for a very long time, and never stop by myself")},
				ChunkSize: 8, StallAfterEvents: 5},
			claudetest.TextReply("noted")),
	}})
	tb := b.newTab(t, e.origin, "tasks-turn-stop")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("Review everything, in the background")
	tb.waitText("Started the review in the background.")
	const listed = `document.querySelector("#tasks li .ttext")?.textContent === "Long review"`
	tb.waitJS("the background agent listed", listed)
	tb.prompt("and write meanwhile")
	tb.waitState("streaming")
	tb.run(chromedp.Click("#stop-btn", chromedp.ByID))
	tb.waitState("idle")
	tb.waitTurns(2) // the stopped turn's end: a task it ended was told before it
	if proc.CompareVersions(claudetest.CLIVersion(), "2.1.330") < 0 {
		tb.waitJS("the agent stopped with the turn (an older CLI)", `document.querySelector("#tasks li") === null`)
		return
	}
	var still bool
	tb.eval(listed, &still)
	if !still {
		t.Fatal("the turn's Stop ended the background agent")
	}
	tb.shot("turn-stopped")
	tb.run(chromedp.Click("#tasks li button", chromedp.ByQuery))
	tb.waitJS("the agent stopped by its own Stop", `document.querySelector("#tasks li") === null`)
}
