package serve_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tetherhq/tether/claude"
	"github.com/tetherhq/tether/claude/claudetest"
	"github.com/tetherhq/tether/internal/mcptest"
	"github.com/tetherhq/tether/internal/proc"
)

// testElicitation: an MCP server's tool asks the person for input (an
// elicitation, through the real CLI): the browser shows its form as a
// card (the server, its message, a field per property, the required one
// marked), the session waits for an answer, Submit sends the values to
// the server's tool, whose result the model gets; a second request
// declined with Decline reaches the tool as a decline; a page to visit
// shows as its link, and Done accepts. A reload finds the pending form
// again, and after the answers their records.
//
// The server is remote (mcptest: streamable HTTP, in this process): the CLI lets
// remote servers ask in form mode on every pinned CLI (claude's
// TestRealCLIMCPRemoteElicitation). The CLI connects to it in the
// background; the test waits for it to list the tools before the turn
// that calls one.
func testElicitation(t *testing.T, b *browser) {
	url, listed := mcptest.ServeHTTP(t, mcptest.Deploy())
	e := newUIEnvOpts(t, b, &uiEnvOptions{
		API: &claudetest.MessagesOptions{Replies: []*claudetest.Reply{
			claudetest.TextReply("Ready."),
			claudetest.ToolUseReply("toolu_pick", "mcp__deploy__pick", map[string]any{}),
			claudetest.ToolUseReply("toolu_pick2", "mcp__deploy__pick", map[string]any{}),
			claudetest.ToolUseReply("toolu_signin", "mcp__deploy__signin", map[string]any{}),
			claudetest.TextReply("Deployed to staging."),
		}},
		CLI: func(o *claude.Options) {
			o.MCPServers = map[string]claude.MCPServerConfig{"deploy": &claude.MCPHTTPServer{URL: url + "/"}}
			o.AllowedTools = []string{"mcp__deploy"}
		},
	})
	tb := b.newTab(t, e.origin, "elicit")
	tb.open(e)
	tb.newSession(e.cwd)
	tb.prompt("hello")
	tb.waitText("Ready.")
	tb.waitTurns(1)
	select {
	case <-listed:
	case <-tb.ctx.Done():
		t.Fatal("the CLI never listed the deploy server's tools")
	}

	tb.prompt("deploy it")
	const card = `.approval.elicitation:not(.answered)`
	tb.waitJS("the form", `document.querySelector("`+card+` select[name=env]")`)
	tb.waitState("awaiting_answer")
	// Someone who comes back to the page later (a reload, a
	// notification opened) finds the form again, from the snapshot.
	reopen := func() {
		tb.run(chromedp.Reload())
		tb.waitJS("a live connection", `document.querySelector("#conn").classList.contains("live")`)
		tb.waitJS("the session reopened", `window.tether.view && window.tether.view.lastSeq > 0`)
	}
	reopen()
	tb.waitJS("the form after a reload", `document.querySelector("`+card+` select[name=env]")`)
	var view struct {
		Title, Message, Env, Note string
		Picked                    string // the choice shown: the default's
		Options                   []string
		Required                  bool
		NoteMax                   int
	}
	tb.eval(`(() => { const c = document.querySelector("`+card+`");
		return {title: c.querySelector("h3").textContent, message: c.querySelector(".message").textContent,
			env: c.querySelector("label.field").querySelector(".fname").textContent,
			note: c.querySelectorAll("label.field")[1].querySelector(".fname").textContent,
			options: [...c.querySelectorAll("select[name=env] option")].map((o) => o.textContent),
			required: c.querySelector("select[name=env]").required,
			picked: c.querySelector("select[name=env]").selectedOptions[0].textContent,
			noteMax: c.querySelector("input[name=note]").maxLength}; })()`, &view)
	if view.Title != "deploy asks for input" || view.Message != mcptest.DeployMessage || view.Env != "Environment *" || view.Note != "note" ||
		strings.Join(view.Options, ",") != "Choose…,staging,production" || !view.Required || view.NoteMax != 200 || view.Picked != "staging" {
		t.Errorf("the card shows %+v", view)
	}
	tb.shots("form")
	// A date and time has no input of the browser's that gives RFC 3339:
	// the field shows the shape, and a value not of it is refused by the
	// host, whose words for what fits come back onto the card.
	var placeholder string
	tb.eval(`document.querySelector("`+card+` input[name=when]").placeholder`, &placeholder)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(placeholder) {
		t.Errorf("when's placeholder %q", placeholder)
	}
	tb.run(
		chromedp.SetValue(card+` select[name=env]`, "0", chromedp.ByQuery),
		chromedp.SendKeys(card+` input[name=note]`, "smoke test", chromedp.ByQuery),
		chromedp.SendKeys(card+` input[name=when]`, "tomorrow", chromedp.ByQuery),
		chromedp.Click(card+` button[type=submit]`, chromedp.ByQuery),
	)
	const refusal = "When must be a date and time, as 2026-12-06T16:30:00Z"
	tb.waitJS("the refusal on the card", `document.querySelector("`+card+` p.err").textContent === "`+refusal+`" && !document.querySelector("`+card+` button[type=submit]").disabled`)
	tb.shots("refused")
	// Select what was typed and type over it, as a person would.
	tb.eval(`(() => { const i = document.querySelector("`+card+` input[name=when]"); i.select(); return i.selectionEnd; })()`, nil)
	tb.run(chromedp.SendKeys(card+` input[name=when]`, "2026-12-07T09:00:00Z", chromedp.ByQuery))
	tb.shot("filled")
	var first string
	tb.eval(`document.querySelector("`+card+`").dataset.id`, &first)
	tb.run(chromedp.Click(card+` button[type=submit]`, chromedp.ByQuery))
	tb.waitJS("the second form", `[...document.querySelectorAll("`+card+`")].some((c) => c.dataset.id !== "`+first+`")`)
	tb.run(chromedp.Click(card+` button.deny`, chromedp.ByQuery))
	// A page to visit (from CLI 2.1.336; before, the CLI refuses the
	// server's request itself): the card links to it, opening a new tab
	// that cannot reach back, and Done says the visit is over.
	byURL := proc.CompareVersions(claudetest.CLIVersion(), "2.1.336") >= 0
	want := []string{"Answered · deploy: " + mcptest.DeployMessage, "Declined · deploy: " + mcptest.DeployMessage}
	if byURL {
		want = append(want, "Answered · deploy: "+mcptest.SignInMessage)
		tb.waitJS("the page to visit", `document.querySelector("`+card+` p.visit a")`)
		var link struct{ Href, Target, Rel, Text, Message, Button string }
		tb.eval(`(() => { const c = document.querySelector("`+card+`"), a = c.querySelector("p.visit a");
			return {href: a.href, target: a.target, rel: a.rel, text: c.querySelector("p.visit").textContent,
				message: c.querySelector(".message").textContent, button: c.querySelector("button[type=submit]").textContent}; })()`, &link)
		if link.Href != mcptest.SignInURL || link.Target != "_blank" || !strings.Contains(link.Rel, "noopener") ||
			link.Text != "Open "+mcptest.SignInURL+", then press Done." || link.Message != mcptest.SignInMessage || link.Button != "Done" {
			t.Errorf("the page card shows %+v", link)
		}
		tb.shots("visit")
		tb.run(chromedp.Click(card+` button[type=submit]`, chromedp.ByQuery))
	}
	tb.waitText("Deployed to staging.")
	tb.waitTurns(2)
	records := func(when string) {
		t.Helper()
		tb.waitJS("the answers' records"+when, fmt.Sprintf(`document.querySelectorAll(".approval-record").length === %d`, len(want)))
		var got []string
		tb.eval(`[...document.querySelectorAll(".approval-record")].map((r) => r.textContent)`, &got)
		if !slices.Equal(got, want) {
			t.Errorf("the transcript's records of the answers%s: %q, want %q", when, got, want)
		}
	}
	records("")
	tb.shots("answered")
	reopen()
	tb.waitTurns(2)
	records(" after a reload")
	if n := tb.count(card); n != 0 {
		t.Errorf("after a reload, %d forms wait for an answer", n)
	}

	// The last request carries the conversation's every tool result.
	reqs := e.api.MessagesRequests()
	var results []string
	for _, id := range []string{"toolu_pick", "toolu_pick2"} {
		if tr := reqs[len(reqs)-1].Params.ToolResult(id); tr != nil && len(tr.Content) > 0 {
			results = append(results, id+": "+tr.Content[0].Text)
		}
	}
	wantResults := "toolu_pick: accept map[env:staging note:smoke test when:2026-12-07T09:00:00Z]|toolu_pick2: decline map[]"
	if got := strings.Join(results, "|"); got != wantResults {
		t.Errorf("the tool's results = %q, want %q", got, wantResults)
	}
	signin := reqs[len(reqs)-1].Params.ToolResult("toolu_signin")
	if signin == nil || len(signin.Content) == 0 || byURL != (signin.Content[0].Text == "signin accept") {
		t.Errorf("signin's result = %+v (CLI asks for pages: %v)", signin, byURL)
	}
}
