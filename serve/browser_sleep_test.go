package serve_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// testSleepWake: a session put to sleep shows asleep, in the list and
// in its header, with its transcript; typing the next prompt shows it
// waking, and the prompt is answered by the resumed conversation.
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
	if e.agentM != nil {
		// The agent hands it off once host has put it to sleep: from then
		// on no agent holds it.
		waitFor(t, "the session handed off asleep", func() bool { return len(e.agentM.Sessions()) == 0 })
	}
	tb.waitJS("the list's asleep badge", `document.querySelector("#sessions li .badge[data-state='asleep']")`)
	tb.waitJS("the transcript kept", `document.querySelector("#transcript").innerText.includes("noted: the colour is teal")`)
	if hs.Claude() != nil {
		t.Error("an asleep session still has its CLI")
	}
	// Asleep, it still shows what it changed and offers its slash
	// commands (over the cluster, from what its agent recorded as it put
	// it to sleep), and neither wakes it.
	tb.run(chromedp.Click("#changes-btn", chromedp.ByID))
	tb.waitJS("the changes panel, read", `document.querySelector("#changes-dlg").open && !document.querySelector("#changes-dlg").hasAttribute("aria-busy")`)
	if got, note := tb.text("#changes-dlg .err"), tb.text("#changes-dlg .changes-note"); got != "" || !strings.HasPrefix(note, "No files changed") {
		t.Errorf("the changes panel of a session asleep: %q, %q", got, note)
	}
	tb.key(kb.Escape)
	tb.waitJS("the panel closed", `!document.querySelector("#changes-dlg").open`)
	tb.run(chromedp.Click("#prompt", chromedp.ByID), chromedp.SendKeys("#prompt", "/", chromedp.ByID))
	tb.waitJS("the slash menu", `!document.querySelector("#slash-menu").hidden && document.querySelectorAll("#slash-menu [role=option]").length > 2`)
	tb.shots("asleep-slash")
	tb.key(kb.Escape)
	tb.eval(`document.querySelector("#prompt").value = ""`, nil)
	if got := tb.attr("#s-state", "state"); got != "asleep" {
		t.Errorf("after its changes and commands were read: %q", got)
	}
	tb.shots("asleep")
	// Typing wakes it (the wake command): its CLI starts while the
	// person types, and nothing is sent until Enter.
	tb.run(chromedp.Click("#prompt", chromedp.ByID), chromedp.SendKeys("#prompt", "which colour?", chromedp.ByID))
	tb.waitState("ready", "idle")
	if n := tb.count(".msg.user"); n != 1 {
		t.Errorf("%d prompts in the transcript once typing woke the session, want the first alone", n)
	}
	tb.shots("woken-typing")
	tb.key(kb.Enter)
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

// testWakeWaitsForRoom (over the cluster): an agent of one slot, taken by
// another session, cannot wake a session asleep. Typing into its prompt
// and sending say so in its transcript, with its place in line, and
// nothing is lost or refused meanwhile: the other session on the same
// page takes a prompt and answers it. Once the other session closes, the
// session wakes, the note goes and the prompt is answered, sent once.
func testWakeWaitsForRoom(t *testing.T, b *browser) {
	e := newUIEnvWith(t, b, 1,
		claudetest.TextReply("noted: the fruit is a plum"),
		claudetest.TextReply("the other session answers"),
		claudetest.TextReply("it was a plum"),
	)
	tb := b.newTab(t, e.origin, "wakeroom")
	tb.open(e)
	asleep := tb.newSession(e.cwd)
	tb.prompt("remember plum")
	tb.waitTurns(1)
	if err := e.agentM.Sessions()[0].Sleep(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	tb.waitState("asleep")
	waitFor(t, "the session handed off asleep", func() bool { return len(e.agentM.Sessions()) == 0 })
	other := tb.newSession(e.cwd) // the agent's one slot
	tb.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, asleep), chromedp.ByQuery))
	tb.waitJS("the session asleep open", fmt.Sprintf(`window.tether.current === %q`, asleep))
	tb.waitState("asleep")
	// Typing wakes it: the wake waits for room, and says so.
	tb.run(chromedp.Click("#prompt", chromedp.ByID), chromedp.SendKeys("#prompt", "which fruit?", chromedp.ByID))
	tb.waitJS("the note: waiting for room", `document.querySelector("#transcript .room-wait")?.innerText.includes("next in line")`)
	tb.key(kb.Enter)
	tb.waitJS("the prompt shown as waiting", `document.querySelector("#transcript .room-wait")?.innerText.includes("“which fruit?”")`)
	tb.shots("wake-waits-for-room")
	if got := tb.attr("#s-state", "state"); got != "asleep" {
		t.Errorf("while no agent has room: %q", got)
	}
	if n := tb.count(".refused"); n != 0 {
		t.Errorf("%d refusals while the prompt waits for room", n)
	}
	// The other session, on the same page, is not held up by it.
	tb.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, other), chromedp.ByQuery))
	tb.waitJS("the other session open", fmt.Sprintf(`window.tether.current === %q`, other))
	tb.prompt("hello")
	tb.waitText("the other session answers")
	tb.waitTurns(1)
	tb.eval(`window.confirm = () => true`, nil)
	tb.run(chromedp.Click("#close-btn", chromedp.ByID))
	// Its slot given back, the first session wakes and takes the prompt.
	tb.run(chromedp.Click(fmt.Sprintf(`#sessions li[data-id=%q]`, asleep), chromedp.ByQuery))
	tb.waitJS("the woken session open", fmt.Sprintf(`window.tether.current === %q`, asleep))
	tb.waitText("it was a plum")
	tb.waitTurns(2)
	tb.waitJS("the note gone", `!document.querySelector("#transcript .room-wait")`)
	if n := tb.count(".msg.user"); n != 2 {
		t.Errorf("%d prompts in the transcript, want both, once each", n)
	}
	if n := tb.count(".refused"); n != 0 {
		t.Errorf("%d refusals", n)
	}
	tb.shots("woken-after-room")
}
