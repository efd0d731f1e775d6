package serve_test

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tetherhq/tether/claude/claudetest"
)

// testListKeepsFocus: the sessions list is updated in place. A person
// who moved the focus to a line (Tab, or j/k) keeps it while the
// sessions' states and costs change under it: the line's element stays
// the same, and Enter still opens it.
func testListKeepsFocus(t *testing.T, b *browser) {
	e := newUIEnv(t, b, claudetest.TextReply("first answer"), claudetest.TextReply("second answer"))
	tb := b.newTab(t, e.origin, "list-focus")
	tb.open(e)
	first := tb.newSession(e.cwd)
	tb.prompt("hello first")
	tb.waitTurns(1)
	tb.run(chromedp.Click("#new-btn", chromedp.ByID), chromedp.WaitVisible("#new-dlg", chromedp.ByID), chromedp.Click("#new-submit", chromedp.ByID))
	tb.waitJS("the second session open", fmt.Sprintf(`window.tether.current && window.tether.current !== %q && window.tether.sessions.get(window.tether.current)?.state === "ready"`, first))
	var second string
	tb.eval(`window.tether.current`, &second)
	// Focus the first session's line and mark its element.
	tb.eval(fmt.Sprintf(`(() => {
		const li = document.querySelector('#sessions li[data-id=%q]');
		li.__mark = true;
		li.focus();
		window.__renders = 0;
		new MutationObserver(() => window.__renders++).observe(li, { childList: true, subtree: true });
		return document.activeElement === li;
	})()`, first), nil)
	// The second session runs a turn (sent from the page's console: the
	// focus stays on the list): its line changes, many times.
	tb.eval(fmt.Sprintf(`(async () => {
		const proto = await import("./proto.js");
		await proto.send(window.tether.conn, %q, "hello second", []);
		return true;
	})()`, second), nil)
	tb.waitJS("the second turn's end", fmt.Sprintf(`window.tether.sessions.get(%q)?.state === "idle" && document.querySelectorAll("#transcript > .turn-end").length >= 1 && document.querySelector("#transcript").innerText.includes("second answer")`, second))
	var st struct {
		Same    bool `json:"same"`
		Focused bool `json:"focused"`
		Renders int  `json:"renders"`
	}
	tb.eval(fmt.Sprintf(`(() => {
		const li = document.querySelector('#sessions li[data-id=%q]');
		return { same: !!li.__mark, focused: document.activeElement === li, renders: window.__renders };
	})()`, first), &st)
	if !st.Same || !st.Focused {
		t.Errorf("after the other session's turn the focused line is same=%v focused=%v; want the same element, still focused", st.Same, st.Focused)
	}
	t.Logf("the focused line was filled again %d times while the other session's turn ran", st.Renders)
	// Enter on the focused line opens it.
	tb.key(kb.Enter)
	tb.waitJS("the first session open", fmt.Sprintf(`window.tether.current === %q && document.querySelector("#transcript").innerText.includes("first answer")`, first))
}
