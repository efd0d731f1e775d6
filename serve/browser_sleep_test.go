package serve_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/tetherhq/tether/claude/claudetest"
)

// testSleepWake: a session put to sleep shows asleep, in the list and
// in its header, with its transcript; the next prompt shows it waking
// and is answered by the resumed conversation, the prompt not lost.
// Over the cluster the agent hands the session off asleep (no agent
// runs it) and the prompt wakes it through the bus.
func testSleepWake(t *testing.T, b *browser) {
	e := newUIEnv(t, b,
		claudetest.TextReply("noted: the colour is teal"),
		claudetest.TextReply("it was teal"),
	)
	tb := b.newTab(t, e.origin, "sleep")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("remember teal")
	tb.waitTurns(1)
	// Every state the header's badge shows from here on, in order.
	tb.eval(`(() => {
		window.__states = [];
		const badge = document.querySelector("#s-state");
		new MutationObserver(() => {
			const s = badge.dataset.state;
			if (window.__states.at(-1) !== s) window.__states.push(s);
		}).observe(badge, { attributes: true, attributeFilter: ["data-state"] });
		return true;
	})()`, nil)
	m := cmp.Or(e.m, e.agentM) // over the cluster, the agent's
	hs := m.Sessions()[0]
	// What --sleep-after does after its quiet time, without waiting it.
	if err := hs.Sleep(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	tb.waitState("asleep")
	tb.waitJS("the list's asleep badge", `document.querySelector("#sessions li .badge[data-state='asleep']")`)
	tb.waitJS("the transcript kept", `document.querySelector("#transcript").innerText.includes("noted: the colour is teal")`)
	if hs.Claude() != nil {
		t.Error("an asleep session still has its CLI")
	}
	tb.shots("asleep")
	tb.prompt("which colour?")
	tb.waitText("it was teal")
	tb.waitTurns(2)
	tb.waitState("ready", "idle")
	var states []string
	tb.eval(`window.__states`, &states)
	if !slices.Contains(states, "waking") {
		t.Errorf("the badge never showed waking: %q", states)
	}
	if n := tb.count(".msg.user"); n != 2 {
		t.Errorf("%d prompts in the transcript, want both", n)
	}
	tb.shots("woken")
}
