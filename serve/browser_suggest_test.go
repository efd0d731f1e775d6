package serve_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
)

// testPromptSuggestion: a session started with prompt suggestions on
// (tether serve --prompt-suggestions) offers the CLI's guess at the next
// prompt above the prompt box once a turn has ended: not in the
// transcript, hidden while the box holds text, put in the box by a
// click, to send as it is; gone once a prompt is sent. A page that
// loads afterwards (a reload: the snapshot) offers it too.
//
// The real CLI guesses from the second turn on, and only when the last
// reply's usage reads as a warm prompt cache (claude's
// TestRealCLIPromptSuggestion): the replies here report cache reads.
func testPromptSuggestion(t *testing.T, b *browser) {
	const guess = "Now add a test for the parser"
	e := newUIEnvOpts(t, b, &uiEnvOptions{
		API: &claudetest.MessagesOptions{
			Replies: []*claudetest.Reply{claudetest.CachedTextReply("The parser is fixed."), claudetest.CachedTextReply("The docs are written."), claudetest.CachedTextReply("The test is added.")},
			RespondSide: func(r *claudetest.Request) *claudetest.Reply {
				if claudetest.IsPromptSuggestion(r) {
					return claudetest.CachedTextReply(guess)
				}
				return nil
			},
		},
		CLI: func(o *claude.Options) { o.PromptSuggestions = true },
	})
	tb := b.newTab(t, e.origin, "suggest")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("Fix the parser")
	tb.waitText("The parser is fixed.")
	tb.waitTurns(1)
	tb.prompt("Write the docs")
	tb.waitText("The docs are written.")
	tb.waitTurns(2)
	tb.waitJS("the suggestion offered", `!document.querySelector("#suggestion").hidden && document.querySelector("#suggestion-text").textContent === "`+guess+`"`)
	if strings.Contains(tb.text("#transcript"), guess) {
		t.Error("the suggestion is in the transcript; it is not part of the conversation")
	}
	tb.shots("offered")

	// Typing puts it away; an empty box brings it back.
	tb.run(chromedp.Click("#prompt", chromedp.ByID), chromedp.SendKeys("#prompt", "x", chromedp.ByID))
	tb.waitJS("the suggestion hidden while typing", `document.querySelector("#suggestion").hidden`)
	tb.eval(`(() => { const ta = document.querySelector("#prompt"); ta.value = ""; ta.dispatchEvent(new Event("input")); return true; })()`, new(bool))
	tb.waitJS("the suggestion back", `!document.querySelector("#suggestion").hidden`)

	// A reload offers it from the snapshot.
	tb.run(chromedp.Reload())
	tb.waitJS("a live connection", `document.querySelector("#conn").classList.contains("live")`)
	tb.waitJS("the suggestion offered after a reload", `!document.querySelector("#suggestion").hidden && document.querySelector("#suggestion-text").textContent === "`+guess+`"`)

	// A click puts it in the box; Enter sends it.
	tb.run(chromedp.Click("#suggestion", chromedp.ByID))
	tb.waitJS("the suggestion in the box", `document.querySelector("#prompt").value === "`+guess+`" && document.querySelector("#suggestion").hidden && document.activeElement === document.querySelector("#prompt")`)
	tb.shot("taken")
	tb.run(enterKey)
	tb.waitText("The test is added.")
	tb.waitTurns(3)
	reqs := e.api.MessagesRequests()
	if len(reqs) != 3 || !reqs[2].Params.Contains(guess) {
		t.Errorf("the third turn did not send the suggestion as its prompt (%d main-loop requests)", len(reqs))
	}
	if n := len(e.api.Unexpected()); n != 0 {
		t.Errorf("%d unscripted requests", n)
	}
}
